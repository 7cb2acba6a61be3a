//! Locks a job owns (value = its jid): the run lock of an `until_executed`
//! periodic entry (`NS:periodic:running:<pjid>`) and the lock of a unique
//! job (`NS:unique:<digest>`). Every change is compare-and-act on the
//! owner jid (docs/internals.md, "Periodic jobs"), inside the script that moves the
//! job, or through `owned_lock.lua`.
//!
//! The run lock's lifetime:
//! - taken by the slot's claim with the queued TTL (`unique_lock_ttl`),
//!   covering however long the job waits in its queue;
//! - shortened to [`active_ttl`] when a slot starts the job, and kept at
//!   that by every heartbeat while it runs — so a run whose process
//!   vanished without its job being recovered frees the entry in minutes;
//! - [`active_ttl`] outlives the recovery of a dead process's job
//!   (`orphan_threshold` plus one orphan check, plus a minute): the lock is
//!   still there, still owned, when recovery requeues the job and re-takes
//!   it atomically. A shorter TTL let it lapse first: the ticker fired the
//!   next slot while the recovered run was still to come;
//! - extended over the retry delay on a retried failure;
//! - released on success and on the final failure.
//!
//! A unique job's lock lasts `unique_for` from when the job is due, and is
//! extended the same way over a retry delay (to the delay plus
//! `unique_for`), so no duplicate gets in while the original waits to be
//! retried; it is released on success and on the final failure.

use crate::config::Config;
use crate::job::Job;
use crate::keys::Keys;
use crate::scripts::SCRIPTS;

/// The locks `job` owns, as keys.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct JobLocks {
    pub run_lock: Option<String>,
    pub unique: Option<String>,
}

impl JobLocks {
    pub fn of(job: &Job, keys: &Keys) -> Self {
        JobLocks {
            run_lock: job.run_lock_pjid().map(|pjid| keys.periodic_running(pjid)),
            unique: job.unique_digest().map(|digest| keys.unique(digest)),
        }
    }

    /// Every lock, for release on success.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        self.run_lock.iter().chain(self.unique.iter())
    }
}

/// Run-lock TTL while the job waits in a queue. Whole seconds: it goes into
/// `SET ... EX`, which refuses a fraction (a fractional TTL made every
/// claim fail).
pub(crate) fn queued_ttl(config: &Config) -> u64 {
    config.unique_lock_ttl_secs()
}

/// Run-lock TTL while the job runs: outlives the recovery of its job if
/// the process dies (see the module docs).
pub(crate) fn active_ttl(config: &Config) -> u64 {
    (config.orphan_threshold() + config.orphan_check_interval().as_secs_f64() + 60.0).ceil() as u64
}

/// Run-lock TTL for a job waiting `delay` seconds in the retry set.
pub(crate) fn retry_ttl(config: &Config, delay: f64) -> u64 {
    (delay.max(0.0).ceil() as u64).saturating_add(queued_ttl(config))
}

/// Unique-lock TTL for `job` waiting `delay` seconds in the retry set: the
/// wait plus its `unique_for`, whole seconds.
pub(crate) fn unique_retry_ttl(job: &Job, delay: f64) -> u64 {
    (delay.max(0.0).ceil() as u64).saturating_add(job.unique_for_secs().unwrap_or(0.0).ceil() as u64)
}

/// Extends each `(lock, owner)` to `ttl` seconds where it still holds that
/// owner. Returns how many were extended.
pub(crate) async fn expire_owned(
    conn: &mut crate::connection::Conn,
    locks: &[(String, String)],
    ttl: u64,
) -> redis::RedisResult<i64> {
    owned(conn, "expire", locks, ttl).await
}

async fn owned(
    conn: &mut crate::connection::Conn,
    op: &str,
    locks: &[(String, String)],
    ttl: u64,
) -> redis::RedisResult<i64> {
    if locks.is_empty() {
        return Ok(0);
    }
    let mut invocation = SCRIPTS.owned_lock.prepare_invoke();
    invocation.arg(op).arg(ttl);
    for (key, owner) in locks {
        invocation.key(key).arg(owner);
    }
    invocation.invoke_async(conn).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_whole_seconds_and_active_outlives_recovery() {
        let mut config = Config::default();
        config.set_unique_lock_ttl(10.2).unwrap();
        config.set_orphan_threshold(30.5).unwrap();
        config.set_orphan_check_interval(5.0).unwrap();
        assert_eq!(queued_ttl(&config), 11);
        assert_eq!(active_ttl(&config), 96);
        assert_eq!(retry_ttl(&config, 2.5), 14);
    }

    #[test]
    fn locks_come_from_the_job_fields() {
        let keys = Keys::new("ns");
        let job = Job::new("A")
            .field("periodic_pjid", "p1".into())
            .field("periodic_until_executed", true.into())
            .field("unique_digest", "d1".into());
        let locks = JobLocks::of(&job, &keys);
        assert_eq!(locks.run_lock.as_deref(), Some("ns:periodic:running:p1"));
        assert_eq!(locks.unique.as_deref(), Some("ns:unique:d1"));
        let plain = Job::new("A").field("periodic_pjid", "p1".into());
        assert_eq!(JobLocks::of(&plain, &keys), JobLocks::default());
    }
}
