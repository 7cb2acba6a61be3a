//! Job results, for jobs pushed with `result_ttl`: the outcome is kept in
//! `NS:result:<jid>` (JSON: `status`, `jid`, `class`, `queue`,
//! `retry_count`, `at` (when it got that status), `started_at` and
//! `finished_at` once it ran, `worker` (the identity of the process that
//! ran it), `args` and `created_at` (so a result says what was asked), and
//! `value` or `error_class` / `error_message` / `error_backtrace`) for
//! `result_ttl` seconds after the job settles. It is
//! written in the same script call as the acknowledgement (`ack.lua`) or
//! the failure (`fail.lua`); a push writes `queued` or `scheduled` in its
//! script (`push.lua` or `push_unique.lua`), and a batch's open writes
//! `waiting` for the callbacks (and workflow steps) it will hand over
//! (`batch_open.lua`), so a job with `result_ttl` has a record from the
//! moment its jid is known; a slot that begins the job has the
//! completion task write `running` before that job's outcome. Once the outcome is final (`succeeded`, `failed`, `dead`) a token
//! goes on `NS:result_ready:<jid>`, which waiters block on.

use crate::job::{float, Job};
use crate::retry::Disposition;
use serde_json::{json, Value};

/// Statuses after which nothing more happens to a job.
pub const FINAL: [&str; 5] = ["succeeded", "failed", "dead", "expired", "cancelled"];

/// How long a `queued`/`scheduled` status lasts beyond the job's due time
/// and its `result_ttl`: a day of waiting on a queue.
pub(crate) const PENDING_SLACK_SECS: u64 = 86_400;

pub(crate) fn base(job: &Job, status: &str, at: f64) -> Value {
    json!({
        "status": status,
        "jid": job.jid_str(),
        "class": job.class(),
        "queue": job.queue_name(),
        "retry_count": job.retry_count(),
        "at": float(at),
        "args": job.get("args").cloned().unwrap_or(Value::Array(Vec::new())),
        "created_at": job.get("created_at").cloned().unwrap_or(Value::Null),
    })
}

fn ran(job: &Job, status: &str, at: f64, started_at: f64, worker: &str) -> Value {
    let mut record = base(job, status, at);
    record["started_at"] = float(started_at);
    record["worker"] = Value::from(worker);
    record
}

/// The record a push writes, and its TTL: `queued`, or `scheduled` with
/// the time it is due.
pub(crate) fn pushed(job: &Job, now: f64, ttl: u64) -> (String, u64) {
    match job.run_at().filter(|at| *at > now) {
        Some(due) => {
            let mut record = base(job, "scheduled", now);
            record["due_at"] = float(due);
            let wait = (due - now).ceil() as u64;
            (
                record.to_string(),
                ttl.saturating_add(wait).saturating_add(PENDING_SLACK_SECS),
            )
        }
        None => (
            base(job, "queued", now).to_string(),
            ttl.saturating_add(PENDING_SLACK_SECS),
        ),
    }
}

/// The record of a job handed over later (a batch callback, a workflow's
/// step after the first), written when its batch opens so that a missing
/// record always means none will come: `waiting` until it runs, for as
/// long as its batch may stay open (`batch_ttl`) and its `result_ttl`.
pub(crate) fn waiting(job: &Job, now: f64, ttl: u64, batch_ttl: u64) -> (String, u64) {
    (
        base(job, "waiting", now).to_string(),
        ttl.saturating_add(batch_ttl).saturating_add(PENDING_SLACK_SECS),
    )
}

/// The record of a job a slot has begun, and its TTL (it may run long).
pub(crate) fn running(job: &Job, started_at: f64, ttl: u64, worker: &str) -> (String, u64) {
    let record = ran(job, "running", started_at, started_at, worker);
    (record.to_string(), ttl.saturating_add(PENDING_SLACK_SECS))
}

