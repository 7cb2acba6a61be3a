//! Moves due entries of `schedule` and `retry` onto their queues, every few
//! seconds (jittered per process so a fleet does not poll in step). Claim
//! and push happen in one script (`requeue_due.lua`); the payload pushed is
//! rebuilt here with `enqueued_at` re-stamped. An entry that cannot be
//! requeued (not JSON, no queue) is left where it is, never removed.

use crate::error::Result;
use crate::job::{float, now, Job};
use crate::scripts::SCRIPTS;
use crate::shared::{jittered, sleep_unless, Lifecycle, Shared};
use redis::AsyncCommands;
use std::collections::HashSet;
use std::sync::Arc;

/// Entries read (and moved) per round trip.
const PAGE: isize = 100;

pub(crate) async fn run(shared: Arc<Shared>) {
    // Entries already reported as unrequeueable, so each is logged once.
    let mut reported = HashSet::new();
    loop {
        for set in [shared.keys.schedule(), shared.keys.retry()] {
            match enqueue_due(&shared, &set, &mut reported).await {
                Ok(moved) if moved > 0 => tracing::debug!("moved {moved} due job(s) from {set}"),
                Ok(_) => {}
                Err(e) => tracing::error!("scheduler pass over {set} failed (will retry): {e}"),
            }
        }
        let pause = jittered(shared.config.scheduler_poll_interval(), 0.5);
        if sleep_unless(&shared, pause, Lifecycle::Stopping).await {
            return;
        }
    }
}

/// Requeues every entry of `set` that is due now. Returns how many moved.
pub(crate) async fn enqueue_due(shared: &Shared, set: &str, reported: &mut HashSet<Vec<u8>>) -> Result<usize> {
    let mut conn = shared.redis.conn();
    let mut moved = 0;
    let mut skipped: isize = 0;
    loop {
        let at = now();
        let entries: Vec<Vec<u8>> = conn.zrangebyscore_limit(set, "-inf", at, skipped, PAGE).await?;
        if entries.is_empty() {
            return Ok(moved);
        }
        let page_len = entries.len() as isize;
        let mut invocation = SCRIPTS.requeue_due.prepare_invoke();
        invocation.key(set).key(shared.keys.queues()).arg(shared.keys.wake());
        let mut batch = 0;
        for raw in entries {
            match requeueable(&raw) {
                Some(mut job) => {
                    job.remove("at");
                    job.set("enqueued_at", float(at));
                    let queue = job.queue_name().to_string();
                    invocation
                        .key(shared.keys.queue(&queue))
                        .arg(&raw[..])
                        .arg(&queue)
                        .arg(job.to_json());
                    batch += 1;
                }
                None => {
                    skipped += 1;
                    if reported.insert(raw.clone()) {
                        tracing::error!(
                            "entry in {set} cannot be requeued (left in place): {}",
                            String::from_utf8_lossy(&raw[..raw.len().min(200)])
                        );
                    }
                }
            }
        }
        if batch > 0 {
            let n: usize = invocation.invoke_async(&mut conn).await?;
            moved += n;
        }
        if page_len < PAGE {
            return Ok(moved);
        }
    }
}

/// The job an entry would requeue as: a JSON object with a class and a
/// usable queue name (`default` when it names none; see [`Job::normalize`]).
pub(crate) fn requeueable(raw: &[u8]) -> Option<Job> {
    let mut job = Job::parse(raw).ok()?;
    job.normalize(crate::job::now());
    match job.get("queue") {
        Some(serde_json::Value::String(q)) if crate::config::validate_queue_name(q).is_ok() => Some(job),
        _ => None,
    }
}
