//! Moves due entries of `schedule` and `retry` onto their queues, every few
//! seconds (jittered per process so a fleet does not poll in step). Claim
//! and push happen in one script (`requeue_due.lua`); the payload pushed is
//! rebuilt here with `enqueued_at` re-stamped. (Sharded by queue, claim and
//! push are a hand-over through the outbox: see outbox.rs.) An entry that cannot be
//! requeued (not JSON, no queue) is left where it is, never removed.

use crate::connection::Redis;
use crate::error::Result;
use crate::job::{now, Job};
use crate::keys::Keys;
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
    // Sharded by queue: a pass failed after claiming entries into the
    // outbox, perhaps before pushing them; the next pass delivers the
    // outbox first rather than leaving them to the recovery pass.
    let mut undelivered = false;
    loop {
        if undelivered {
            match crate::outbox::deliver_all(&shared.redis, &shared.keys).await {
                Ok(_) => undelivered = false,
                Err(e) => tracing::error!("delivering the outbox failed (will retry): {e}"),
            }
        }
        for set in [shared.keys.schedule(), shared.keys.retry()] {
            match enqueue_due(&shared, &set, &mut reported).await {
                Ok(moved) if moved > 0 => tracing::debug!("moved {moved} due job(s) from {set}"),
                Ok(_) => {}
                Err(e) => {
                    undelivered = shared.keys.is_sharded_by_queue();
                    tracing::error!("scheduler pass over {set} failed (will retry): {e}");
                }
            }
        }
        wake_rated_groups(&shared).await;
        let pause = jittered(shared.config.scheduler_poll_interval(), 0.5);
        if sleep_unless(&shared, pause, Lifecycle::Stopping).await {
            return;
        }
    }
}

/// Brings the groups of rated queues whose period has ended back into
/// their rings and wakes idle workers for them (`group_wake.lua`); a queue
/// none of whose groups has a rate is not asked.
async fn wake_rated_groups(shared: &Shared) {
    for queue in shared.levels.rated() {
        let woken: redis::RedisResult<i64> = SCRIPTS
            .group_wake
            .key(shared.keys.group_timers(&queue))
            .key(shared.keys.group_ring(&queue))
            .arg(shared.keys.wake())
            .arg(&queue)
            .arg(crate::clock::fallback())
            .invoke_async(&mut shared.redis.conn())
            .await;
        if let Err(e) = woken {
            tracing::error!("waking the rated groups of queue {queue} failed (will retry): {e}");
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
        let mut due = Vec::new();
        for raw in entries {
            match requeueable(&raw) {
                Some(mut job) => {
                    shared.keys.stamp_enqueued(&mut job, at);
                    due.push(Due::new(raw, &job));
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
        moved += move_to_queues(&shared.redis, &shared.keys, set, &due).await?;
        if page_len < PAGE {
            return Ok(moved);
        }
    }
}

/// An entry of a sorted set to put on its queue.
pub(crate) struct Due {
    /// The entry as stored.
    pub raw: Vec<u8>,
    pub queue: String,
    /// Its priority level (which of the queue's lists it goes on).
    pub level: u8,
    /// Its group (see groups.rs), if any.
    pub group: Option<String>,
    /// The limits it declares for its group, if any.
    pub declared: Option<String>,
    /// A sequence's job (its retry holds its group: see group_leases.rs).
    pub in_sequence: bool,
    /// What to push (`enqueued_at` re-stamped).
    pub payload: String,
    pub jid: String,
}

impl Due {
    /// The entry `raw`, read as `job` (re-stamped), for its queue.
    pub fn new(raw: Vec<u8>, job: &Job) -> Self {
        Due {
            raw,
            queue: job.queue_name().to_string(),
            level: job.priority_level(),
            group: job.group_key().map(str::to_string),
            declared: job.declared_limits(),
            in_sequence: job.in_sequence(),
            payload: job.to_json(),
            jid: job.jid_str().to_string(),
        }
    }
}

/// Claims each entry of `set` and pushes it onto its queue; returns how
/// many moved (one another process claimed first is skipped). One script
/// (`requeue_due.lua`), or sharded by queue, where the queues are on other
/// slots, a hand-over through the outbox (see outbox.rs).
pub(crate) async fn move_to_queues(redis: &Redis, keys: &Keys, set: &str, due: &[Due]) -> Result<usize> {
    if due.is_empty() {
        return Ok(0);
    }
    if keys.is_sharded_by_queue() {
        let mut invocation = SCRIPTS.claim_to_outbox.prepare_invoke();
        invocation.key(set).key(keys.queues()).key(keys.outbox());
        for entry in due {
            invocation
                .arg(&entry.raw[..])
                .arg(&entry.queue)
                .arg(&entry.payload)
                .arg(crate::outbox::handover_id(&entry.jid));
        }
        let claimed: Vec<String> = invocation.invoke_async(&mut redis.conn()).await?;
        crate::outbox::deliver(redis, keys, &claimed).await?;
        return Ok(claimed.len());
    }
    let mut invocation = SCRIPTS.requeue_due.prepare_invoke();
    invocation
        .key(set)
        .key(keys.queues())
        .key(keys.priorities())
        .arg(keys.wake());
    let from_retry = set == keys.retry();
    for entry in due {
        let destination = crate::groups::Destination::of(
            keys,
            &entry.queue,
            entry.level,
            entry.group.as_deref(),
            entry.declared.as_deref(),
        );
        invocation
            .key(&destination.list)
            .arg(&entry.raw[..])
            .arg(&entry.queue)
            .arg(&entry.payload)
            .arg(crate::priority::listed_member(&entry.queue, entry.level))
            .arg(&destination.group_args()[..]);
        // A sequence's retry goes back at the head of its group, whose hold
        // it ends (requeue_due.lua).
        if from_retry && entry.in_sequence && !destination.ring.is_empty() {
            invocation
                .arg(keys.group_holds(&entry.queue))
                .arg(keys.group_running(&entry.queue))
                .arg(keys.group_parked(&entry.queue))
                .arg(&entry.jid);
        } else {
            invocation.arg(["", "", "", ""].as_slice());
        }
    }
    Ok(invocation.invoke_async(&mut redis.conn()).await?)
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
