//! What a failure does to a job (docs/internals.md, "Life of a job"): count it, then retry with
//! backoff, bury in `dead`, or discard. The decision and every payload are
//! built here, in Rust; `fail.lua` only files the result atomically.

use crate::config::Config;
use crate::handler::Failure;
use crate::job::{float, safe_string, Job, Retry, BACKTRACE_LIMIT, ERROR_MESSAGE_LIMIT};
use serde_json::{json, Value};

/// Longest backtrace line stored, in characters.
const BACKTRACE_LINE_LIMIT: usize = 1_000;

/// `error_class` of a job that declares a limiter no process defined.
pub const UNKNOWN_LIMITER: &str = "cogworker::UnknownLimiter";

/// `error_class` of a job filed in dead because it expired unstarted
/// (one pushed with `keep_expired`).
pub const EXPIRED: &str = "cogworker::Expired";

/// `error_class` of a job still over its limiter after `over_limit_max`
/// reschedules.
pub const OVER_LIMIT: &str = "cogworker::OverLimit";

/// `error_class` of a job cancelled (`Api::cancel`) before or while it ran.
pub const CANCELLED: &str = "cogworker::Cancelled";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Disposition {
    Retry,
    Dead,
    Discard,
    /// Back to the schedule, not run: over a rate limiter it declared.
    Reschedule,
    /// Not started by its `expires_at`: dropped, counted as expired.
    Expired,
    /// The same, filed in dead (the job asked for it).
    ExpiredDead,
    /// Cancelled before it began (dropped when taken) or while it ran
    /// (stopped): never run again, counted as cancelled.
    Cancelled,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Retry => "retry",
            Disposition::Dead => "dead",
            Disposition::Discard => "discard",
            Disposition::Reschedule => "reschedule",
            Disposition::Expired => "discard",
            Disposition::ExpiredDead => "dead",
            Disposition::Cancelled => "cancelled",
        }
    }
}

/// Everything `fail.lua` needs to file one failure.
pub(crate) struct FailurePlan {
    pub disposition: Disposition,
    /// Retry-at or died-at (epoch seconds).
    pub score: f64,
    pub payload: String,
    pub attempt: String,
    /// When the failed run began (for a kept result's `started_at`).
    pub started_at: f64,
}

/// The plan for a job over the limiter it declared, for the `count`th
/// time (`now` on the fleet's clock): back to the schedule with its count,
/// due when the limiter said capacity comes back (`retry_in`), or, where it
/// cannot say (a concurrent limiter), after a pause that doubles each
/// time from 1 s up to a minute; jittered so that the jobs it turned away
/// do not all return at once.
pub(crate) fn plan_over_limit(
    job: &Job,
    retry_in: Option<std::time::Duration>,
    count: u32,
    now: f64,
    sidekiq: bool,
) -> FailurePlan {
    let base = match retry_in {
        Some(wait) => wait.as_secs_f64(),
        None => 2f64.powi(count.saturating_sub(1).min(6) as i32).min(60.0),
    };
    let delay = base * (1.0 + rand::random_range(0.0..0.25)) + 0.01;
    let mut next = job.clone();
    next.set("over_limit", Value::from(count));
    next.set("at", float(now + delay));
    crate::sidekiq::as_scheduled(&mut next, sidekiq);
    FailurePlan {
        disposition: Disposition::Reschedule,
        score: now + delay,
        payload: next.to_json(),
        attempt: String::new(),
        started_at: 0.0,
    }
}

/// The plan for a job that expired unstarted (`now` on the fleet's clock):
/// dropped, or, if it asked to be kept, filed in dead as
/// `cogworker::Expired`.
pub(crate) fn plan_expired(job: &Job, now: f64) -> FailurePlan {
    let mut filed = job.clone();
    filed.set("error_class", Value::from(EXPIRED));
    filed.set(
        "error_message",
        Value::from(format!(
            "not started by its expires_at ({:.3}); dropped at {now:.3}",
            job.expiry().unwrap_or(now)
        )),
    );
    filed.set("failed_at", float(now));
    let disposition = if job.keeps_expired() {
        Disposition::ExpiredDead
    } else {
        Disposition::Expired
    };
    FailurePlan {
        disposition,
        score: now,
        payload: filed.to_json(),
        attempt: String::new(),
        started_at: 0.0,
    }
}

