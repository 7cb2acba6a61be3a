//! Basic fetch: one `BRPOP` over the queues (weighted random order, or
//! strict), on a dedicated connection. Once popped, a job exists only in
//! this process's memory until it is settled, so a crash loses it — the
//! reason reliable fetch is the default.

use super::{queue_order, Fetched};
use crate::connection::BlockingConn;
use crate::error::Result;
use crate::shared::{Lifecycle, Shared};
use redis::AsyncCommands;
use std::time::Duration;

/// How long one `BRPOP` blocks.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(crate) struct BasicFetch {
    blocking: Option<BlockingConn>,
}

impl BasicFetch {
    pub async fn fetch(&mut self, shared: &Shared) -> Result<Vec<Fetched>> {
        let paused: Vec<String> = shared.redis.conn().smembers(shared.keys.paused_queues()).await?;
        let keys: Vec<String> = queue_order(shared.config.queues(), shared.config.strict_order())
            .into_iter()
            .filter(|q| !paused.iter().any(|p| p == q))
            .map(|q| shared.keys.queue(q))
            .collect();
        if keys.is_empty() {
            crate::shared::sleep_unless(shared, TIMEOUT, Lifecycle::Quiet).await;
            return Ok(Vec::new());
        }
        if self.blocking.is_none() {
            self.blocking = Some(shared.redis.blocking(TIMEOUT).await?);
        }
        let blocking = self.blocking.as_ref().expect("just set");
        let mut conn = blocking.conn.clone();
        let id = blocking.id;
        let cmd = redis::cmd("BRPOP").arg(&keys).arg(TIMEOUT.as_secs_f64()).clone();
        let pop = cmd.query_async::<Option<(String, Vec<u8>)>>(&mut conn);
        tokio::pin!(pop);
        let result = tokio::select! {
            r = &mut pop => r,
            _ = shared.reached(Lifecycle::Quiet) => {
                // Wake it as a timeout, then take its answer: a job popped
                // just before the wake-up must not be dropped.
                shared.redis.unblock(&[id]).await;
                pop.await
            }
        };
        match result {
            Ok(Some((key, raw))) => Ok(vec![Fetched {
                token: None,
                queue: shared.keys.queue_name(&key).unwrap_or(&key).to_string(),
                raw,
            }]),
            Ok(None) => Ok(Vec::new()),
            Err(e) => {
                self.blocking = None;
                Err(e.into())
            }
        }
    }
}
