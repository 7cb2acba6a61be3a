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
    /// Replicas added with `add_replica`, and the master each follows.
    pub replicas: Vec<TestRedis>,
    replica_masters: Vec<usize>,
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
            replicas: Vec::new(),
            replica_masters: Vec::new(),
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

    /// Which of `nodes` owns the namespace's slot.
    pub async fn owner_index(&self) -> usize {
        for (index, node) in self.nodes.iter().enumerate() {
            let owns: redis::RedisResult<i64> = node.conn().await.llen(format!("{NS}:queue:probe")).await;
            if owns.is_ok() {
                return index;
            }
        }
        panic!("no node owns the namespace slot");
    }

    /// A new cluster node made the replica of `nodes[master]`, once it is
    /// in sync (`replica_of(master)` then returns it).
    pub async fn add_replica(&mut self, master: usize) {
        let replica = TestRedis::start_cluster_node();
        let replica_port = replica.port;
        let mut conn = replica.conn().await;
        let master_port = self.nodes[master].port;
        let mut master_conn = self.nodes[master].conn().await;
        let master_id: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query_async(&mut master_conn)
            .await
            .unwrap();
        let _: () = redis::cmd("CLUSTER")
            .arg("MEET")
            .arg("127.0.0.1")
            .arg(master_port)
            .query_async(&mut conn)
            .await
            .unwrap();
        super::wait_until(
            "the new node knows the master",
            std::time::Duration::from_secs(20),
            || {
                let (mut conn, master_id) = (conn.clone(), master_id.clone());
                async move {
                    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(&mut conn).await.unwrap();
                    nodes.contains(&master_id)
                        && redis::cmd("CLUSTER")
                            .arg("REPLICATE")
                            .arg(&master_id)
                            .query_async::<()>(&mut conn)
                            .await
                            .is_ok()
                }
            },
        )
        .await;
        super::wait_replica_online(&master_conn, replica_port).await;
        self.replicas.push(replica);
        self.replica_masters.push(master);
    }

    /// The replica `add_replica` gave `nodes[master]`.
    pub fn replica_of(&self, master: usize) -> &TestRedis {
        let at = self
            .replica_masters
            .iter()
            .position(|&m| m == master)
            .expect("a replica of that master");
        &self.replicas[at]
    }

    /// A plain connection to the node that owns the namespace's slot.
    pub async fn owner(&self) -> redis::aio::MultiplexedConnection {
        self.nodes[self.owner_index().await].conn().await
    }

    /// Sharded by queue: one queue name per master, `names[i]` on node `i`.
    pub fn queue_per_master(&self) -> Vec<String> {
        let ports: Vec<u16> = self.nodes.iter().map(|node| node.port).collect();
        cogworker::redis_server::queue_per_node(&ports, NS).expect("a queue name per master")
    }
}
