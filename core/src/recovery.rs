//! Orphan recovery and shutdown requeue. A process whose last beat (in
//! Redis's clock) is older than `orphan_threshold` is dead: every job on
//! its in-progress list goes back to its queue, one atomic script per job
//! that re-checks the owner's staleness, so a process that was only slow
//! keeps its jobs. A payload that cannot be parsed is buried instead (its
//! queue is unknown).
//!
//! Sharded by queue, a process's jobs are in one hash per queue, on the
//! queue's slot, and go back onto that same queue; the owner's staleness
//! (on the namespace's slot) is re-checked before each queue instead. Each
//! pass also finishes hand-overs a crash interrupted (outbox.rs).

use crate::error::Result;
use crate::in_progress::{Held, NOT_HELD};
use crate::job::Job;
use crate::locks::{queued_ttl, JobLocks};
use crate::scripts::SCRIPTS;
use crate::shared::{jittered, sleep_unless, Lifecycle, Shared};
use redis::AsyncCommands;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        match recover_orphans(&shared).await {
            Ok(moved) => {
                if moved > 0 {
                    tracing::warn!("recovered {moved} job(s) from dead processes");
                }
                // The periodic ticker waits for this (see periodic::ticker).
                shared.recovered_once.store(true, Ordering::SeqCst);
            }
            Err(e) => tracing::error!("orphan recovery failed (will retry): {e}"),
        }
        let pause = jittered(shared.config.orphan_check_interval(), 0.2);
        if sleep_unless(&shared, pause, Lifecycle::Stopping).await {
            return;
        }
    }
}

/// One pass over every identity that may own an in-progress list.
pub(crate) async fn recover_orphans(shared: &Shared) -> Result<usize> {
    let mut conn = shared.redis.conn();
    if shared.keys.is_sharded_by_queue() {
        let delivered = crate::outbox::deliver_all(&shared.redis, &shared.keys).await?;
        if delivered > 0 {
            tracing::warn!("pushed {delivered} job(s) a crash left between their set and their queue");
        }
    }
    let identities: Vec<String> = conn.smembers(shared.keys.in_progress_identities()).await?;
    let beats: HashMap<String, f64> = conn.hgetall(shared.keys.last_beat()).await?;
    let server_now = crate::clock::now(&shared.redis).await?;
    let threshold = shared.config.orphan_threshold();
    let mut moved = 0;
    for identity in identities {
        if identity == shared.identity {
            continue;
        }
        let last = beats.get(&identity).copied().unwrap_or(0.0);
        if server_now - last < threshold {
            continue;
        }
        tracing::warn!(
            "process {identity} has not beaten for {:.0}s: recovering its jobs",
            server_now - last
        );
        moved += requeue_held(shared, &identity, threshold.ceil() as u64).await?;
        if shared.keys.is_sharded_by_queue() && crate::in_progress::count_held(shared, &identity).await? > 0 {
            // Left for the next pass (it beat again, or a job could not move).
            continue;
        }
        let _forgot: i64 = SCRIPTS
            .forget_identity
            .key(shared.keys.in_progress_identities())
            .key(shared.keys.last_beat())
            .key(shared.keys.in_progress(&identity))
            .arg(&identity)
            .arg(threshold.ceil() as u64)
            .arg(crate::clock::fallback())
            .invoke_async(&mut conn)
            .await?;
    }
    Ok(moved)
}

/// Puts every job `identity` holds in progress back on its queue.
/// `threshold` 0 skips the staleness check (our own jobs, at shutdown).
pub(crate) async fn requeue_held(shared: &Shared, identity: &str, threshold: u64) -> Result<usize> {
    let mut moved = 0;
    let mut checked_queue = None;
    for Held { queue, entry, raw } in crate::in_progress::held_by(shared, identity).await? {
        // Sharded by queue, the script cannot see the owner's last beat: it
        // is re-checked here before each queue's jobs.
        if shared.keys.is_sharded_by_queue() && threshold > 0 && checked_queue.as_ref() != Some(&queue) {
            if beat_within(shared, identity, threshold).await? {
                tracing::info!("process {identity} beat again: leaving its jobs alone");
                return Ok(moved);
            }
            checked_queue = Some(queue.clone());
        }
        match Job::parse(&raw) {
            Ok(job) => {
                let result = requeue_one(shared, identity, &raw, &job, threshold, &entry, &queue).await?;
                match result {
                    1 => moved += 1,
                    -1 => {
                        tracing::info!("process {identity} beat again: leaving its jobs alone");
                        return Ok(moved);
                    }
                    _ => {}
                }
            }
            Err(reason) => {
                crate::completion::bury_unparseable(shared, identity, &entry, &queue, &raw, &reason).await?;
            }
        }
    }
    Ok(moved)
}

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
    let queue_key = shared.keys.queue(queue);
    let run_lock = JobLocks::of(job, &shared.keys).run_lock;
    let result: i64 = SCRIPTS
        .requeue_in_progress
        .key(shared.keys.in_progress(identity))
        .key(shared.keys.queues())
        .key(&queue_key)
        .key(shared.keys.last_beat())
        .key(run_lock.as_ref().unwrap_or(&queue_key))
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
        .invoke_async(&mut shared.redis.conn())
        .await?;
    Ok(result)
}

/// Has `identity` beaten within `threshold` seconds (Redis's clock)?
async fn beat_within(shared: &Shared, identity: &str, threshold: u64) -> Result<bool> {
    let beat: Option<f64> = shared.redis.conn().hget(shared.keys.last_beat(), identity).await?;
    let server_now = crate::clock::now(&shared.redis).await?;
    Ok(server_now - beat.unwrap_or(0.0) < threshold as f64)
}

/// Sharded by queue: puts one job back onto queue `from`, whose slot holds
/// `identity`'s in-progress hash for it, in one script; then lists the
/// queue and re-takes the job's periodic run lock on the namespace's slot.
/// A job whose failure was filed before its entry could be taken off (a
/// crash between the two steps, see completion.rs) is only taken off.
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
    let queue_key = keys.queue(from);
    // KEYS[2], [4] and [5] are not touched (no listing, no staleness
    // check, no lock here) but must be on the queue's slot.
    let result: i64 = SCRIPTS
        .requeue_in_progress
        .key(&in_progress)
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
        .invoke_async(&mut conn)
        .await?;
    if result == 1 {
        let _: i64 = conn.sadd(keys.queues(), from).await?;
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
