//! Redis connections. Ordinary traffic shares one auto-reconnecting
//! multiplexed connection. A blocking fetch gets a dedicated connection of
//! its own: on a shared one it would stall every other caller, and its
//! response timeout must outlast the block (a `BRPOP` abandoned client-side
//! by the default 500 ms timeout lost a job).
//!
//! With a `redis+sentinel://` URL the endpoint is not fixed: a watcher asks
//! the sentinels for the master every second and, when it changes (a
//! failover), swaps in a connection to the new one. Commands that hit the
//! old master meanwhile fail (refused, or `READONLY` once it is a replica)
//! and are retried by their callers like any other Redis error.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::redis_url::{ClusterUrl, SentinelUrl};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::AsyncConnectionConfig;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

mod cluster;
mod conn;
mod on_task;
mod on_thread;
mod sentinel;
mod spin;

pub use conn::Conn;
pub(crate) use on_thread::ThreadConn;

/// Response timeout for ordinary commands: long enough for a large batch
/// script under load, short enough that a hung server is noticed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Slack beyond a blocking command's own timeout before the client gives up.
const BLOCKING_SLACK: Duration = Duration::from_secs(10);

/// How often the sentinels are asked who the master is.
const SENTINEL_POLL: Duration = Duration::from_millis(250);
/// Until a master is known (sentinel URLs), connections go here and fail
/// at once: nothing can be written to a node that is not the master.
const NO_MASTER_YET: &str = "redis://127.0.0.1:1/0";

/// The Redis endpoint and the shared connection to it.
#[derive(Clone)]
pub struct Redis {
    backend: Arc<Backend>,
    /// The same server through a connection one task at a time drives
    /// itself (see [`Redis::conn_for_push`]), whose address a calling
    /// thread's connection uses too ([`Redis::for_calling_thread`]).
    /// `None` where no such connection reaches it: a server that can move
    /// (a sentinel's master, a cluster's nodes), TLS, RESP3; and on a
    /// calling thread's `Redis`, which has its own.
    task_conn: Option<Arc<on_task::TaskConn>>,
    /// Set once this server refused `TIME` (see `clock.rs`).
    pub(crate) time_refused: Arc<std::sync::atomic::AtomicBool>,
    /// The server's clock minus the host's, and when it was measured (see
    /// `clock::offset`).
    pub(crate) clock_offset: Arc<std::sync::Mutex<Option<(f64, std::time::Instant)>>>,
}

enum Backend {
    /// One server, or the master a sentinel names (swapped on failover).
    Node(Arc<RwLock<Endpoint>>),
    Cluster(Box<ClusterBackend>),
    /// One server, through a connection the calling thread drives (see
    /// [`Redis::for_calling_thread`]); `client` makes the connections
    /// other than the ordinary one (blocking commands, pub/sub).
    OnThread {
        conn: ThreadConn,
        client: Box<redis::Client>,
    },
}

struct Endpoint {
    client: redis::Client,
    shared: ConnectionManager,
    address: String,
}

impl Endpoint {
    fn open(url: &str, address: String) -> redis::RedisResult<Self> {
        let client = redis::Client::open(url)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let shared = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)?;
        Ok(Endpoint {
            client,
            shared,
            address,
        })
    }
}

struct ClusterBackend {
    client: redis::cluster::ClusterClient,
    shared: ClusterConnection,
    /// A key of the namespace: routes node-level commands (`CLIENT`, `SCAN`)
    /// to the node that owns the namespace's slot.
    slot_key: String,
    /// For pub/sub: `PUBLISH` reaches every node of a cluster.
    first_node: String,
}

impl ClusterBackend {
    fn open(url: &ClusterUrl, namespace: &str) -> Result<Self> {
        cluster::check_namespace(namespace)?;
        let client = redis::cluster::ClusterClient::builder(url.nodes.clone())
            .connection_timeout(CONNECT_TIMEOUT)
            .response_timeout(COMMAND_TIMEOUT)
            .build()
            .map_err(|e| {
                let nodes: Vec<String> = url.nodes.iter().map(|n| crate::redis_url::redact_url(n)).collect();
                Error::config("redis_url", nodes.join(","), e)
            })?;
        let shared = client.get_pending_async_connection_with_config(cluster_config(COMMAND_TIMEOUT));
        Ok(ClusterBackend {
            client,
            shared,
            slot_key: crate::keys::Keys::new(namespace).queues(),
            first_node: url.nodes[0].clone(),
        })
    }

