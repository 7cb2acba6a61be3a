//! A private `redis-server` for tests and demos: on a free loopback port, in
//! a temporary directory of its own, stopped by pid (SIGKILL) when dropped.
//! The one implementation: the core's tests and examples use it, and so do
//! Python's `cogworker.testing.RedisServer` and Ruby's
//! `Cogworker::Testing::RedisServer`.

use crate::error::Result;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A `redis-server` process of the caller's own. Shareable between
/// threads: `spawn` and `kill` take `&self`.
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Mutex<Option<Child>>,
    extra: Vec<String>,
}

fn failed(what: String) -> crate::error::Error {
    crate::error::Error::Redis(redis::RedisError::from(std::io::Error::other(what)))
}

/// A pseudo-random number from the clock's nanoseconds and the pid.
fn rand_u16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    ((nanos ^ (std::process::id() << 7)).wrapping_mul(2_654_435_761) >> 16) as u16
}

/// A port in 20000..32000 (below Linux's ephemeral range, where free ports
/// are handed out) free at `port + offset` for every offset given.
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

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| failed(format!("no free port: {e}")))?;
    Ok(listener.local_addr().map_err(|e| failed(e.to_string()))?.port())
}

impl RedisServer {
    /// Starts a server with extra `redis-server` arguments (e.g.
    /// `["--appendonly", "yes"]`) on a free port.
    pub fn start(extra: &[&str]) -> Result<Self> {
        Self::start_on(free_port()?, extra)
    }

    /// Starts a server on `port`.
    pub fn start_on(port: u16, extra: &[&str]) -> Result<Self> {
        let server = Self::unstarted_on(port, extra)?;
        server.spawn()?;
        Ok(server)
    }

    /// Starts a server on `port`, or a free one.
    pub fn start_at(port: Option<u16>, extra: &[&str]) -> Result<Self> {
        match port {
            Some(port) => Self::start_on(port, extra),
            None => Self::start(extra),
        }
    }

