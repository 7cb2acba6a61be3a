//! Cancelling a job by jid, from any language (see `cancel.rs` for how the
//! workers hear of it): one waiting in the schedule or the retry set is
//! taken off it at once; one on a queue is dropped unrun when a worker
//! takes it; a running one is stopped (a Rust handler's future is dropped)
//! or told (a host's job reads the flag).

use super::{check_search_text, Api, JobSet, SetEntry};
use crate::error::{Error, Result};
use crate::job::now;
use crate::retry::Disposition;
use crate::scripts::SCRIPTS;
use serde_json::Value;

/// Why an entry is taken off its set for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// Cancelled: counted in `NS:stat:cancelled`.
    Cancelled,
    /// Deleted (the dashboard, `Api::delete_from_set`): not counted.
    Deleted,
}

impl Api {
    /// Cancels the job `jid` and says where it was: `scheduled` or
    /// `retrying` (taken off that set now), `running` (stopped or told
    /// within a second), `queued` (dropped unrun when a worker takes it),
    /// `waiting` (a callback or later workflow step kept with `result_ttl`:
    /// dropped unrun when handed over and taken),
    /// or `unknown` (not found where a look costs little: a job on a queue
    /// that keeps no result, one that ended, or one in a set past the
    /// newest [`super::SEARCH_SCAN_MAX`] entries that keeps no result;
    /// should it still wait, it is dropped all the same when a worker
    /// takes it). A cancellation is remembered for a week. No set is
    /// scanned whole.
    pub async fn cancel(&self, jid: &str) -> Result<String> {
        check_search_text("jid", jid)?;
        if jid.is_empty() {
            return Err(Error::invalid_argument("jid", "\"\"", "must not be empty"));
        }
        // Where it runs or waits, read before the cancellation is said: a
        // running job is stopped at once, and its traces go with it.
        let processes = self.processes().await?;
        let running = self
            .busy_in(&processes)
            .await?
            .iter()
            .any(|busy| busy.job["jid"] == jid)
            || self.taken_by_a_worker(jid, &processes).await?;
        let kept = self.result(jid).await?;
        let keys = self.keys();
        let at = now();
        let _: i64 = SCRIPTS
            .cancel
            .key(keys.cancelled())
            .arg(jid)
            .arg(at)
            .arg(at + crate::cancel::REMEMBERED_SECS)
            .arg(keys.wake())
            .arg(crate::cancel::REMEMBERED_MAX)
            .invoke_async(&mut self.conn())
            .await?;
        // Off a set after the cancellation is said: a job that moves to its
        // queue meanwhile is dropped when taken all the same. Looked up
        // without a scan of the set (what a web page may make Redis do): at
        // its kept record's due time, else among the newest entries. One
        // found in neither is dropped when a worker takes it.
        let due = kept
            .as_ref()
            .filter(|record| record["status"] == "scheduled")
            .and_then(|record| record["due_at"].as_f64());
        for (set, status) in [(JobSet::Scheduled, "scheduled"), (JobSet::Retry, "retrying")] {
            let mut found = match due {
                Some(score) if set == JobSet::Scheduled => self.entry_at(set, score, jid).await?,
                _ => None,
            };
            if found.is_none() {
                found = self.find_recent_in_set(set, jid).await?;
            }
            let Some(entry) = found else {
                continue;
            };
            if self.drop_entry(set, &entry, Dropped::Cancelled).await? {
                if let Some(job) = entry.job() {
                    self.keep_cancelled_result(&job).await?;
                }
                return Ok(status.to_string());
            }
        }
        if running {
            return Ok("running".to_string());
        }
        Ok(match kept.as_ref().and_then(|r| r["status"].as_str()) {
            Some(status @ ("queued" | "waiting" | "running")) => status.to_string(),
            _ => "unknown".to_string(),
        })
    }