/// The plan for a job cancelled by `Api::cancel`: dropped unrun when it
/// was taken, or stopped while running (`started_at`, else 0); not retried.
pub(crate) fn plan_cancelled(job: &Job, now: f64, started_at: f64) -> FailurePlan {
    let mut filed = job.clone();
    filed.set("error_class", Value::from(CANCELLED));
    let message = if started_at > 0.0 {
        "cancelled while it ran; stopped"
    } else {
        "cancelled before it began; dropped"
    };
    filed.set("error_message", Value::from(message));
    filed.set("failed_at", float(now));
    FailurePlan {
        disposition: Disposition::Cancelled,
        score: now,
        payload: filed.to_json(),
        attempt: String::new(),
        started_at,
    }
}

/// Default backoff before retry number `count + 1`:
/// `count⁴ + 15 + rand(10)·(count + 1)` seconds (Sidekiq's curve).
pub fn default_backoff(count: u32) -> f64 {
    let count = count as f64;
    let jitter = rand::random_range(0..10) as f64;
    count.powi(4) + 15.0 + jitter * (count + 1.0)
}

/// `worker` is the identity of the process whose run failed (kept in the
/// attempt's entry); `sidekiq`: the namespace uses Sidekiq's layout, whose
/// `retry_count` and `error_backtrace` are Sidekiq's (see sidekiq.rs).
pub(crate) fn plan_failure(job: &Job, failure: &Failure, now: f64, worker: &str, sidekiq: bool) -> FailurePlan {
    let previous = crate::sidekiq::failures_so_far(job, sidekiq);
    let count = previous.saturating_add(1);
    let mut next = job.clone();
    next.set(
        "retry_count",
        Value::from(crate::sidekiq::stored_retry_count(count, sidekiq)),
    );
    let (class, message, backtrace) = error_fields(failure);
    next.set("error_class", class);
    next.set("error_message", message);
    let backtrace = match (backtrace, sidekiq) {
        (Some(Value::Array(lines)), true) => crate::sidekiq::backtrace_wanted(job).map(|most| {
            let kept = &lines[..lines.len().min(most)];
            Value::String(crate::sidekiq::compress_backtrace(kept))
        }),
        (backtrace, _) => backtrace,
    };
    match backtrace {
        Some(lines) => next.set("error_backtrace", lines),
        None => next.remove("error_backtrace"),
    }
    if previous == 0 && job.get("failed_at").is_none() {
        next.set("failed_at", float(now));
    } else {
        next.set("retried_at", float(now));
    }

    let (disposition, score) = match job.retry_policy() {
        Retry::Discard => (Disposition::Discard, now),
        Retry::Max(max) if count <= max => {
            // A hook's answer past a year is capped there (see job/numbers.rs).
            let delay = failure
                .retry_in
                .filter(|d| d.is_finite() && *d >= 0.0)
                .map(|d| d.min(crate::job::LONGEST_SECS))
                .unwrap_or_else(|| default_backoff(previous));
            (Disposition::Retry, now + delay)
        }
        // Sidekiq's `dead: false`: out of retries, dropped, not buried.
        Retry::Max(_) if job.get("dead") == Some(&Value::Bool(false)) => (Disposition::Discard, now),
        Retry::Max(_) => (Disposition::Dead, now),
    };
    let attempt = json!({
        "attempt": count,
        "failed_at": float(now),
        "outcome": disposition.as_str(),
        "error_class": next.get("error_class"),
        "error_message": next.get("error_message"),
        "worker": worker,
    })
    .to_string();
    FailurePlan {
        disposition,
        score,
        payload: next.to_json(),
        attempt,
        started_at: now,
    }
}

/// A failure's `error_class`, `error_message` and `error_backtrace` (none
/// when empty) as stored: valid UTF-8, each within its bound.
fn error_fields(failure: &Failure) -> (Value, Value, Option<Value>) {
    let backtrace = kept_backtrace(&failure.backtrace);
    (
        Value::String(safe_string(&failure.class, 500)),
        Value::String(safe_string(&failure.message, ERROR_MESSAGE_LIMIT)),
        (!backtrace.is_empty()).then_some(Value::Array(backtrace)),
    )
}

