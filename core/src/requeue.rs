//! Putting one job taken by a process back on its queue, atomically with
//! taking it off that process's in-progress key: used by orphan recovery
//! and shutdown (recovery.rs) and by a slot that gives a job back
//! (completion/).

use crate::error::Result;
use crate::in_progress::NOT_HELD;
use crate::job::Job;
use crate::locks::{queued_ttl, JobLocks};
use crate::scripts::SCRIPTS;
use crate::shared::Shared;
use redis::AsyncCommands;

/// Puts one job back on its queue with `requeue_in_progress.lua`, re-taking
/// its periodic run lock in the same step, and taking its `entry` off
/// `identity`'s in-progress key ([`crate::in_progress::NOT_HELD`] with basic
/// fetch, where the job exists only in memory and is just pushed). Returns
/// the script's answer (1 requeued, 0 no longer in progress, -1 owner
/// alive). `from` is the queue whose in-progress hash holds it (sharded by
/// queue; the job goes back onto that queue, on the same slot).
pub(crate) async fn requeue_one(
    shared: &Shared,
    identity: &str,
    raw: &[u8],
    job: &Job,
    threshold: u64,
    entry: &str,
    from: &str,
) -> Result<i64> {
    if shared.keys.is_sharded_by_queue() && entry != NOT_HELD {
        return requeue_on_its_slot(shared, identity, raw, job, entry, from).await;
    }
    let queue = job.queue_name();
    let destination = crate::groups::Destination::of_job(&shared.keys, job);
    let queue_key = destination.list.clone();
    let run_lock = JobLocks::of(job, &shared.keys).run_lock;
    let result: i64 = SCRIPTS
        .requeue_in_progress
        .key(shared.keys.in_progress(identity))
        .key(shared.keys.queues())
        .key(&queue_key)
        .key(shared.keys.last_beat())
        .key(run_lock.as_ref().unwrap_or(&queue_key))
        .key(shared.keys.priorities())
        .arg(raw)
        .arg(queue)
        .arg(identity)
        .arg(threshold)
        .arg(if run_lock.is_some() { "1" } else { "0" })
        .arg(job.jid_str())
        .arg(queued_ttl(&shared.config))
        .arg(entry)
        .arg(crate::clock::fallback())
        .arg(shared.keys.wake())
        .arg("1")
        .arg(crate::priority::listed_member(queue, job.priority_level()))
        .arg(&destination.group_args()[..])
        .invoke_async(&mut shared.redis.conn())
        .await?;
    Ok(result)
}

/// Sharded by queue: lists queue `from` and the job's level on the
/// namespace's slot, then puts the job back onto the queue, whose slot
/// holds `identity`'s in-progress hash for it, in one script; then re-takes
/// the job's periodic run lock on the namespace's slot.
/// A job whose failure was filed before its entry could be taken off (a
/// crash between the two steps, see completion/file.rs) is only taken off.
async fn requeue_on_its_slot(
    shared: &Shared,
    identity: &str,
    raw: &[u8],
    job: &Job,
    entry: &str,
    from: &str,
) -> Result<i64> {
    let keys = &shared.keys;
    let in_progress = keys.in_progress_from(identity, from);
    let filed = keys.filed(identity, entry);
    let mut conn = shared.redis.conn();
    if conn.exists(&filed).await? {
        let _: i64 = conn.hdel(&in_progress, entry).await?;
        let _: i64 = conn.del(&filed).await?;
        return Ok(0);
    }
    let level = job.priority_level();
    // Back into its group, if it has one: its ring is on this slot too.
    let destination =
        crate::groups::Destination::of(keys, from, level, job.group_key(), job.declared_limits().as_deref());
    let queue_key = destination.list.clone();
    // Listed first, on the namespace's slot (list_queues.lua): a queued job
    // is always in a listed queue, level and grouped queue; a listing whose
    // push then finds nothing to give back is harmless.
    let listing = crate::outbox::listing_of(keys, from, job);
    let _: usize = listing.invoke_async(&mut conn).await?;
    // KEYS[2], [4], [5] and [6] are not touched (no listing, no staleness
    // check, no lock here) but must be on the queue's slot.
    let result: i64 = SCRIPTS
        .requeue_in_progress
        .key(&in_progress)
        .key(&queue_key)
        .key(&queue_key)
        .key(&queue_key)
        .key(&queue_key)
        .key(&queue_key)
        .arg(raw)
        .arg(from)
        .arg(identity)
        .arg(0)
        .arg("0")
        .arg(job.jid_str())
        .arg(queued_ttl(&shared.config))
        .arg(entry)
        .arg(crate::clock::fallback())
        .arg(keys.wake())
        .arg("0")
        .arg("")
        .arg(&destination.group_args()[..])
        .invoke_async(&mut conn)
        .await?;
    if result == 1 {
        if let Some(lock) = JobLocks::of(job, keys).run_lock {
            let _: i64 = SCRIPTS
                .owned_lock
                .key(lock)
                .arg("retake")
                .arg(queued_ttl(&shared.config))
                .arg(job.jid_str())
                .invoke_async(&mut conn)
                .await?;
        }
    }
    Ok(result)
}
