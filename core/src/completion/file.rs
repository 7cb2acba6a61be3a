//! Failures filed one `fail.lua` call each: retried, dead or dropped, and
//! the acknowledgement, in one atomic step.

use super::ack::deliver_callbacks;
use super::lines::log_failure;
use super::persist;
use crate::delivery::Delivery;
use crate::events::WorkerEvent;
use crate::handler::Failure;
use crate::in_progress::{own_entry, NOT_HELD};
use crate::job::{now, Job};
use crate::locks::{self, JobLocks};
use crate::results;
use crate::retry::{day_of, dead_bounds, history_entry, plan_failure, Disposition, FailurePlan};
use crate::scripts::SCRIPTS;
use crate::shared::Shared;

/// Files `delivery`'s failure (retry, dead or discard, as its policy says)
/// and tells the death hooks of a job filed in dead.
pub(super) async fn file_failure(shared: &Shared, delivery: &Delivery, failure: &Failure, finished_at: f64) {
    // The retry's due time on the fleet's clock: a host whose clock is
    // behind would file it already due.
    let offset = crate::clock::offset(&shared.redis).await;
    let sidekiq = shared.keys.is_sidekiq();
    let mut plan = plan_failure(&delivery.job, failure, finished_at + offset, &shared.identity, sidekiq);
    plan.started_at = delivery.started_at;
    let history = history_entry(&delivery.job, delivery.started_at, finished_at, Some(failure));
    log_failure(delivery, failure, &plan, finished_at);
    file_delivery(shared, delivery, &plan, &history, "filing a failed job").await;
    if plan.disposition == Disposition::Dead {
        let job = serde_json::from_str(&plan.payload).unwrap_or(serde_json::Value::Null);
        shared.events.emit(WorkerEvent::Died { job });
    }
}

/// Files `delivery` as `plan` says (`fail.lua`), retrying until it is
/// written (`what` names the write in the log).
pub(super) async fn file_delivery(shared: &Shared, delivery: &Delivery, plan: &FailurePlan, history: &str, what: &str) {
    let entry = own_entry(shared, delivery.token);
    persist(shared, what, || {
        file(
            shared,
            &shared.identity,
            &entry,
            &delivery.queue,
            &delivery.raw,
            &delivery.job,
            plan,
            history,
        )
    })
    .await;
}

/// How long a filed failure's marker (sharded by queue) outlives a crash
/// between filing the job and taking its in-progress entry off: recovery
/// must see it (normally it is deleted at once).
pub(super) const FILED_MARKER_TTL_SECS: u64 = 7 * 86_400;

