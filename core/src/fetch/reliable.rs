//! Reliable fetch: `fetch_reliable.lua` moves a batch of jobs from the
//! queues onto `NS:in_progress:<identity>` in one round trip, no more than
//! the free slots, in queue order. When every queue is empty, one blocking
//! wait per queue on a dedicated connection: `BLMOVE q q RIGHT RIGHT`, which
//! returns as soon as `q` holds a job and leaves it where it is (the last
//! element popped and pushed back onto the same end). The first to return
//! wakes the others with `CLIENT UNBLOCK`, and the fetch script then takes
//! what fits: a wake never takes a job itself, so pushes to several queues
//! at once cannot hand over more jobs than there are free slots, or out of
//! order.

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

        let mut waits = FuturesUnordered::new();
        // The waits still blocked, by queue: the ones to unblock.
        let mut pending: HashMap<String, i64> = HashMap::new();
        for name in &active {
            let blocking = &self.blocking[name];
            pending.insert(name.clone(), blocking.id);
            let mut conn = blocking.conn.clone();
            let queue = shared.keys.queue(name);
            let cmd = redis::cmd("BLMOVE")
                .arg(&queue)
                .arg(&queue)
                .arg("RIGHT")
                .arg("RIGHT")
                .arg(timeout.as_secs_f64())
                .clone();
            let name = name.clone();
            waits.push(async move {
                let result: redis::RedisResult<Option<Vec<u8>>> = cmd.query_async(&mut conn).await;
                (name, result)
            });
        }

        let mut arrived = false;
        let mut first_error = None;
        let mut woken = false;
        loop {
            tokio::select! {
                next = waits.next() => {
                    let Some((name, result)) = next else { break };
                    pending.remove(&name);
                    match result {
                        Ok(Some(_)) => arrived = true,
                        Ok(None) => {}
                        Err(e) => {
                            // The connection may be broken: rebuild it next time.
                            self.blocking.remove(&name);
                            first_error.get_or_insert(e);
                        }
                    }
                    if !woken {
                        woken = true;
                        // With one queue there is nothing left to wake: no
                        // round trip between the wake and the fetch.
                        let others: Vec<i64> = pending.values().copied().collect();
                        shared.redis.unblock(&others).await;
                    }
                }
                _ = shared.reached(Lifecycle::Quiet), if !woken => {
                    woken = true;
                    let all: Vec<i64> = pending.values().copied().collect();
                    shared.redis.unblock(&all).await;
                }
            }
        }
        match first_error {
            Some(e) if !arrived => Err(Error::Redis(e)),
            // Something arrived: take what fits, in queue order.
            _ if arrived && !shared.is_quiet() && shared.free_slots() > 0 => {
                self.fetch(shared, shared.free_slots()).await
            }
            _ => Ok(Vec::new()),
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
