//! The leases of capped groups' running jobs (see `groups.rs` and
//! `scripts/group_lease.lua`): a fetch records one per job it takes from a
//! group with a concurrency cap, in the step that records the job in
//! progress; the process that settles the job ends it right after (one
//! script per batch of settled jobs), and every worker's orphan check
//! sweeps the leases whose jobs are no longer in progress where they were
//! taken: a process that died, or settled a job and died before it ended
//! its lease. Ending a lease twice is harmless (the lease is gone).

use crate::error::Result;
use crate::job::Job;
use crate::scripts::SCRIPTS;
use crate::shared::Shared;

/// A settled job's lease to end: its queue, group and delivery token.
pub(crate) struct Lease {
    queue: String,
    group: String,
    token: u64,
}

impl Lease {
    /// The lease `job`, taken from `queue` under `token`, holds: where its
    /// queue has capped groups and the job is grouped. Reliable fetch only
    /// (basic fetch takes no lease).
    pub fn of(shared: &Shared, queue: &str, job: &Job, token: u64) -> Option<Lease> {
        if !shared.is_reliable() || !shared.levels.is_capped(queue) {
            return None;
        }
        Some(Lease {
            queue: queue.to_string(),
            group: job.group_key()?.to_string(),
            token,
        })
    }
}

/// Ends the leases of jobs this process settled, in one script (sharded
/// by queue, one per queue: each queue's leases are on its slot). Best
/// effort: one not ended here is ended by the next sweep.
pub(crate) async fn end(shared: &Shared, leases: &[Lease]) {
    if !shared.keys.is_sharded_by_queue() {
        return end_in_one_script(shared, leases).await;
    }
    let mut by_queue: std::collections::BTreeMap<&str, Vec<&Lease>> = Default::default();
    for lease in leases {
        by_queue.entry(lease.queue.as_str()).or_default().push(lease);
    }
    for leases in by_queue.into_values() {
        end_in_one_script(shared, leases).await;
    }
}

/// [`end`] for leases whose keys share a slot.
async fn end_in_one_script<'a>(shared: &Shared, leases: impl IntoIterator<Item = &'a Lease>) {
    let mut leases = leases.into_iter().peekable();
    if leases.peek().is_none() {
        return;
    }
    let keys = &shared.keys;
    let mut invocation = SCRIPTS.group_release.prepare_invoke();
    invocation.arg(keys.wake());
    for lease in leases {
        invocation
            .key(keys.group_leases(&lease.queue))
            .key(keys.group_running(&lease.queue))
            .key(keys.group_parked(&lease.queue))
            .key(keys.group_ring(&lease.queue))
            .arg(format!("{} {}", shared.identity, lease.token))
            .arg(&lease.group)
            .arg(&lease.queue);
    }
    if let Err(e) = invocation.invoke_async::<i64>(&mut shared.redis.conn()).await {
        tracing::warn!("ending the leases of capped groups' jobs failed (the next orphan check ends them): {e}");
    }
}

/// Where a sequence's job is filed to retry (`plan`), what `fail.lua`
/// needs to make its lease (taken by `owner` under in-progress `entry`
/// from `queue`) a hold on its key in the same step: its queue's leases
/// and holds, the lease's field and the group. `None` for any other job.
pub(crate) fn held_by_retry(
    shared: &Shared,
    owner: &str,
    entry: &str,
    queue: &str,
    job: &Job,
    plan: &crate::retry::FailurePlan,
) -> Option<(String, String, String, String)> {
    // Sharded by queue no sequence is pushed (a raw payload that says it
    // is one runs as a plain grouped job): fail.lua, on the namespace's
    // slot, cannot reach the queue's leases.
    if plan.disposition != crate::retry::Disposition::Retry || !job.in_sequence() || shared.keys.is_sharded_by_queue() {
        return None;
    }
    let token = entry.parse().ok()?;
    let lease = Lease::of(shared, queue, job, token)?;
    let keys = &shared.keys;
    Some((
        keys.group_leases(queue),
        keys.group_holds(queue),
        format!("{owner} {}", lease.token),
        lease.group,
    ))
}

/// Ends, for each capped queue this process serves, the leases whose jobs
/// are no longer in progress where they were taken; returns how many.
pub(crate) async fn sweep(shared: &Shared) -> Result<usize> {
    let keys = &shared.keys;
    // Sharded by queue, a queue's leases and the in-progress hashes they
    // name are on its slot; the retry set is not, nor needed there (no
    // sequence, whose holds it checks, runs sharded): the holds key
    // stands in for it.
    let sharded = keys.is_sharded_by_queue();
    let mut ended = 0;
    for queue in shared.config.queues().iter().map(|q| q.name.as_str()) {
        if !shared.levels.is_capped(queue) {
            continue;
        }
        let n: usize = SCRIPTS
            .group_sweep
            .key(keys.group_leases(queue))
            .key(keys.group_running(queue))
            .key(keys.group_parked(queue))
            .key(keys.group_ring(queue))
            .key(keys.group_holds(queue))
            .key(if sharded { keys.group_holds(queue) } else { keys.retry() })
            .arg(keys.wake())
            .arg(queue)
            .arg(keys.in_progress_from("", queue))
            .invoke_async(&mut shared.redis.conn())
            .await?;
        ended += n;
    }
    Ok(ended)
}
