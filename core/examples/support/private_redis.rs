//! A private `redis-server` on a free loopback port, in a temporary
//! directory, stopped by pid. Shared by the examples and the test suites
//! (which include this file by path).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct PrivateRedis {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
}

/// A pseudo-random number without a dependency: the clock's nanoseconds
/// mixed with the pid.
fn rand_u16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    ((nanos ^ (std::process::id() << 7)).wrapping_mul(2_654_435_761) >> 16) as u16
}

/// A port in 20000..32000 (below Linux's ephemeral range, where
/// `free_port` draws) free at `port + offset` for every offset given.
fn port_below_ephemeral(offsets: &[u16]) -> u16 {
    loop {
        let port = 20_000 + rand_u16() % 12_000;
        if offsets
            .iter()
            .all(|o| TcpListener::bind(("127.0.0.1", port + o)).is_ok())
        {
            return port;
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl PrivateRedis {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A Redis Cluster node: its port must be at most 55535 (the cluster bus
    /// listens on port + 10000), and both must be free.
    pub fn start_cluster_node() -> Self {
        let extra = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];
        let mut redis = Self::on_port(port_below_ephemeral(&[0, 10_000]), &extra);
        redis.spawn();
        redis
    }

    /// Extra `redis-server` arguments, e.g. `["--appendonly", "yes"]`.
    pub fn start_with(extra: &[&str]) -> Self {
        let mut redis = Self::on_port(free_port(), extra);
        redis.spawn();
        redis
    }

    /// A port nothing listens on yet (for "Redis down at boot"). Taken below
    /// the kernel's ephemeral range, so that no other test's server is handed
    /// the same port while this one is not yet listening.
    pub fn unstarted() -> Self {
        Self::on_port(port_below_ephemeral(&[0]), &[])
    }

    /// A server for `port` and its data directory, not started.
    fn on_port(port: u16, extra: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("cogworker-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        PrivateRedis {
            port,
            dir,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "already running");
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--save")
            .arg("")
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if !self.extra.iter().any(|a| a == "--appendonly") {
            cmd.arg("--appendonly").arg("no");
        }
        self.child = Some(cmd.spawn().expect("redis-server must be installed"));
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(self.url()).unwrap();
        loop {
            // A server that could not bind has exited: never mistake another
            // test's server on the same port for this one.
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!(
                    "redis-server on port {} exited at start ({status}): port taken?",
                    self.port
                );
            }
            if let Ok(mut c) = client.get_connection() {
                match redis::cmd("INFO").arg("server").query::<String>(&mut c) {
                    Ok(info) => {
                        let pid = self.child.as_ref().map(|c| c.id().to_string()).unwrap_or_default();
                        let serving = info.lines().find_map(|l| l.strip_prefix("process_id:")).map(str::trim);
                        assert_eq!(serving, Some(pid.as_str()), "port {} is another server's", self.port);
                        return;
                    }
                    // Up, and asking for the password it was started with.
                    Err(e) if e.to_string().contains("NOAUTH") => return,
                    Err(_) => {}
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start on {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with SIGKILL (no save) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn sync_conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }

    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