/// The record of a success: `value` is what the handler returned (null
/// for handlers that return nothing).
pub(crate) fn succeeded(job: &Job, value: Option<&Value>, started_at: f64, finished_at: f64, worker: &str) -> String {
    let mut record = ran(job, "succeeded", finished_at, started_at, worker);
    record["finished_at"] = float(finished_at);
    record["value"] = value.cloned().unwrap_or(Value::Null);
    record.to_string()
}

/// The record of a failure as filed (`payload` is the job as filed, with
/// its error fields and new retry count), and whether it is final.
pub(crate) fn failed(
    payload: &Job,
    disposition: Disposition,
    started_at: f64,
    at: f64,
    worker: &str,
) -> (String, bool) {
    let status = match disposition {
        Disposition::Retry => "retrying",
        Disposition::Dead => "dead",
        Disposition::Discard => "failed",
        Disposition::Expired => "expired",
        Disposition::ExpiredDead => "dead",
        Disposition::Cancelled => "cancelled",
        Disposition::Reschedule => {
            let mut record = base(payload, "scheduled", at);
            record["due_at"] = payload.get("at").cloned().unwrap_or(Value::Null);
            return (record.to_string(), false);
        }
    };
    let mut record = ran(payload, status, at, started_at, worker);
    record["finished_at"] = float(at);
    for field in ["error_class", "error_message", "error_backtrace"] {
        record[field] = payload.get(field).cloned().unwrap_or(Value::Null);
    }
    (record.to_string(), disposition != Disposition::Retry)
}

/// The status a record says, brought up to date: a `scheduled` job that
/// is due now is `queued`.
pub(crate) fn current_status(record: &Value, now: f64) -> String {
    let status = record["status"].as_str().unwrap_or("unknown");
    match (status, record["due_at"].as_f64()) {
        ("scheduled", Some(due)) if due <= now => "queued".to_string(),
        _ => status.to_string(),
    }
}

/// What `result(jid)` answers in every language: the value a job returned,
/// its failure for good, or the status of a job without a final outcome.
/// The hosts map these to their idioms (a value, a raised `JobFailed`, a
/// `Pending`); the mapping from a record's status is decided here.
#[derive(Clone, Debug, PartialEq)]
pub enum JobOutcome {
    /// `succeeded`: what the handler returned (null for nothing).
    Succeeded(Value),
    /// `dead`, or `failed` with retries off: the whole record (`status`,
    /// `error_class`, `error_message`, `error_backtrace`, ...).
    Failed(Value),
    /// `queued`, `scheduled`, `waiting` (a batch callback or a workflow
    /// step not yet handed over), `running`, `retrying`, or `unknown` (no
    /// result kept: pushed without `result_ttl`, never pushed, or expired;
    /// nothing more will come, so a wait for it ends at once).
    Pending(String),
}

impl JobOutcome {
    /// The outcome a kept record (or none) says.
    pub fn of(record: Option<Value>) -> Self {
        let Some(mut record) = record else {
            return JobOutcome::Pending("unknown".into());
        };
        match record["status"].as_str().unwrap_or("unknown") {
            "succeeded" => JobOutcome::Succeeded(record.get_mut("value").map(Value::take).unwrap_or(Value::Null)),
            "failed" | "dead" | "expired" | "cancelled" => JobOutcome::Failed(record),
            other => JobOutcome::Pending(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_status_decides_the_outcome() {
        assert_eq!(JobOutcome::of(None), JobOutcome::Pending("unknown".into()));
        let done = json!({"status": "succeeded", "value": [1]});
        assert_eq!(JobOutcome::of(Some(done)), JobOutcome::Succeeded(json!([1])));
        for status in ["failed", "dead", "expired", "cancelled"] {
            let record = json!({"status": status, "jid": "j", "error_class": "E", "error_message": "m"});
            assert_eq!(JobOutcome::of(Some(record.clone())), JobOutcome::Failed(record.clone()));
        }
        for status in ["queued", "scheduled", "waiting", "running", "retrying"] {
            let record = json!({"status": status});
            assert_eq!(JobOutcome::of(Some(record)), JobOutcome::Pending(status.into()));
        }
    }
}
