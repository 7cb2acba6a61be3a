//! Basic fetch: one `BLMPOP` over the queues (weighted random order, or
//! strict), on a dedicated connection, taking up to the free slots from the
//! first queue that has jobs (`BRPOP`, one job, where the server has no
//! `BLMPOP`). Once popped, a job exists only in this process's memory until
//! it is settled, so a crash loses it — the reason reliable fetch is the
//! default.

use super::{queue_order, Fetched};
use crate::connection::BlockingConn;
use crate::error::Result;
use crate::shared::{Lifecycle, Shared};
use redis::AsyncCommands;
use std::collections::HashMap;
use std::time::Duration;

/// How long one `BLMPOP` (or `BRPOP`) blocks.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(crate) struct BasicFetch {
    blocking: Option<BlockingConn>,
    /// Whether the server has `BLMPOP` (Redis 7; asked once, with `COMMAND
    /// INFO`); without it, one `BRPOP` per job.
    has_blmpop: Option<bool>,
}

impl BasicFetch {
    pub async fn fetch(&mut self, shared: &Shared, max: usize) -> Result<Vec<Fetched>> {
        let order = queue_order(shared.config.queues(), shared.config.strict_order());
        // A grouped queue's turns are decided by a script, which no
        // blocking pop can run: it is taken from first, without blocking
        // (its jobs pushed during the wait below are seen when it ends).
        if order.iter().any(|queue| shared.levels.is_grouped(queue)) {
            let flat = super::reliable::take(shared, &order, max.max(1), None).await?;
            let taken = super::reliable::pairs(flat, 0)?;
            if !taken.is_empty() {
                return Ok(taken.into_iter().map(|f| Fetched { token: None, ..f }).collect());
            }
        }
        let paused: Vec<String> = shared.redis.conn().smembers(shared.keys.paused_queues()).await?;
        // Each queue's lists (highest priority level first), and which
        // queue each list is of.
        let mut queue_of: HashMap<String, String> = HashMap::new();
        let mut keys: Vec<String> = Vec::new();
        for queue in order {
            if paused.iter().any(|p| p == queue) {
                continue;
            }
            for list in shared.levels.lists(&shared.keys, queue) {
                queue_of.insert(list.clone(), queue.to_string());
                keys.push(list);
            }
        }
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
        if self.has_blmpop.is_none() {
            let found = super::server_has(shared, "BLMPOP").await?;
            if !found {
                tracing::info!("the server has no BLMPOP: basic fetch takes one job per BRPOP");
            }
            self.has_blmpop = Some(found);
        }
        let cmd = if self.has_blmpop == Some(false) {
            redis::cmd("BRPOP").arg(&keys).arg(TIMEOUT.as_secs_f64()).clone()
        } else {
            let mut cmd = redis::cmd("BLMPOP");
            cmd.arg(TIMEOUT.as_secs_f64()).arg(keys.len()).arg(&keys);
            cmd.arg("RIGHT").arg("COUNT").arg(max.max(1)).clone()
        };
        let pop = cmd.query_async::<redis::Value>(&mut conn);
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
            Ok(reply) => popped(&queue_of, reply),
            Err(e) => {
                self.blocking = None;
                Err(e.into())
            }
        }
    }
}

/// The jobs of a `BLMPOP` reply (`[key, [job, ...]]`) or a `BRPOP` one
/// (`[key, job]`); nil when the wait timed out. `queue_of`: the queue of
/// each list read.
fn popped(queue_of: &HashMap<String, String>, reply: redis::Value) -> Result<Vec<Fetched>> {
    use redis::{FromRedisValue, RedisError};
    if reply == redis::Value::Nil {
        return Ok(Vec::new());
    }
    let parse = |e| crate::error::Error::Redis(RedisError::from(e));
    let (key, jobs): (String, redis::Value) = FromRedisValue::from_redis_value(reply).map_err(parse)?;
    let jobs: Vec<Vec<u8>> = match jobs {
        redis::Value::Array(_) => FromRedisValue::from_redis_value(jobs).map_err(parse)?,
        one => vec![FromRedisValue::from_redis_value(one).map_err(parse)?],
    };
    let queue = queue_of.get(&key).cloned().unwrap_or(key);
    Ok(jobs
        .into_iter()
        .map(|raw| Fetched {
            token: None,
            queue: queue.clone(),
            raw,
        })
        .collect())
}