    /// Is `jid` among the jobs a live process has taken (its in-progress
    /// record: read ahead or running)? A job that began less than a
    /// heartbeat ago is listed there before [`Api::busy`] shows it. One
    /// `HVALS` per process (per queue of it, sharded by queue), each as
    /// long as its slots and read-ahead.
    async fn taken_by_a_worker(&self, jid: &str, processes: &[super::ProcessInfo]) -> Result<bool> {
        let keys = self.keys();
        let quoted = serde_json::to_string(jid).unwrap_or_default();
        for process in processes {
            let held_in: Vec<String> = if keys.is_sharded_by_queue() {
                // The process's queues as its heartbeat lists them ("name,weight").
                let queues = process.info["queues"].as_array().cloned().unwrap_or_default();
                queues
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(|spec| crate::config::QueueSpec::parse(spec).ok())
                    .map(|spec| keys.in_progress_from(&process.identity, &spec.name))
                    .collect()
            } else {
                vec![keys.in_progress(&process.identity)]
            };
            for key in held_in {
                // A list, not a hash, is an earlier release's record: not looked in.
                let payloads: Vec<String> = match redis::AsyncCommands::hvals(&mut self.conn(), &key).await {
                    Ok(payloads) => payloads,
                    Err(e) if e.code() == Some("WRONGTYPE") => Vec::new(),
                    Err(e) => return Err(e.into()),
                };
                // A cheap look at the text first; then the job's own jid.
                let taken = payloads
                    .iter()
                    .filter(|p| p.contains(&quoted))
                    .any(|payload| crate::job::Job::parse(payload.as_bytes()).is_ok_and(|job| job.jid_str() == jid));
                if taken {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Takes a job off `set` for good (cancelled, or deleted); a job of a
    /// batch counts there as failed in the same step, a cancelled one as
    /// cancelled in the stats. False if it was gone.
    pub(super) async fn drop_entry(&self, set: JobSet, entry: &SetEntry, why: Dropped) -> Result<bool> {
        let (bid, jid) = entry.batch_unit();
        let keys = self.keys();
        let at = now();
        let handed: Option<Vec<String>> = SCRIPTS
            .drop_from_set
            .key(self.set_key(set))
            .key(keys.outbox())
            .key(keys.stat("cancelled", None))
            .key(keys.stat("cancelled", Some(&crate::retry::day_of(at))))
            .arg(&entry.raw[..])
            .arg(bid)
            .arg(jid)
            .arg(keys.batch_prefix())
            .arg(at)
            .arg(if why == Dropped::Cancelled { "1" } else { "0" })
            .invoke_async(&mut self.conn())
            .await?;
        self.settled_entry(handed).await
    }

    /// A job cancelled off a set that keeps its result gets its final
    /// record now (and its waiters their token), as a worker would file it.
    async fn keep_cancelled_result(&self, job: &crate::job::Job) -> Result<()> {
        let Some(ttl) = job.result_ttl_secs() else {
            return Ok(());
        };
        let plan = crate::retry::plan_cancelled(job, now(), 0.0);
        let filed = crate::job::Job::parse(plan.payload.as_bytes()).unwrap_or_else(|_| job.clone());
        let (record, _) = crate::results::failed(&filed, Disposition::Cancelled, 0.0, now(), "");
        let keys = self.keys();
        let (result, ready) = (keys.result(job.jid_str()), keys.result_ready(job.jid_str()));
        let ttl = ttl.max(1);
        let _: () = redis::pipe()
            .atomic()
            .set_ex(&result, record, ttl)
            .del(&ready)
            .rpush(&ready, "1")
            .expire(&ready, ttl as i64)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }
}

/// A record once its job is known to be cancelled: a job that has not
/// ended is `cancelled` at once (the worker that takes it, or runs it,
/// files it so soon after, with its own message).
pub(super) fn overlaid(record: &mut Value) {
    let status = record["status"].as_str().unwrap_or("unknown");
    if !crate::results::FINAL.contains(&status) {
        record["status"] = Value::from("cancelled");
        record["error_class"] = Value::from(crate::retry::CANCELLED);
        record["error_message"] = Value::from("cancelled; a worker drops or stops it when it hears");
    }
}
