//! Reliable fetch: `fetch_reliable.lua` moves a batch of jobs from the
//! queues into `NS:in_progress:<identity>` in one round trip, no more than
//! the free slots, in queue order. When every queue is empty the worker
//! waits on the namespace's wake channel, not on the queues: a push that
//! finds a queue empty publishes the queue's name there (`wake.lua`), and
//! the process's one subscription (see `heartbeat::listen_for_signals`)
//! wakes this fetch, which then takes what fits. So an idle worker holds
//! the same connections and sends the same commands however many queues it
//! serves: one fetch per `fetch_idle_max_interval` as a fallback, for a
//! lost message or a producer that does not publish (a raw `LPUSH`).
//!
//! Sharded by queue, the script runs once per queue, on the queues that
//! may hold jobs (see `sharded.rs`).

use super::sharded::{fetch_queue_by_queue, QueueReads};
use super::{queue_order, Fetched};
use crate::error::{Error, Result};
use crate::scripts::SCRIPTS;
use crate::shared::{Lifecycle, Shared};

#[derive(Default)]
pub(crate) struct ReliableFetch {
    /// The last wait ran out without a wake-up: the next fetch polls.
    ran_out: bool,
    /// Sharded by queue: which queues a fetch reads.
    sharded: QueueReads,
}

impl ReliableFetch {
    pub async fn fetch(&mut self, shared: &Shared, max: usize) -> Result<Vec<Fetched>> {
        let queues = shared.config.queues();
        let order = queue_order(queues, shared.config.strict_order());
        if shared.keys.is_sharded_by_queue() {
            let poll = std::mem::take(&mut self.ran_out);
            let read = self.sharded.choose(order, queues, shared.wakeups.take(), poll);
            if read.is_empty() {
                return Ok(Vec::new());
            }
            return match fetch_queue_by_queue(shared, &read, max).await {
                Ok((taken, left)) => {
                    self.sharded.record(&read, &left);
                    Ok(taken)
                }
                Err(e) => {
                    self.sharded.forget();
                    Err(e)
                }
            };
        }
        let first_token = shared.reserve_tokens(max);
        let flat = take(shared, &order, max, Some(first_token)).await?;
        pairs(flat, first_token)
    }

    /// Every queue was empty: wait for a wake-up (a push onto one of ours),
    /// at most `fetch_idle_max_interval`, or until the process is quiet.
    /// The next fetch takes what fits.
    pub async fn wait(&mut self, shared: &Shared) {
        self.ran_out = tokio::select! {
            _ = shared.wakeups.notified() => false,
            _ = tokio::time::sleep(shared.config.fetch_idle_max_interval()) => true,
            _ = shared.reached(Lifecycle::Quiet) => false,
        };
    }
}

/// Runs `fetch_reliable.lua` over the queues in `order`: up to `max`
/// jobs, recorded in progress from `first_token` on, or not recorded at all
/// (`None`: basic fetch's turn of the grouped queues).
pub(super) async fn take(
    shared: &Shared,
    order: &[&str],
    max: usize,
    first_token: Option<u64>,
) -> Result<Vec<Vec<u8>>> {
    let mut invocation = SCRIPTS.fetch_reliable.prepare_invoke();
    invocation
        .key(shared.keys.paused_queues())
        .key(shared.keys.in_progress(&shared.identity))
        .arg(max);
    match first_token {
        Some(token) => invocation.arg(token),
        None => invocation.arg("-"),
    };
    for name in order {
        for list in shared.levels.lists(&shared.keys, name) {
            invocation.key(list).arg(*name);
        }
    }
    for name in order {
        if let Some(args) = grouped_args(shared, name, max) {
            invocation.arg(args);
        }
    }
    Ok(invocation.invoke_async(&mut shared.redis.conn()).await?)
}

/// What `fetch_reliable.lua` is told of queue `name` when it is grouped
/// (read through its ring, see groups.rs), for a fetch of `max` jobs;
/// `None` for a queue without groups.
pub(super) fn grouped_args(shared: &Shared, name: &str, max: usize) -> Option<Vec<String>> {
    if !shared.levels.is_grouped(name) {
        return None;
    }
    let reading = crate::groups::Reading {
        used: shared.levels.used(name),
        weighted: shared.levels.is_weighted(name),
        capped_for: shared.levels.is_capped(name).then_some(shared.identity.as_str()),
        rated: shared.levels.is_rated(name),
        quantum: shared.read_ahead.group_quantum(max),
    };
    Some(crate::groups::fetch_args(&shared.keys, name, &reading))
}

/// The script's `{queue, payload, ...}`, the i-th job under token
/// `first_token + i`.
pub(super) fn pairs(flat: Vec<Vec<u8>>, first_token: u64) -> Result<Vec<Fetched>> {
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
            token: Some(first_token + out.len() as u64),
        });
    }
    Ok(out)
}
