//! A `redis-server --sentinel` process for the Sentinel tests.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub const SERVICE: &str = "mymaster";

/// A `redis-server --sentinel` process, stopped by pid on drop.
pub struct Sentinel {
    pub port: u16,
    child: Child,
    dir: PathBuf,
}

impl Sentinel {
    /// A sentinel on a plain port monitoring the master at `master_port`.
    pub fn start(master_port: u16) -> Sentinel {
        let port = super::tls::free_port();
        Self::start_with(
            port,
            &format!("port {port}\nsentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n"),
        )
    }

    /// A sentinel at `port` with `conf` (its `port`/`tls-port` and `sentinel
    /// monitor` lines, and anything else) plus the timings every test uses.
    pub fn start_with(port: u16, conf: &str) -> Sentinel {
        let dir = std::env::temp_dir().join(format!("cogworker-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sentinel.conf");
        std::fs::write(
            &file,
            format!(
                "{conf}bind 127.0.0.1\ndir {}\n\
                 sentinel down-after-milliseconds {SERVICE} 2000\n\
                 sentinel failover-timeout {SERVICE} 10000\n\
                 sentinel parallel-syncs {SERVICE} 1\n",
                dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&file)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Sentinel { port, child, dir }
    }

    pub async fn ask(&self, args: &[&str]) -> redis::RedisResult<redis::Value> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("SENTINEL").arg(args).query_async(&mut conn).await
    }

    pub async fn master_port(&self) -> Option<u16> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let (_host, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(SERVICE)
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(port)
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
