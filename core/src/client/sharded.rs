//! Sharded by queue (see `keys.rs`), the pushes that reach a queue's own
//! slot after the namespace's step: plain and grouped lists, and the
//! backlog checks and record clean-up around them.

use super::Client;
use crate::error::{Error, Result};
use crate::groups::Destination;
use crate::job::{now, Job};
use crate::scripts::SCRIPTS;

impl Client {
    /// Sharded by queue, a job handed over (outbox.rs) lands on its queue's
    /// slot after it was accepted on the namespace's (counted into its
    /// batch, its unique lock or throttle window taken): a group that
    /// refuses a push past its backlog cap is checked here first. Pushes
    /// racing this check may pass the cap by as many jobs as race it; a
    /// job pushed straight onto its list is checked where it lands, in the
    /// same step (push_once.lua).
    pub(super) async fn check_backlogs(&self, lists: &crate::groups::CappedLists) -> Result<()> {
        for (list, (most, group, n)) in lists {
            let waiting: u64 = self
                .retry_once_on_drop(|mut conn| async move { redis::AsyncCommands::llen(&mut conn, list).await })
                .await?;
            if waiting + *n as u64 > *most {
                return Err(Error::backlog_full(waiting, most, group));
            }
        }
        Ok(())
    }

    /// [`Client::check_backlogs`] for one job handed over.
    pub(super) async fn check_backlog_of(&self, job: &Job) -> Result<()> {
        match crate::groups::refusing_backlog(&self.keys, job) {
            Some((list, most, group)) if self.keys.is_sharded_by_queue() => {
                self.check_backlogs(&[(list, (most, group, 1))].into_iter().collect())
                    .await
            }
            _ => Ok(()),
        }
    }

    /// Sharded by queue, the result records written for jobs whose push
    /// onto their queue's slot was then refused: deleted, so that no
    /// record says a job is queued that never was (best effort: a record
    /// left by a failure here expires with its TTL).
    pub(super) async fn forget_records(&self, payloads: &[String]) {
        let keys: Vec<String> = payloads
            .iter()
            .filter_map(|payload| Job::parse(payload.as_bytes()).ok())
            .map(|job| self.keys.result(job.jid_str()))
            .collect();
        for key in keys {
            if let Err(e) = redis::AsyncCommands::del::<_, i64>(&mut self.redis.conn(), &key).await {
                tracing::warn!("could not delete {key}, the record of a refused push: {e}");
            }
        }
    }

    /// Sharded by queue: pushes onto one queue (its own slot; its result
    /// records and its name were written on the namespace's slot first).
    /// A push that finds the queue empty wakes idle workers.
    pub(super) async fn push_onto_own_slot(&self, queue: &str, level: u8, payloads: &[String]) -> Result<()> {
        let key = self.keys.queue_at(queue, level);
        let length: usize = self
            .retry_once_on_drop(|mut conn| {
                let key = &key;
                async move { redis::AsyncCommands::lpush(&mut conn, key, payloads).await }
            })
            .await?;
        if length == payloads.len() {
            let _: i64 = redis::AsyncCommands::publish(&mut self.redis.conn(), self.keys.wake(), queue).await?;
        }
        Ok(())
    }

    /// Sharded by queue: pushes onto one group's list of a queue, entering
    /// the group in the queue's ring, on the queue's slot (`push_once.lua`
    /// without markers; the queue was listed as grouped first).
    pub(super) async fn push_into_group_on_own_slot(
        &self,
        queue: &str,
        destination: &Destination,
        payloads: &[String],
    ) -> Result<()> {
        let day = crate::retry::day_of(now());
        let mut invocation = SCRIPTS.push_once.prepare_invoke();
        invocation
            .key(&destination.list)
            .key(self.keys.queue_stat(queue, "backlog_dropped", None))
            .key(self.keys.queue_stat(queue, "backlog_dropped", Some(&day)))
            .arg(self.keys.wake())
            .arg(queue)
            .arg(0)
            .arg(&destination.ring)
            .arg(&destination.group)
            .arg("")
            .arg(&destination.declared)
            .arg(&destination.limits)
            .arg("")
            .arg(payloads);
        let _: usize = self
            .invoke_once_more_on_drop(&invocation)
            .await
            .map_err(crate::error::Error::from_batch_script)?;
        Ok(())
    }
}
