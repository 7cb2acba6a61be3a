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
use crate::in_progress::Held;
use crate::job::Job;
use crate::requeue::requeue_one;
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
        match crate::group_leases::sweep(&shared).await {
            Ok(0) => {}
            Ok(ended) => tracing::info!("ended {ended} lease(s) of capped groups whose jobs were settled or recovered"),
            Err(e) => tracing::warn!("sweeping capped groups' leases failed (will retry): {e}"),
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
    // Hand-overs a crash left in the outbox: jobs between their set and
    // their queue (sharded by queue), batch callbacks (any layout).
    let delivered = crate::outbox::deliver_all(&shared.redis, &shared.keys).await?;
    if delivered > 0 {
        tracing::warn!("pushed {delivered} job(s) a crash left in the outbox, on their way to their queue");
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

/// Has `identity` beaten within `threshold` seconds (Redis's clock)?
async fn beat_within(shared: &Shared, identity: &str, threshold: u64) -> Result<bool> {
    let beat: Option<f64> = shared.redis.conn().hget(shared.keys.last_beat(), identity).await?;
    let server_now = crate::clock::now(&shared.redis).await?;
    Ok(server_now - beat.unwrap_or(0.0) < threshold as f64)
}