    fn route(&self) -> RoutingInfo {
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
            &self.slot_key,
            SlotAddr::Master,
        )))
    }
}

fn cluster_config(response: Duration) -> redis::cluster::ClusterConfig {
    redis::cluster::ClusterConfig::new()
        .set_connection_timeout(CONNECT_TIMEOUT)
        .set_response_timeout(response)
}

impl Redis {
    /// Builds the shared connection lazily: nothing is dialled until first
    /// use, so this succeeds while Redis is down. Needs a tokio runtime.
    pub fn new(config: &Config) -> Result<Self> {
        let bad_url = |e: redis::RedisError| Error::config("redis_url", config.redis_url_redacted(), e);
        let mut fixed_server = None;
        let backend = if let Some(cluster) = ClusterUrl::parse(config.redis_url())? {
            Backend::Cluster(Box::new(ClusterBackend::open(&cluster, config.namespace())?))
        } else if let Some(sentinel) = SentinelUrl::parse(config.redis_url())? {
            let endpoint = Arc::new(RwLock::new(
                Endpoint::open(NO_MASTER_YET, String::new()).map_err(bad_url)?,
            ));
            tokio::spawn(follow_master(sentinel, Arc::downgrade(&endpoint)));
            Backend::Node(endpoint)
        } else {
            let endpoint = Endpoint::open(config.redis_url(), String::new()).map_err(bad_url)?;
            fixed_server = Some(endpoint.client.get_connection_info().clone());
            Backend::Node(Arc::new(RwLock::new(endpoint)))
        };
        let task_conn = fixed_server
            .filter(ThreadConn::serves)
            .map(|info| Arc::new(on_task::TaskConn::new(info)));
        Ok(Redis {
            backend: Arc::new(backend),
            task_conn,
            time_refused: Arc::default(),
            clock_offset: Arc::default(),
        })
    }

    /// Whether [`Redis::for_calling_thread`] can give a connection: one
    /// server at a fixed address, reached over plain TCP or a Unix socket
    /// speaking RESP2.
    pub(crate) fn reachable_directly(&self) -> bool {
        self.task_conn.is_some()
    }

    /// The same server through a connection the calling thread drives
    /// itself, with no task and no other thread (see `host/lanes.rs`),
    /// sharing this one's clock offset; and that connection, to bound its
    /// waits. Dialled on first use. `None` where no connection of our own
    /// reaches the server (see [`Redis::reachable_directly`]).
    pub(crate) fn for_calling_thread(&self) -> Option<(Redis, ThreadConn)> {
        let info = self.task_conn.as_ref()?.info().clone();
        let client = redis::Client::open(info.clone()).ok()?;
        let conn = ThreadConn::new(info);
        let redis = Redis {
            backend: Arc::new(Backend::OnThread {
                conn: conn.clone(),
                client: Box::new(client),
            }),
            task_conn: None,
            time_refused: self.time_refused.clone(),
            clock_offset: self.clock_offset.clone(),
        };
        Some((redis, conn))
    }

    /// For one push: the connection a task drives itself when no other
    /// task has it (the reply read by the awaiting task, polled for before
    /// the runtime parks, see `on_task.rs`), else the shared one, where
    /// concurrent pushes are pipelined.
    pub(crate) fn conn_for_push(&self) -> Conn {
        match self.task_conn.as_ref().and_then(on_task::TaskConn::reserve) {
            Some(reserved) => Conn::OnTask(reserved),
            None => self.conn(),
        }
    }

    /// A handle on the shared connection (cheap to clone).
    pub fn conn(&self) -> Conn {
        match &*self.backend {
            Backend::Node(endpoint) => Conn::Manager(endpoint.read().unwrap().shared.clone()),
            Backend::Cluster(cluster) => Conn::Cluster(cluster.shared.clone()),
            Backend::OnThread { conn, .. } => Conn::OnThread(conn.clone()),
        }
    }