/// Runs `fail.lua` for one job, taking `entry` (the payload `raw`, taken
/// from `queue`) off `owner`'s in-progress key.
///
/// Sharded by queue the entry is on the queue's slot, the retry and dead
/// sets on the namespace's: the job is filed first, with a marker, then its
/// entry is taken off, then the marker is deleted. Each step is safe to
/// repeat (`persist` retries the whole), and recovery takes an entry whose
/// marker it finds off instead of putting it back on its queue.
#[allow(clippy::too_many_arguments)]
pub(super) async fn file(
    shared: &Shared,
    owner: &str,
    entry: &str,
    queue: &str,
    raw: &[u8],
    job: &Job,
    plan: &FailurePlan,
    history: &str,
) -> redis::RedisResult<()> {
    let at = now();
    let today = day_of(at);
    let target = match plan.disposition {
        Disposition::Retry => shared.keys.retry(),
        Disposition::Reschedule => shared.keys.schedule(),
        _ => shared.keys.dead(),
    };
    // A reschedule, an expiry or a cancellation is no failed execution:
    // no History entry; an expiry counts as expired, a cancellation as
    // cancelled, not failed.
    let not_run = matches!(
        plan.disposition,
        Disposition::Reschedule | Disposition::Expired | Disposition::ExpiredDead | Disposition::Cancelled
    );
    let history_max = if not_run { 0 } else { shared.config.history_max() };
    let stat = match plan.disposition {
        Disposition::Expired | Disposition::ExpiredDead => "expired",
        Disposition::Cancelled => "cancelled",
        _ => "failed",
    };
    let (dead_max, dead_min_score) = dead_bounds(&shared.config, at);
    let locks = JobLocks::of(job, &shared.keys);
    let sharded = shared.keys.is_sharded_by_queue() && entry != NOT_HELD;
    let held_at = shared.keys.in_progress_from(owner, queue);
    let filed_marker = shared.keys.filed(owner, entry);
    // A sequence's retry holds its key: its lease becomes a hold (see
    // group_leases.rs), in the step that files it, or sharded by queue
    // (the leases on another slot) just before.
    let retry_hold = crate::group_leases::RetryHold::of(shared, owner, entry, queue, job, plan);
    if sharded {
        let held: bool = redis::AsyncCommands::hexists(&mut shared.redis.conn(), &held_at, entry).await?;
        if !held {
            // Put back on its queue by shutdown or recovery (that copy
            // runs again), or this is a repeat and all is done.
            return Ok(());
        }
        if let Some(hold) = &retry_hold {
            hold.take(shared).await?;
        }
    }
    // Sharded, fail.lua takes nothing off (its in-progress key is this
    // empty one on the namespace's slot).
    let in_progress = shared.keys.in_progress(owner);
    let (entry_here, marker_ttl) = if sharded {
        (NOT_HELD, FILED_MARKER_TTL_SECS)
    } else {
        (entry, 0)
    };
    let held_lease = retry_hold
        .as_ref()
        .filter(|_| !sharded)
        .map(|hold| hold.in_fail_script(&shared.keys));
    let run_lock_ttl = locks::retry_ttl(&shared.config, plan.score - at);
    let unique_ttl = locks::unique_retry_ttl(job, plan.score - at);
    let jid = job.jid_str();
    let (result_ttl, record, final_status) = match job.result_ttl_secs() {
        Some(ttl) => {
            let filed = Job::parse(plan.payload.as_bytes()).unwrap_or_else(|_| job.clone());
            let (record, final_status) = results::failed(&filed, plan.disposition, plan.started_at, at, owner);
            // A rescheduled job's record lasts while it waits, too.
            let wait = if plan.disposition == Disposition::Reschedule {
                (plan.score - at).max(0.0).ceil() as u64
            } else {
                0
            };
            (ttl + wait, record, final_status)
        }
        None => (0, String::new(), false),
    };
    let handed: Vec<String> = SCRIPTS
        .fail
        .key(&in_progress)
        .key(target)
        .key(shared.keys.stat(stat, None))
        .key(shared.keys.stat(stat, Some(&today)))
        .key(shared.keys.attempts(job.jid_str()))
        .key(shared.keys.history())
        .arg(entry_here)
        .arg(raw)
        .arg(plan.disposition.as_str())
        .arg(plan.score)
        .arg(&plan.payload)
        .arg(&plan.attempt)
        .arg(shared.config.dead_timeout_secs().ceil() as u64)
        .arg(history)
        .arg(history_max)
        .arg(dead_max)
        .arg(dead_min_score)
        .key(locks.run_lock.as_ref().unwrap_or(&in_progress))
        .key(locks.unique.as_ref().unwrap_or(&in_progress))
        .arg(if locks.run_lock.is_some() { "1" } else { "0" })
        .arg(if locks.unique.is_some() { "1" } else { "0" })
        .arg(job.jid_str())
        .arg(run_lock_ttl)
        .arg(unique_ttl)
        .key(shared.keys.result(jid))
        .key(shared.keys.result_ready(jid))
        .arg(result_ttl)
        .arg(record)
        .arg(if final_status { "1" } else { "0" })
        .key(&filed_marker)
        .arg(marker_ttl)
        .key(shared.keys.outbox())
        .arg(job.batch_id().unwrap_or(""))
        .arg(shared.keys.batch_prefix())
        .arg(at)
        .key(held_lease.as_ref().map_or(&in_progress, |(leases, ..)| leases))
        .key(held_lease.as_ref().map_or(&in_progress, |(_, holds, ..)| holds))
        .arg(held_lease.as_ref().map_or("", |(_, _, field, _)| field.as_str()))
        .arg(held_lease.as_ref().map_or("", |(.., group)| group.as_str()))
        // Sidekiq counts every run it made as processed, failed ones too.
        .key(shared.keys.stat("processed", None))
        .key(shared.keys.stat("processed", Some(&today)))
        .arg(if shared.keys.is_sidekiq() && !not_run { "1" } else { "0" })
        .invoke_async(&mut shared.redis.conn())
        .await?;
    deliver_callbacks(shared, &handed).await;
    if sharded {
        let mut conn = shared.redis.conn();
        let _: i64 = redis::AsyncCommands::hdel(&mut conn, &held_at, entry).await?;
        let _: i64 = redis::AsyncCommands::del(&mut conn, &filed_marker).await?;
    }
    Ok(())
}
