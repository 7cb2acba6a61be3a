//! Sidekiq's formats, for the `sidekiq` layout (docs/sidekiq.md): what a
//! job, a failure and a process record look like where Sidekiq processes,
//! clients and its Web UI read them. The keys are [`crate::keys::Keys`]'s.
//!
//! Where the two differ:
//! - `retry_count` counts retries in Sidekiq (absent before the first
//!   failure, 0 after it), failures in cogworker (1 after the first);
//! - `error_backtrace` is Base64(zlib(JSON array)) in Sidekiq (6.0 on),
//!   stored only when the job asks with `backtrace` (true, or how many
//!   lines), an array of lines in cogworker;
//! - a scheduled job's entry in `schedule` has no `at` (its score says
//!   when): Sidekiq's poller pushes an entry with one back onto the
//!   schedule, for ever;
//! - Sidekiq 8 writes `created_at`/`enqueued_at` as integer milliseconds
//!   (so do pushes with `sidekiq_version = 8`:
//!   [`Keys::job_time`](crate::keys::Keys::job_time)); every reader of a
//!   job's times takes both ([`epoch_seconds`]).

use base64::Engine;
use serde_json::Value;
use std::io::Write;

/// A job's failures so far, from its `retry_count` as the layout keeps it.
pub(crate) fn failures_so_far(job: &crate::job::Job, sidekiq: bool) -> u32 {
    match sidekiq {
        true => job
            .get("retry_count")
            .and_then(Value::as_u64)
            .map_or(0, |n| n.min(u32::MAX as u64 - 1) as u32 + 1),
        false => job.retry_count(),
    }
}

/// The `retry_count` to store after `failures` failures.
pub(crate) fn stored_retry_count(failures: u32, sidekiq: bool) -> u32 {
    match sidekiq {
        true => failures.saturating_sub(1),
        false => failures,
    }
}

/// `job` as an entry of the schedule: its score says when, so in Sidekiq's
/// layout it carries no `at` (Sidekiq's poller pushes an entry that has
/// one back onto the schedule, for ever); cogworker's keeps it.
pub(crate) fn as_scheduled(job: &mut crate::job::Job, sidekiq: bool) {
    if sidekiq {
        job.remove("at");
    }
}

/// How many backtrace lines a job asks Sidekiq to keep (`backtrace`: true
/// for all, a number for that many); `None` keeps none.
pub(crate) fn backtrace_wanted(job: &crate::job::Job) -> Option<usize> {
    match job.get("backtrace")? {
        Value::Bool(true) => Some(usize::MAX),
        other => other.as_u64().filter(|n| *n > 0).map(|n| n as usize),
    }
}

/// Lines as Sidekiq stores a backtrace: Base64 (with its line breaks, as
/// Ruby's `Base64.encode64`) of the zlib stream of the JSON array.
pub(crate) fn compress_backtrace(lines: &[Value]) -> String {
    let json = Value::Array(lines.to_vec()).to_string();
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(json.as_bytes());
    let compressed = encoder.finish().unwrap_or_default();
    let encoded = base64::engine::general_purpose::STANDARD.encode(compressed);
    let mut wrapped = String::with_capacity(encoded.len() + encoded.len() / 60 + 1);
    for chunk in encoded.as_bytes().chunks(60) {
        wrapped.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        wrapped.push('\n');
    }
    wrapped
}

/// A stored `error_backtrace` as lines: an array (cogworker, Sidekiq
/// before 6.0) or Sidekiq's compressed string; `None` for anything else.
pub fn backtrace_lines(value: &Value) -> Option<Vec<String>> {
    let lines = |lines: &[Value]| {
        lines
            .iter()
            .map(|l| l.as_str().unwrap_or_default().to_string())
            .collect()
    };
    match value {
        Value::Array(array) => Some(lines(array)),
        Value::String(text) => {
            let packed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let compressed = base64::engine::general_purpose::STANDARD.decode(packed).ok()?;
            let mut json = Vec::new();
            let mut decoder = flate2::write::ZlibDecoder::new(&mut json);
            decoder.write_all(&compressed).ok()?;
            decoder.finish().ok()?;
            match serde_json::from_slice(&json).ok()? {
                Value::Array(array) => Some(lines(&array)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Epoch seconds from a job's time field: a float of seconds (cogworker,
/// Sidekiq up to 7) or an integer of milliseconds (Sidekiq 8). A number
/// past the year 5138 in seconds is taken for milliseconds.
pub fn epoch_seconds(value: &Value) -> Option<f64> {
    let number = value.as_f64()?;
    Some(if number > 1e11 { number / 1000.0 } else { number })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Job;
    use serde_json::json;

    #[test]
    fn retry_count_counts_retries_in_sidekiq_failures_in_cogworker() {
        let fresh = Job::new("A");
        assert_eq!(failures_so_far(&fresh, true), 0);
        assert_eq!(failures_so_far(&fresh, false), 0);
        let retried = Job::new("A").field("retry_count", json!(0));
        assert_eq!(failures_so_far(&retried, true), 1);
        assert_eq!(failures_so_far(&retried, false), 0);
        assert_eq!(stored_retry_count(1, true), 0);
        assert_eq!(stored_retry_count(1, false), 1);
        let huge = Job::new("A").field("retry_count", json!(u64::MAX));
        assert_eq!(failures_so_far(&huge, true), u32::MAX);
    }

    #[test]
    fn a_backtrace_round_trips_through_sidekiqs_compressed_form() {
        let lines = vec![json!("app/jobs/a.rb:3:in `perform'"), json!("é")];
        let stored = compress_backtrace(&lines);
        assert!(stored.ends_with('\n'));
        assert_eq!(
            backtrace_lines(&Value::String(stored)),
            Some(vec!["app/jobs/a.rb:3:in `perform'".to_string(), "é".to_string()])
        );
        assert_eq!(backtrace_lines(&json!(["x"])), Some(vec!["x".to_string()]));
        assert_eq!(backtrace_lines(&json!("not base64 !")), None);
        assert_eq!(backtrace_lines(&json!(3)), None);
    }

    #[test]
    fn a_job_asks_for_its_backtrace() {
        assert_eq!(backtrace_wanted(&Job::new("A")), None);
        assert_eq!(
            backtrace_wanted(&Job::new("A").field("backtrace", json!(true))),
            Some(usize::MAX)
        );
        assert_eq!(backtrace_wanted(&Job::new("A").field("backtrace", json!(5))), Some(5));
        assert_eq!(backtrace_wanted(&Job::new("A").field("backtrace", json!(false))), None);
        assert_eq!(backtrace_wanted(&Job::new("A").field("backtrace", json!(-1))), None);
        assert_eq!(backtrace_wanted(&Job::new("A").field("backtrace", json!(1e300))), None);
        assert_eq!(backtrace_wanted(&Job::new("A").field("backtrace", json!("all"))), None);
        assert!(backtrace_wanted(&Job::new("A").field("backtrace", json!(u64::MAX))).is_some());
    }

    #[test]
    fn times_are_read_in_seconds_or_milliseconds() {
        assert_eq!(epoch_seconds(&json!(1_700_000_000.5)), Some(1_700_000_000.5));
        assert_eq!(epoch_seconds(&json!(1_700_000_000_500u64)), Some(1_700_000_000.5));
        assert_eq!(epoch_seconds(&json!("x")), None);
    }
}
