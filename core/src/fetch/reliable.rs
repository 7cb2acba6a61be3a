//! Reliable fetch: `fetch_reliable.lua` moves a batch of jobs from the
//! queues onto `NS:in_progress:<identity>` in one round trip. When every
//! queue is empty, one `BLMOVE` per queue waits on a dedicated connection;
//! the first to return wakes the others with `CLIENT UNBLOCK`, so a new job
//! is picked up as soon as it is pushed, with no polling.

use super::{queue_order, Fetched};
use crate::connection::BlockingConn;
use crate::error::{Error, Result};
use crate::scripts::SCRIPTS;
use crate::shared::{Lifecycle, Shared};
use futures_util::stream::{FuturesUnordered, StreamExt};
use redis::AsyncCommands;
use std::collections::HashMap;

#[derive(Default)]
pub(crate) struct ReliableFetch {
    /// One dedicated blocking connection per queue, made on first use.
    blocking: HashMap<String, BlockingConn>,
}

impl ReliableFetch {
    pub async fn fetch(&mut self, shared: &Shared, max: usize) -> Result<Vec<Fetched>> {
        let order = queue_order(shared.config.queues(), shared.config.strict_order());
        let mut invocation = SCRIPTS.fetch_reliable.prepare_invoke();
        invocation
            .key(shared.keys.paused_queues())
            .key(shared.keys.in_progress(&shared.identity))
            .arg(max);
        for name in &order {
            invocation.key(shared.keys.queue(name)).arg(*name);
        }
        let flat: Vec<Vec<u8>> = invocation.invoke_async(&mut shared.redis.conn()).await?;
        pairs(flat)
    }

    pub async fn wait(&mut self, shared: &Shared) -> Result<Vec<Fetched>> {
        let paused: Vec<String> = shared.redis.conn().smembers(shared.keys.paused_queues()).await?;
        let active: Vec<String> = shared
            .config
            .queues()
            .iter()
            .map(|q| q.name.clone())
            .filter(|q| !paused.contains(q))
            .collect();
        let timeout = shared.config.fetch_idle_max_interval();
        if active.is_empty() {
            crate::shared::sleep_unless(shared, timeout, Lifecycle::Quiet).await;
            return Ok(Vec::new());
        }
        for name in &active {
            if !self.blocking.contains_key(name) {
                let conn = shared.redis.blocking(timeout).await?;
                self.blocking.insert(name.clone(), conn);
            }
        }

        let destination = shared.keys.in_progress(&shared.identity);
        let mut waits = FuturesUnordered::new();
        let mut ids = Vec::new();
        for name in &active {
            let blocking = &self.blocking[name];
            ids.push(blocking.id);
            let mut conn = blocking.conn.clone();
            let cmd = redis::cmd("BLMOVE")
                .arg(shared.keys.queue(name))
                .arg(&destination)
                .arg("RIGHT")
                .arg("LEFT")
                .arg(timeout.as_secs_f64())
                .clone();
            let name = name.clone();
            waits.push(async move {
                let result: redis::RedisResult<Option<Vec<u8>>> = cmd.query_async(&mut conn).await;
                (name, result)
            });
        }

        let mut fetched = Vec::new();
        let mut first_error = None;
        let mut woken = false;
        loop {
            tokio::select! {
                next = waits.next() => {
                    let Some((name, result)) = next else { break };
                    match result {
                        Ok(Some(raw)) => fetched.push(Fetched { queue: name, raw }),
                        Ok(None) => {}
                        Err(e) => {
                            // The connection may be broken: rebuild it next time.
                            self.blocking.remove(&name);
                            first_error.get_or_insert(e);
                        }
                    }
                    if !woken {
                        woken = true;
                        shared.redis.unblock(&ids).await;
                    }
                }
                _ = shared.reached(Lifecycle::Quiet), if !woken => {
                    woken = true;
                    shared.redis.unblock(&ids).await;
                }
            }
        }
        match first_error {
            // Jobs that did arrive must be run, error or not.
            Some(e) if fetched.is_empty() => Err(Error::Redis(e)),
            _ => Ok(fetched),
        }
    }
}

fn pairs(flat: Vec<Vec<u8>>) -> Result<Vec<Fetched>> {
    if flat.len() % 2 != 0 {
        return Err(Error::Script {
            script: "fetch_reliable",
            reason: format!("returned {} items, expected pairs", flat.len()),
        });
    }
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut items = flat.into_iter();
    while let (Some(queue), Some(raw)) = (items.next(), items.next()) {
        out.push(Fetched {
            queue: String::from_utf8_lossy(&queue).into_owned(),
            raw,
        });
    }
    Ok(out)
}
