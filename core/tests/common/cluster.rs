//! Redis Cluster for the tests: three cluster-enabled servers joined with
//! `redis-cli --cluster create`, namespace `{cogworker}` (one slot).

use super::{TestConfig, TestRedis};
use cogworker::Config;
use redis::AsyncCommands;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const NS: &str = "{cogworker}";

/// Three cluster-enabled servers joined with `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<TestRedis>,
    scheme: String,
    /// The ports clients dial when not the plain ones (TLS).
    pub client_ports: Vec<u16>,
}

impl Cluster {
    pub fn start() -> Cluster {
        Self::join(
            (0..3).map(|_| TestRedis::start_cluster_node()).collect(),
            "redis+cluster",
        )
    }

    /// Joins `nodes` (started cluster-enabled) into a cluster whose URL has
    /// `scheme`; their plain ports serve the setup.
    pub fn join(nodes: Vec<TestRedis>, scheme: &str) -> Cluster {
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let status = create
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = Cluster {
            nodes,
            scheme: scheme.to_string(),
            client_ports: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cluster.ready() {
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    fn ready(&self) -> bool {
        self.nodes.iter().all(|node| {
            let mut conn = node.sync_conn();
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut conn).unwrap_or_default();
            info.contains("cluster_state:ok")
        })
    }

    pub fn url(&self) -> String {
        let ports: Vec<u16> = if self.client_ports.is_empty() {
            self.nodes.iter().map(|n| n.port).collect()
        } else {
            self.client_ports.clone()
        };
        let hosts: Vec<String> = ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        format!("{}://{}", self.scheme, hosts.join(","))
    }

    pub fn config(&self) -> Config {
        let mut config = self.nodes[0].config();
        config.set_redis_url(&self.url()).unwrap();
        config.set_namespace(NS).unwrap();
        config
    }

    /// A plain connection to the node that owns the namespace's slot.
    pub async fn owner(&self) -> redis::aio::MultiplexedConnection {
        for node in &self.nodes {
            let mut conn = node.conn().await;
            let owns: redis::RedisResult<i64> = conn.llen(format!("{NS}:queue:probe")).await;
            if owns.is_ok() {
                return conn;
            }
        }
        panic!("no node owns the namespace slot");
    }

    /// Sharded by queue: one queue name per master, `names[i]` on node `i`
    /// (found by asking each node for the queue's key: the others answer
    /// MOVED).
    pub async fn queue_per_master(&self) -> Vec<String> {
        let mut names = vec![String::new(); self.nodes.len()];
        for i in 0.. {
            let name = format!("q{i}");
            for (n, node) in self.nodes.iter().enumerate() {
                let owns: redis::RedisResult<i64> = node.conn().await.llen(format!("{{cogworker:{name}}}:queue")).await;
                if owns.is_ok() && names[n].is_empty() {
                    names[n] = name.clone();
                }
            }
            if names.iter().all(|n| !n.is_empty()) {
                return names;
            }
            assert!(i < 1000, "no queue name for some master");
        }
        unreachable!()
    }
}