/// At most [`BACKTRACE_LIMIT`] lines, each bounded: a longer backtrace
/// keeps its first and last lines with one saying how many were left out
/// between them. Both ends matter: Python prints the innermost frame and
/// the exception last, Ruby and Rust first.
fn kept_backtrace(lines: &[String]) -> Vec<Value> {
    let line = |text: &String| Value::String(safe_string(text, BACKTRACE_LINE_LIMIT));
    if lines.len() <= BACKTRACE_LIMIT {
        return lines.iter().map(line).collect();
    }
    let tail = (BACKTRACE_LIMIT - 1) / 2;
    let head = BACKTRACE_LIMIT - 1 - tail;
    let omitted = lines.len() - head - tail;
    let mut kept: Vec<Value> = lines[..head].iter().map(line).collect();
    kept.push(Value::String(format!("... {omitted} lines omitted ...")));
    kept.extend(lines[lines.len() - tail..].iter().map(line));
    kept
}

/// One entry of the capped History list; a failed run's with its error's
/// class, message and backtrace (bounded as on the job).
pub(crate) fn history_entry(job: &Job, started_at: f64, now: f64, failure: Option<&Failure>) -> String {
    let mut entry = json!({
        "jid": job.jid_str(),
        "class": job.display_class(),
        "queue": job.queue_name(),
        "status": if failure.is_some() { "failed" } else { "ok" },
        "started_at": float(started_at),
        "duration_ms": ((now - started_at) * 1000.0 * 1000.0).round() / 1000.0,
    });
    if let Some(failure) = failure {
        let (class, message, backtrace) = error_fields(failure);
        entry["error_class"] = class;
        entry["error_message"] = message;
        if let Some(lines) = backtrace {
            entry["error_backtrace"] = lines;
        }
    }
    entry.to_string()
}

/// Dead-set trimming bounds: (most entries, lowest score kept).
pub(crate) fn dead_bounds(config: &Config, now: f64) -> (usize, f64) {
    (config.dead_max_jobs(), now - config.dead_timeout_secs())
}

