//! Redis connections. Ordinary traffic shares one auto-reconnecting
//! multiplexed connection. A blocking fetch gets a dedicated connection of
//! its own: on a shared one it would stall every other caller, and its
//! response timeout must outlast the block (a `BRPOP` abandoned client-side
//! by the default 500 ms timeout lost a job).

use crate::config::Config;
use crate::error::{Error, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::AsyncConnectionConfig;
use std::time::Duration;

/// Response timeout for ordinary commands: long enough for a large batch
/// script under load, short enough that a hung server is noticed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Slack beyond a blocking command's own timeout before the client gives up.
const BLOCKING_SLACK: Duration = Duration::from_secs(10);

/// The Redis endpoint and the shared connection to it.
#[derive(Clone)]
pub struct Redis {
    client: redis::Client,
    shared: ConnectionManager,
}

impl Redis {
    /// Builds the shared connection lazily: nothing is dialled until first
    /// use, so this succeeds while Redis is down. Needs a tokio runtime.
    pub fn new(config: &Config) -> Result<Self> {
        let client = redis::Client::open(config.redis_url())
            .map_err(|e| Error::config("redis_url", config.redis_url_redacted(), e))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let shared = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)?;
        Ok(Redis { client, shared })
    }

    /// A handle on the shared connection (cheap to clone).
    pub fn conn(&self) -> ConnectionManager {
        self.shared.clone()
    }

    /// A new dedicated connection for blocking commands that block for at
    /// most `block`, with its server-side client id (for `CLIENT UNBLOCK`).
    pub async fn blocking(&self, block: Duration) -> Result<BlockingConn> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(block + BLOCKING_SLACK));
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let id: i64 = redis::cmd("CLIENT").arg("ID").query_async(&mut conn).await?;
        Ok(BlockingConn { conn, id })
    }

    /// A pub/sub connection (for remote signals).
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub> {
        Ok(self.client.get_async_pubsub().await?)
    }
}

/// A connection reserved for one blocking command at a time.
pub struct BlockingConn {
    pub conn: MultiplexedConnection,
    /// `CLIENT ID` of this connection, for `CLIENT UNBLOCK`.
    pub id: i64,
}

/// Wakes blocked commands early as if they had timed out (no job is taken
/// by a command woken this way, so none can be lost).
pub async fn unblock(conn: &mut ConnectionManager, ids: &[i64]) {
    for id in ids {
        let result: redis::RedisResult<i64> = redis::cmd("CLIENT")
            .arg("UNBLOCK")
            .arg(*id)
            .arg("TIMEOUT")
            .query_async(conn)
            .await;
        if let Err(e) = result {
            tracing::debug!("CLIENT UNBLOCK {id} failed: {e}");
        }
    }
}
