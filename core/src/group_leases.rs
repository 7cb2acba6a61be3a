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
use redis::AsyncCommands;

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

/// A sequence's job filed to retry holds its key (see `group_lease.lua`):
/// its lease (taken by `owner` under in-progress `entry` from `queue`)
/// becomes a hold until the retry is back at the head of its group.
pub(crate) struct RetryHold {
    queue: String,
    group: String,
    /// The lease's field, `"<identity> <token>"`.
    field: String,
    jid: String,
    /// The retry's entry in `NS:retry`.
    entry: String,
}

impl RetryHold {
    /// The hold of `job` filed as `plan` says: a sequence's job retried,
    /// that took a lease. `None` for any other.
    pub fn of(
        shared: &Shared,
        owner: &str,
        entry: &str,
        queue: &str,
        job: &Job,
        plan: &crate::retry::FailurePlan,
    ) -> Option<RetryHold> {
        if plan.disposition != crate::retry::Disposition::Retry || !job.in_sequence() {
            return None;
        }
        let lease = Lease::of(shared, queue, job, entry.parse().ok()?)?;
        Some(RetryHold {
            queue: queue.to_string(),
            field: format!("{owner} {}", lease.token),
            group: lease.group,
            jid: job.jid_str().to_string(),
            entry: plan.payload.clone(),
        })
    }

    /// What `fail.lua` needs to make the lease the hold in the step that
    /// files the job (on one slot): the queue's leases and holds, the
    /// lease's field and the group.
    pub fn in_fail_script(&self, keys: &crate::keys::Keys) -> (String, String, String, String) {
        (
            keys.group_leases(&self.queue),
            keys.group_holds(&self.queue),
            self.field.clone(),
            self.group.clone(),
        )
    }

    /// Sharded by queue (the retry set on another slot than the leases):
    /// the lease becomes the hold first, on the queue's slot, before the
    /// job is filed (`group_hold.lua`); safe to repeat.
    pub async fn take(&self, shared: &Shared) -> redis::RedisResult<()> {
        let keys = &shared.keys;
        let value = format!("{}\n{}\n{}", self.group, self.entry, self.field);
        let _: i64 = hold_script(keys, &self.queue)
            .arg("take")
            .arg(&self.jid)
            .arg(value)
            .arg(&self.field)
            .invoke_async(&mut shared.redis.conn())
            .await?;
        Ok(())
    }
}

/// `group_hold.lua` with `queue`'s keys, ready for its arguments.
fn hold_script(keys: &crate::keys::Keys, queue: &str) -> redis::ScriptInvocation<'static> {
    let mut invocation = SCRIPTS.group_hold.prepare_invoke();
    invocation
        .key(keys.group_leases(queue))
        .key(keys.group_holds(queue))
        .key(keys.group_running(queue))
        .key(keys.group_parked(queue))
        .key(keys.group_ring(queue));
    invocation
}

/// Ends, for each capped queue this process serves, the leases whose jobs
/// are no longer in progress where they were taken; returns how many.
pub(crate) async fn sweep(shared: &Shared) -> Result<usize> {
    let keys = &shared.keys;
    // Sharded by queue, a queue's leases and the in-progress hashes they
    // name are on its slot, the retry set is not: the holds are swept
    // apart (sweep_holds).
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
            .arg(if sharded { "1" } else { "" })
            .invoke_async(&mut shared.redis.conn())
            .await?;
        ended += n;
        if sharded {
            ended += sweep_holds(shared, queue).await?;
        }
    }
    Ok(ended)
}

/// Sharded by queue: ends the holds of `queue`'s sequences whose job is
/// nowhere on its way back (a retry deleted or killed by hand, or a job
/// recovered before it was filed). Each hold names where its job was
/// (group_hold.lua); the places are read in the order the job passes
/// through them (in progress, the retry set, the outbox), each written
/// before the one before it is let go, so a job on its way is always
/// found. One that has landed ended its hold as it did (push_once.lua).
async fn sweep_holds(shared: &Shared, queue: &str) -> Result<usize> {
    let keys = &shared.keys;
    let holds: Vec<(String, String)> = shared.redis.conn().hgetall(keys.group_holds(queue)).await?;
    let mut ended = 0;
    for (jid, value) in holds {
        let mut parts = value.splitn(3, '\n');
        let (Some(group), Some(entry), Some(field)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if on_its_way(shared, queue, &jid, entry, field).await? {
            continue;
        }
        let n: i64 = hold_script(keys, queue)
            .arg("end")
            .arg(&jid)
            .arg(&value)
            .arg(group)
            .arg(keys.wake())
            .arg(queue)
            .invoke_async(&mut shared.redis.conn())
            .await?;
        ended += n as usize;
    }
    Ok(ended)
}

/// Is a held sequence job still on its way back to its group: in progress
/// where it failed (`field`: "<identity> <token>"), waiting in the retry
/// set (`entry`), or handed over in the outbox?
async fn on_its_way(shared: &Shared, queue: &str, jid: &str, entry: &str, field: &str) -> Result<bool> {
    let keys = &shared.keys;
    let mut conn = shared.redis.conn();
    if let Some((identity, token)) = field.rsplit_once(' ') {
        if conn.hexists(keys.in_progress_from(identity, queue), token).await? {
            return Ok(true);
        }
    }
    let waiting: Option<f64> = conn.zscore(keys.retry(), entry).await?;
    if waiting.is_some() {
        return Ok(true);
    }
    // Its hand-over's id is the jid, a dash and a random part (the jid's
    // glob characters escaped).
    let mut pattern = String::with_capacity(jid.len() + 4);
    for c in jid.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push_str("-*");
    let mut handed = conn
        .hscan_match::<_, _, (String, String)>(keys.outbox(), pattern)
        .await?;
    Ok(futures_util::StreamExt::next(&mut handed).await.is_some())
}