    /// Runs a node-level command (no key: `CLIENT`, `SCAN`) on the node that
    /// holds the namespace (the one node, or in a cluster the slot's owner).
    pub async fn on_namespace_node<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        match &*self.backend {
            Backend::Node(_) | Backend::OnThread { .. } => cmd.query_async(&mut self.conn()).await,
            Backend::Cluster(cluster) => {
                let value = cluster
                    .shared
                    .clone()
                    .route_command(cmd.clone(), cluster.route())
                    .await?;
                redis::from_redis_value(value).map_err(Into::into)
            }
        }
    }

    /// A new dedicated connection for blocking commands that block for at
    /// most `block`, with its server-side client id (for `CLIENT UNBLOCK`).
    pub async fn blocking(&self, block: Duration) -> Result<BlockingConn> {
        let id_cmd = redis::cmd("CLIENT").arg("ID").clone();
        let client = match &*self.backend {
            Backend::Node(endpoint) => endpoint.read().unwrap().client.clone(),
            Backend::OnThread { client, .. } => (**client).clone(),
            Backend::Cluster(cluster) => {
                // A cluster connection of its own: one connection per node,
                // so the id is that of the connection the blocking command
                // will use on the slot's node.
                let mut conn = cluster
                    .client
                    .get_pending_async_connection_with_config(cluster_config(block + BLOCKING_SLACK));
                let value = conn.route_command(id_cmd, cluster.route()).await?;
                let id: i64 = redis::from_redis_value(value).map_err(redis::RedisError::from)?;
                return Ok(BlockingConn {
                    conn: Conn::Cluster(conn),
                    id,
                });
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(block + BLOCKING_SLACK));
        let mut conn = client.get_multiplexed_async_connection_with_config(&config).await?;
        let id: i64 = id_cmd.query_async(&mut conn).await?;
        Ok(BlockingConn {
            conn: Conn::Plain(conn),
            id,
        })
    }

    /// Wakes blocked commands early as if they had timed out (no job is
    /// taken by a command woken this way, so none can be lost).
    /// All are sent at once (one round trip on the multiplexed connection).
    pub async fn unblock(&self, ids: &[i64]) {
        let unblocks = ids.iter().map(|id| async move {
            let cmd = redis::cmd("CLIENT").arg("UNBLOCK").arg(*id).arg("TIMEOUT").clone();
            if let Err(e) = self.on_namespace_node::<i64>(&cmd).await {
                tracing::debug!("CLIENT UNBLOCK {id} failed: {e}");
            }
        });
        futures_util::future::join_all(unblocks).await;
    }

    /// A pub/sub connection (for remote signals).
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub> {
        let client = match &*self.backend {
            Backend::Node(endpoint) => endpoint.read().unwrap().client.clone(),
            Backend::OnThread { client, .. } => (**client).clone(),
            Backend::Cluster(cluster) => redis::Client::open(cluster.first_node.as_str())?,
        };
        Ok(client.get_async_pubsub().await?)
    }
}

/// A connection reserved for one blocking command at a time.
pub struct BlockingConn {
    pub conn: Conn,
    /// `CLIENT ID` of this connection, for `CLIENT UNBLOCK`.
    pub id: i64,
}

/// Asks the sentinels for the master every second for as long as the
/// connection is in use, and moves the connection when the master moves.
async fn follow_master(sentinel: SentinelUrl, endpoint: Weak<RwLock<Endpoint>>) {
    let mut failures = 0u32;
    loop {
        let Some(current) = endpoint.upgrade() else { return };
        match sentinel.find_master().await {
            Ok(address) if address != current.read().unwrap().address => {
                match Endpoint::open(&sentinel.node_url(&address), address.clone()) {
                    Ok(next) => {
                        let previous = std::mem::replace(&mut *current.write().unwrap(), next);
                        if previous.address.is_empty() {
                            tracing::info!("sentinel: master of {} is {address}", sentinel.service);
                        } else {
                            tracing::warn!(
                                "sentinel: master of {} moved from {} to {address}; following it",
                                sentinel.service,
                                previous.address
                            );
                        }
                    }
                    Err(e) => tracing::error!("sentinel: cannot use master {address}: {e}"),
                }
                failures = 0;
            }
            Ok(_) => failures = 0,
            Err(e) => {
                failures += 1;
                if failures <= 3 || failures % 30 == 0 {
                    tracing::error!(
                        "sentinel: no sentinel named the master of {} ({e}); asking again",
                        sentinel.service
                    );
                }
            }
        }
        drop(current);
        tokio::time::sleep(SENTINEL_POLL).await;
    }
}
