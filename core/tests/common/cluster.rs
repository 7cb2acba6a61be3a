//! Redis Cluster for the tests: three cluster-enabled servers joined with
//! `redis-cli --cluster create`, namespace `{cogworker}` (one slot).

use super::{TestConfig, TestRedis};
use cogworker::Config;
use redis::AsyncCommands;

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
        let ports: Vec<u16> = nodes.iter().map(|node| node.port).collect();
        cogworker::redis_server::join_cluster(&ports).expect("the cluster forms");
        Cluster {
            nodes,
            scheme: scheme.to_string(),
            client_ports: Vec::new(),
        }
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

    /// Sharded by queue: one queue name per master, `names[i]` on node `i`.
    pub fn queue_per_master(&self) -> Vec<String> {
        let ports: Vec<u16> = self.nodes.iter().map(|node| node.port).collect();
        cogworker::redis_server::queue_per_node(&ports, NS).expect("a queue name per master")
    }
}
