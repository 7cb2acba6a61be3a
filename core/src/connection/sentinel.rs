//! Redis Sentinel: `redis+sentinel://[user:password@]host:port[,host:port...]/service[/db]`
//! (`rediss+sentinel://` for TLS to sentinels and nodes; the sentinels'
//! own credentials in `?sentinel_username=...&sentinel_password=...`).
//! The sentinels are asked which node is the master of `service`; the
//! connection layer follows it when it changes (see `connection.rs`).

use crate::redis_url::SentinelUrl;
use std::time::Duration;

/// How long one sentinel may take to answer before the next is asked.
const SENTINEL_TIMEOUT: Duration = Duration::from_secs(1);

impl SentinelUrl {
    /// Asks the sentinels in turn for the master's `host:port`.
    pub async fn find_master(&self) -> std::result::Result<String, String> {
        let mut errors = Vec::new();
        for sentinel in &self.sentinels {
            match self.ask(sentinel).await {
                Ok(address) => return Ok(address),
                Err(e) => errors.push(format!("{sentinel}: {e}")),
            }
        }
        Err(errors.join("; "))
    }

    async fn ask(&self, sentinel: &str) -> std::result::Result<String, String> {
        let client = redis::Client::open(self.sentinel_url(sentinel)).map_err(|e| e.to_string())?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(SENTINEL_TIMEOUT))
            .set_response_timeout(Some(SENTINEL_TIMEOUT));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| e.to_string())?;
        let reply: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&self.service)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let (host, port) = reply.ok_or_else(|| format!("does not know a master named {:?}", self.service))?;
        Ok(format!("{host}:{port}"))
    }
}
