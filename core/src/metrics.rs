//! Per-class execution metrics: gathered by the completion task as jobs
//! settle and written with an acknowledgement (`ack.lua`, through
//! `scripts/metrics.lua`) once a second: no round trip of their own, and
//! no cost per job.
//!
//! - `NS:metrics:<minute>` (minute = epoch seconds / 60), a hash kept 72 h:
//!   for each class `<class>|h<i>` (how many executions took at most
//!   [`BUCKETS_SECS`]`[i]`; the last slot is everything longer: their sum
//!   is the executions finished), `<class>|us` (their run time,
//!   microseconds) and `<class>|f` (how many failed). The dashboard's
//!   Metrics page reads these.
//! - `NS:metrics:total`, a hash never expired: the same fields per queue
//!   and class (`<queue>|<class>|us`...), the monotonic counters and
//!   histograms Prometheus scrapes.
//!
//! A second's executions are aggregated here first: a few `HINCRBY`s per
//! class and speed, whatever the number of jobs.

use crate::keys::Keys;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Upper bounds of the run-time histogram's buckets, in seconds (log-spaced
/// 1-2.5-5; one more slot past the last holds everything longer).
pub const BUCKETS_SECS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// Histogram slots: the buckets and the overflow.
pub const SLOTS: usize = BUCKETS_SECS.len() + 1;
/// How long a minute's metrics are kept.
pub const MINUTE_TTL_SECS: u64 = 72 * 3600;
/// The most distinct classes the metrics keep, fleet-wide and for good
/// (`NS:metrics:classes`); executions of classes past it count under
/// [`OTHER_CLASSES`]. Anyone who can push names classes: this bounds what
/// they can make the metrics hashes and `/metrics` hold.
pub const MAX_CLASSES: usize = 1000;
/// The label of the classes past [`MAX_CLASSES`].
pub const OTHER_CLASSES: &str = "(other)";
/// The label of executions of a class no handler in the process runs.
pub const UNKNOWN_CLASS: &str = "(unknown)";

/// The histogram slot a run of `secs` falls in.
pub fn slot(secs: f64) -> usize {
    BUCKETS_SECS
        .iter()
        .position(|bound| secs <= *bound)
        .unwrap_or(BUCKETS_SECS.len())
}

/// The increments of one batch of settled jobs, by key.
#[derive(Default)]
pub(crate) struct MetricsBatch {
    minutes: BTreeMap<u64, HashMap<String, i64>>,
    totals: HashMap<String, i64>,
}

impl MetricsBatch {
    pub fn is_empty(&self) -> bool {
        self.totals.is_empty()
    }

    /// One execution of `class` from `queue`, from `started_at` to
    /// `finished_at` (epoch seconds).
    pub fn record(&mut self, class: &str, queue: &str, started_at: f64, finished_at: f64, failed: bool) {
        let secs = (finished_at - started_at).max(0.0);
        let minute = (finished_at / 60.0).floor().max(0.0) as u64;
        let micros = (secs * 1e6).round() as i64;
        let bucket = format!("h{}", slot(secs));
        let fields = self.minutes.entry(minute).or_default();
        let prefix = format!("{queue}|{class}");
        for (fields, name) in [(fields, class), (&mut self.totals, prefix.as_str())] {
            *fields.entry(format!("{name}|us")).or_default() += micros;
            *fields.entry(format!("{name}|{bucket}")).or_default() += 1;
            if failed {
                *fields.entry(format!("{name}|f")).or_default() += 1;
            }
        }
    }

    /// Adds the metrics section `scripts/metrics.lua` reads (see there):
    /// its keys after the script's others, its arguments last.
    pub fn append_to(&self, invocation: &mut redis::ScriptInvocation<'_>, keys: &Keys) {
        let sections = self.minutes.len() + usize::from(!self.totals.is_empty());
        invocation.arg(sections);
        if sections == 0 {
            return;
        }
        invocation.arg(MAX_CLASSES);
        for (minute, fields) in &self.minutes {
            invocation.key(keys.metrics_minute(*minute));
            append_fields(invocation, MINUTE_TTL_SECS, false, fields);
        }
        if !self.totals.is_empty() {
            invocation.key(keys.metrics_total());
            append_fields(invocation, 0, true, &self.totals);
        }
        invocation.key(keys.metrics_classes());
    }
}