    /// A Redis Cluster node: its port must be at most 55535 (the cluster bus
    /// listens on port + 10000), and both must be free.
    pub fn cluster_node() -> Result<Self> {
        let extra = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];
        Self::start_on(port_below_ephemeral(&[0, 10_000]), &extra)
    }

    /// A server not started yet (for "Redis down at boot"), on a port below
    /// the kernel's ephemeral range, so that no other server is handed the
    /// same port while this one is not listening.
    pub fn unstarted() -> Result<Self> {
        Self::unstarted_on(port_below_ephemeral(&[0]), &[])
    }

    fn unstarted_on(port: u16, extra: &[&str]) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("cogworker-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
        Ok(RedisServer {
            port,
            dir,
            child: Mutex::new(None),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// Starts the process (again, after [`RedisServer::kill`]: same port,
    /// same data directory) and waits until it answers.
    pub fn spawn(&self) -> Result<()> {
        let mut child = self.child();
        if child.is_some() {
            return Ok(());
        }
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
        let spawned = cmd
            .spawn()
            .map_err(|e| failed(format!("cannot run redis-server (is it installed?): {e}")))?;
        *child = Some(spawned);
        self.await_own_server(&mut child)
    }

    fn child(&self) -> MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the server answers, and checks that the one answering on
    /// our port is our child: a server that could not bind exits, and
    /// another test's server must never be mistaken for it.
    fn await_own_server(&self, child: &mut Option<Child>) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(self.url())?;
        let pid = child.as_ref().map(|c| c.id().to_string()).unwrap_or_default();
        loop {
            if let Some(status) = child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                *child = None;
                return Err(failed(format!(
                    "redis-server on port {} exited at start ({status}): port taken?",
                    self.port
                )));
            }
            if let Ok(mut conn) = client.get_connection() {
                match redis::cmd("INFO").arg("server").query::<String>(&mut conn) {
                    Ok(info) => {
                        let serving = info.lines().find_map(|l| l.strip_prefix("process_id:")).map(str::trim);
                        if serving != Some(pid.as_str()) {
                            return Err(failed(format!("port {} is another server's", self.port)));
                        }
                        return Ok(());
                    }
                    // Up, and asking for the password it was started with.
                    Err(e) if e.kind() == redis::ErrorKind::AuthenticationFailed || e.code() == Some("NOAUTH") => {
                        return Ok(())
                    }
                    Err(_) => {}
                }
            }
            if Instant::now() > deadline {
                return Err(failed(format!("redis-server did not start on port {}", self.port)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with SIGKILL (no save) and waits for it to exit.
    pub fn kill(&self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `kill`, then `spawn`: the same port and data directory.
    pub fn restart(&self) -> Result<()> {
        self.kill();
        self.spawn()
    }

    /// Is the process running (started and not killed)?
    pub fn is_running(&self) -> bool {
        self.child().is_some()
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its data directory (AOF and RDB files land here).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pid of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Joins started cluster nodes ([`RedisServer::cluster_node`], listening on
/// `ports`) into one Redis Cluster with `redis-cli --cluster create`, no
/// replicas, and waits up to 30 s until every node reports
/// `cluster_state:ok`. `redis-cli` is given 60 s: it waits for the nodes
/// to meet without end, so a node that died meanwhile made a test (and the
/// suite) hang instead of fail. Fewer than three nodes, which `redis-cli`
/// refuses, are joined by hand: the slots split evenly, then `MEET`.
pub fn join_cluster(ports: &[u16]) -> Result<()> {
    if ports.len() < 3 {
        join_small_cluster(ports)?;
        return wait_cluster_ok(ports);
    }
    let mut create = Command::new("redis-cli");
    create.args(["--cluster", "create"]);
    create.args(ports.iter().map(|port| format!("127.0.0.1:{port}")));
    let mut running = create
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot run redis-cli: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = running.try_wait().map_err(|e| failed(format!("redis-cli: {e}")))? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = running.kill();
            let _ = running.wait();
            return Err(failed(format!(
                "redis-cli --cluster create did not finish within 60 s (a node of {ports:?} gone?)"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        return Err(failed(format!("redis-cli --cluster create failed ({status})")));
    }
    wait_cluster_ok(ports)
}

/// One or two masters (see [`join_cluster`]): each node takes its even
/// share of the 16,384 slots, and the others meet the first.
fn join_small_cluster(ports: &[u16]) -> Result<()> {
    const SLOTS: usize = 16384;
    let share = SLOTS.div_ceil(ports.len().max(1));
    for (i, port) in ports.iter().enumerate() {
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/0"))?.get_connection()?;
        let first = i * share;
        let last = ((i + 1) * share).min(SLOTS) - 1;
        redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(first)
            .arg(last)
            .query::<()>(&mut conn)?;
        if i > 0 {
            redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(ports[0])
                .query::<()>(&mut conn)?;
        }
    }
    Ok(())
}

/// Waits up to 30 s until every node on `ports` reports `cluster_state:ok`.
fn wait_cluster_ok(ports: &[u16]) -> Result<()> {
    let node_ok = |port: &u16| {
        redis::Client::open(format!("redis://127.0.0.1:{port}/0"))
            .and_then(|client| client.get_connection())
            .and_then(|mut conn| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut conn))
            .is_ok_and(|info| info.contains("cluster_state:ok"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ports.iter().all(node_ok) {
        if Instant::now() > deadline {
            return Err(failed("the cluster did not become ok within 30 s".to_string()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// With `shard_by_queue`: one queue name per node of a cluster (`q0`, `q1`,
/// ...), `names[i]` the first whose keys live on the node listening on
/// `ports[i]` (asked for the queue's key, the other nodes answer MOVED).
pub fn queue_per_node(ports: &[u16], namespace: &str) -> Result<Vec<String>> {
    queues_per_node(ports, namespace, 1)
}

/// [`queue_per_node`], `per` queues per node: the names of node `i` are
/// `names[i * per .. (i + 1) * per]`.
pub fn queues_per_node(ports: &[u16], namespace: &str, per: usize) -> Result<Vec<String>> {
    let keys = crate::keys::Keys::sharded_by_queue(namespace);
    let mut conns = Vec::new();
    for port in ports {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/0"))?;
        conns.push(client.get_connection()?);
    }
    let mut names: Vec<Vec<String>> = vec![Vec::new(); ports.len()];
    for i in 0..1000 {
        let name = format!("q{i}");
        for (n, conn) in conns.iter_mut().enumerate() {
            let owns = redis::cmd("LLEN").arg(keys.queue(&name)).query::<i64>(conn).is_ok();
            if owns && names[n].len() < per {
                names[n].push(name.clone());
            }
        }
        if names.iter().all(|n| n.len() == per) {
            return Ok(names.concat());
        }
    }
    Err(failed("no queue name among q0..q999 for some node".to_string()))
}

/// Plays a host whose clock is `seconds` off (0 sets it right): the clock
/// cogworker reads in this process, for tests that show a skewed host
/// still makes due times on the fleet's clock.
pub fn skew_host_clock(seconds: f64) {
    crate::job::HOST_CLOCK_SKEW.store(seconds.to_bits(), std::sync::atomic::Ordering::Relaxed);
}