/// UTC day as `yyyy-mm-dd`, for the per-day counters.
pub(crate) fn day_of(epoch: f64) -> String {
    chrono::DateTime::from_timestamp(epoch as i64, 0)
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_failure_is_retried_within_the_default_window() {
        let job = Job::new("A");
        let plan = plan_failure(&job, &Failure::new("E", "boom"), 1000.0, "w", false);
        assert_eq!(plan.disposition, Disposition::Retry);
        assert!((1015.0..=1024.0).contains(&plan.score), "{}", plan.score);
        let filed = Job::parse(plan.payload.as_bytes()).unwrap();
        assert_eq!(filed.retry_count(), 1);
        assert_eq!(filed.str_field("error_message"), Some("boom"));
        assert!(filed.get("failed_at").is_some());
    }

    #[test]
    fn exhausted_retries_bury_and_retry_false_discards() {
        let job = Job::new("A").retry(Retry::Max(2)).field("retry_count", 2.into());
        let plan = plan_failure(&job, &Failure::new("E", "x"), 5.0, "w", false);
        assert_eq!(plan.disposition, Disposition::Dead);
        let job = Job::new("A").retry(Retry::Max(0));
        assert_eq!(
            plan_failure(&job, &Failure::new("E", "x"), 5.0, "w", false).disposition,
            Disposition::Dead
        );
        let job = Job::new("A").retry(Retry::Discard);
        assert_eq!(
            plan_failure(&job, &Failure::new("E", "x"), 5.0, "w", false).disposition,
            Disposition::Discard
        );
        // Sidekiq's `dead: false`: out of retries, dropped.
        let job = Job::new("A").retry(Retry::Max(0)).field("dead", false.into());
        assert_eq!(
            plan_failure(&job, &Failure::new("E", "x"), 5.0, "w", false).disposition,
            Disposition::Discard
        );
    }

    #[test]
    fn sidekiqs_layout_files_a_failure_as_sidekiq_does() {
        let job = Job::new("A").field("backtrace", 1.into());
        let failure = Failure::new("E", "x").with_backtrace(vec!["a.rb:1".into(), "b.rb:2".into()]);
        let filed = Job::parse(plan_failure(&job, &failure, 5.0, "w", true).payload.as_bytes()).unwrap();
        assert_eq!(filed.get("retry_count"), Some(&0.into()), "Sidekiq counts retries");
        assert!(filed.get("failed_at").is_some() && filed.get("retried_at").is_none());
        let stored = filed.get("error_backtrace").unwrap();
        assert!(stored.is_string(), "compressed: {stored}");
        assert_eq!(
            crate::sidekiq::backtrace_lines(stored),
            Some(vec!["a.rb:1".to_string()])
        );
        let again = Job::parse(plan_failure(&filed, &failure, 6.0, "w", true).payload.as_bytes()).unwrap();
        assert_eq!(again.get("retry_count"), Some(&1.into()));
        assert!(again.get("retried_at").is_some());
        // Asked for no backtrace: Sidekiq keeps none.
        let plain = Job::parse(
            plan_failure(&Job::new("A"), &failure, 5.0, "w", true)
                .payload
                .as_bytes(),
        )
        .unwrap();
        assert!(plain.get("error_backtrace").is_none());
        // Retries exhausted by Sidekiq's count: retry 1 allows one retry.
        let once = Job::new("A").retry(Retry::Max(1)).field("retry_count", 0.into());
        assert_eq!(
            plan_failure(&once, &failure, 7.0, "w", true).disposition,
            Disposition::Dead
        );
    }

    #[test]
    fn handler_delay_overrides_backoff_and_fields_are_bounded() {
        let long = "x".repeat(20_000);
        let failure = Failure::new("E", long)
            .with_backtrace((0..500).map(|i| format!("line {i}")).collect())
            .with_retry_in(2.0);
        let plan = plan_failure(&Job::new("A"), &failure, 100.0, "w", false);
        assert_eq!(plan.score, 102.0);
        let filed = Job::parse(plan.payload.as_bytes()).unwrap();
        assert_eq!(filed.str_field("error_message").unwrap().len(), ERROR_MESSAGE_LIMIT);
        assert_eq!(
            filed.get("error_backtrace").unwrap().as_array().unwrap().len(),
            BACKTRACE_LIMIT
        );
    }

    /// Python prints the innermost frame and the exception last, Ruby
    /// first: a long backtrace keeps both ends, with a line saying what
    /// was left out between them.
    #[test]
    fn a_long_backtrace_keeps_its_first_and_last_lines() {
        let lines: Vec<String> = (0..500).map(|i| format!("frame {i}")).collect();
        let failure = Failure::new("E", "m").with_backtrace(lines);
        let (_, _, backtrace) = error_fields(&failure);
        let kept: Vec<&str> = backtrace
            .as_ref()
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(kept.len(), BACKTRACE_LIMIT);
        assert_eq!((kept[0], kept[BACKTRACE_LIMIT - 1]), ("frame 0", "frame 499"));
        assert!(kept.contains(&"... 301 lines omitted ..."), "{kept:?}");
        let short = Failure::new("E", "m").with_backtrace(vec!["a".into(), "b".into()]);
        assert_eq!(error_fields(&short).2.unwrap(), serde_json::json!(["a", "b"]));
    }

    #[test]
    fn a_failed_runs_history_keeps_its_error_bounded() {
        let failure =
            Failure::new("E", "x".repeat(20_000)).with_backtrace((0..500).map(|i| format!("at {i}")).collect());
        let entry: Value = serde_json::from_str(&history_entry(&Job::new("A"), 1.0, 2.0, Some(&failure))).unwrap();
        assert_eq!(entry["error_class"], "E");
        assert_eq!(entry["error_message"].as_str().unwrap().len(), ERROR_MESSAGE_LIMIT);
        assert_eq!(entry["error_backtrace"].as_array().unwrap().len(), BACKTRACE_LIMIT);
        let ok: Value = serde_json::from_str(&history_entry(&Job::new("A"), 1.0, 2.0, None)).unwrap();
        assert!(ok.get("error_message").is_none());
    }

    #[test]
    fn backoff_grows_with_the_count() {
        assert!(default_backoff(0) < 25.0);
        assert!(default_backoff(10) > 10_000.0);
        assert_eq!(day_of(0.0), "1970-01-01");
    }
}