fn append_fields(invocation: &mut redis::ScriptInvocation<'_>, ttl: u64, queued: bool, fields: &HashMap<String, i64>) {
    invocation
        .arg(ttl)
        .arg(if queued { "1" } else { "0" })
        .arg(fields.len());
    for (field, increment) in fields {
        invocation.arg(field).arg(*increment);
    }
}

/// One class's executions over a span of minutes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ClassMetrics {
    /// The job class.
    pub class: String,
    /// Executions finished (succeeded or failed).
    pub processed: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Their total run time, seconds.
    pub total_secs: f64,
    /// Executions per histogram slot ([`BUCKETS_SECS`], then longer).
    pub histogram: Vec<u64>,
}

impl ClassMetrics {
    pub(crate) fn new(class: &str) -> Self {
        ClassMetrics {
            class: class.to_string(),
            histogram: vec![0; SLOTS],
            ..Default::default()
        }
    }

    /// Mean run time, seconds (0 without executions).
    pub fn mean_secs(&self) -> f64 {
        if self.processed == 0 {
            0.0
        } else {
            self.total_secs / self.processed as f64
        }
    }

    pub(crate) fn add(&mut self, field: &str, value: i64) {
        let value = value.max(0) as u64;
        match field {
            "f" => self.failed += value,
            "us" => self.total_secs += value as f64 / 1e6,
            other => {
                if let Some(index) = other.strip_prefix('h').and_then(|i| i.parse::<usize>().ok()) {
                    if let Some(count) = self.histogram.get_mut(index) {
                        *count += value;
                        self.processed += value;
                    }
                }
            }
        }
    }
}

/// One class's executions in one minute.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MinuteMetrics {
    /// The minute's start, epoch seconds.
    pub at: u64,
    /// Executions finished in it.
    pub processed: u64,
    /// Of them, failed.
    pub failed: u64,
}

/// The all-time counters of one queue and class (Prometheus).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TotalMetrics {
    /// The queue the jobs came from.
    pub queue: String,
    /// Processed, failed, run time and histogram.
    pub metrics: ClassMetrics,
}

/// Splits `<name>|<field>` at its last `|` (class names may hold `|`).
pub(crate) fn split_field(key: &str) -> Option<(&str, &str)> {
    key.rsplit_once('|')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_fall_in_log_spaced_slots() {
        assert_eq!(slot(0.0), 0);
        assert_eq!(slot(0.001), 0);
        assert_eq!(slot(0.0011), 1);
        assert_eq!(slot(0.3), 8);
        assert_eq!(slot(300.0), 15);
        assert_eq!(slot(301.0), 16);
        assert_eq!(SLOTS, 17);
    }

    #[test]
    fn a_batch_adds_up_by_class_and_by_queue_and_class() {
        let mut batch = MetricsBatch::default();
        batch.record("A", "q", 120.0, 120.5, false);
        batch.record("A", "q", 121.0, 121.002, true);
        batch.record("B|x", "r", 179.0, 185.0, false);
        let minute = &batch.minutes[&2];
        assert_eq!((minute["A|f"], minute["A|us"]), (1, 502_000));
        assert_eq!((minute["A|h8"], minute["A|h1"]), (1, 1));
        assert_eq!(batch.minutes[&3]["B|x|h12"], 1, "finished in minute 3");
        assert_eq!((batch.totals["q|A|h8"], batch.totals["r|B|x|h12"]), (1, 1));
        let mut metrics = ClassMetrics::new("B|x");
        let (class, field) = split_field("B|x|us").unwrap();
        metrics.add(field, 6_000_000);
        assert_eq!((class, metrics.total_secs), ("B|x", 6.0));
    }
}
