//! The pushes that a script of their own decides (see `flow.rs`): unique
//! jobs and singletons, and debounced, replacing and throttled jobs.

use super::Client;
use crate::error::{Error, Result};
use crate::groups::Destination;
use crate::job::Job;
use crate::scripts::SCRIPTS;

impl Client {
    /// Takes the job's unique lock and pushes it, in one script. For a
    /// duplicate, the jid of the job holding the lock. The lock lasts `unique_for` seconds from when the job
    /// is due.
    pub(super) async fn push_unique(&self, mut job: Job, at: f64) -> Result<Option<String>> {
        let digest = job.unique_digest().unwrap_or_default().to_string();
        let run_at = job.run_at().filter(|run_at| *run_at > at);
        // Whole seconds (`SET EX`): the wait until due, rounded, plus
        // `unique_for` rounded up.
        let wait = (run_at.unwrap_or(at) - at).max(0.0).round();
        let ttl = (wait + job.unique_for_secs().unwrap_or(1.0).ceil()) as u64;
        let queue = job.queue_name().to_string();
        // Sharded by queue, an immediate job goes through the outbox: its
        // queue is on another slot than its lock (see outbox.rs).
        let handover = crate::outbox::handover_id(job.jid_str());
        // Where it waits once queued; its ring and group go to the script
        // whatever the mode (a scheduled job's are not used).
        let destination = Destination::of_job(&self.keys, &job);
        let (target, mode) = match run_at {
            Some(_) => {
                crate::sidekiq::as_scheduled(&mut job, self.keys.is_sidekiq());
                (self.keys.schedule(), "schedule")
            }
            None => {
                self.keys.stamp_enqueued(&mut job, at);
                if self.keys.is_sharded_by_queue() {
                    self.check_backlog_of(&job).await?;
                    (self.keys.outbox(), "outbox")
                } else {
                    (destination.list.clone(), "queue")
                }
            }
        };
        let (record, record_ttl) = match job.result_ttl_secs() {
            Some(result_ttl) => crate::results::pushed(&job, at, result_ttl),
            None => (String::new(), 0),
        };
        let mut invocation = SCRIPTS.push_unique.prepare_invoke();
        invocation
            .key(self.keys.unique(&digest))
            .key(self.keys.queues())
            .key(target)
            .arg(job.jid_str())
            .arg(ttl.max(1))
            .arg(mode)
            .arg(&queue)
            .arg(job.to_json())
            .arg(run_at.unwrap_or(at))
            .key(self.keys.result(job.jid_str()))
            .arg(record_ttl)
            .arg(record)
            .arg(self.keys.wake())
            .arg(&handover)
            .key(self.keys.priorities())
            .arg(crate::priority::listed_member(&queue, job.priority_level()))
            .arg(&destination.group_args()[..])
            .key(self.keys.stat("backlog_dropped", None))
            .key(self.keys.stat("backlog_dropped", Some(&crate::retry::day_of(at))));
        // A job of a batch joins it in the same step, if it is pushed.
        if let Some(bid) = job.batch_id() {
            invocation.arg(self.keys.batch_prefix()).arg(bid);
        }
        // A retry of a push that did land finds the lock held by this jid
        // and pushes nothing more.
        let holder: String = self
            .invoke_once_more_on_drop(&invocation)
            .await
            .map_err(crate::error::Error::from_batch_script)?;
        if holder != job.jid_str() {
            tracing::debug!("{job} not pushed: {holder} holds unique lock {digest}");
            return Ok(Some(holder));
        }
        if mode == "outbox" {
            crate::outbox::deliver(&self.redis, &self.keys, &[handover]).await?;
        }
        Ok(None)
    }

    /// Pushes debounced `job` (see flow.rs); returns the jid that will
    /// run: this push's when it began a burst, else the burst's.
    pub(super) async fn push_debounced(&self, job: &Job, at: f64) -> Result<String> {
        let invocation = crate::flow::debounce_push(&self.keys, job, at);
        // A repeat after a lost reply collapses into the push it repeats.
        let (runs, began): (String, i64) = self.invoke_once_more_on_drop(&invocation).await?;
        if began == 0 {
            tracing::debug!("{job} collapsed into {runs} (debounced)");
        }
        Ok(runs)
    }

    /// Pushes replacing `job` (see flow.rs): the jid that will run.
    /// Sharded by queue, in three steps: its queue (level, group) listed
    /// on the namespace's slot, the push on the queue's, the key's index
    /// entry and status record on the namespace's.
    pub(super) async fn push_replacing(&self, job: &Job, at: f64) -> Result<String> {
        let sharded = self.keys.is_sharded_by_queue();
        if sharded {
            let listing = crate::outbox::listing_of(&self.keys, job.queue_name(), job);
            let _: usize = self.invoke_once_more_on_drop(&listing).await?;
        }
        let invocation = crate::flow::replace_push(&self.keys, job, at);
        // A repeat after a lost reply replaces the job it pushed.
        let (runs, _queued): (String, i64) = self
            .invoke_once_more_on_drop(&invocation)
            .await
            .map_err(Error::from_batch_script)?;
        if sharded {
            let listed = crate::flow::replace_listed(&self.keys, job, at, &runs);
            let _: i64 = self.invoke_once_more_on_drop(&listed).await?;
        }
        Ok(runs)
    }

    /// Pushes throttled `job` (see flow.rs); false when it was dropped.
    pub(super) async fn push_throttled(&self, job: &Job, at: f64) -> Result<bool> {
        self.check_backlog_of(job).await?;
        // Sharded by queue, a job queued now is handed over (outbox.rs).
        let handover = self
            .keys
            .is_sharded_by_queue()
            .then(|| crate::outbox::handover_id(job.jid_str()));
        let invocation = crate::flow::throttle_push(&self.keys, job, at, handover.as_deref());
        // A repeat after a lost reply finds the key's window taken: it is
        // delayed a window (or dropped), where a push must never be lost.
        let (what, due): (String, String) = self
            .invoke_once_more_on_drop(&invocation)
            .await
            .map_err(crate::error::Error::from_batch_script)?;
        if what != "queued" {
            tracing::debug!("{job} {what} by its key's throttle (window opens at {due})");
        }
        if let (Some(id), "queued") = (handover, what.as_str()) {
            if let Err(e) = crate::outbox::deliver(&self.redis, &self.keys, &[id]).await {
                tracing::warn!("pushing a throttled job onto its queue failed; recovery pushes it: {e}");
            }
        }
        Ok(what != "dropped")
    }
}
