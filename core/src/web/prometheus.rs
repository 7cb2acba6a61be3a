//! `GET /metrics`: the state of the namespace in Prometheus' text
//! exposition format (0.0.4): executions and failures by queue and class
//! (all-time counters, see `metrics.rs`), the run-time histogram by queue
//! and class, queue sizes and latencies, busy slots, processes, and the
//! scheduled, retry and dead set sizes. Served by the dashboard and, alone,
//! by `cogworker metrics`.

use super::State;
use crate::api::{Api, JobSet};
use crate::error::Result;
use crate::metrics::{ClassMetrics, BUCKETS_SECS};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::fmt::Write;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(crate) async fn metrics(state: axum::extract::State<State>) -> Response {
    match render(&state.api).await {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("cannot read Redis: {e}")).into_response(),
    }
}

/// A label value escaped as the format asks (backslash, quote, newline).
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A float as Prometheus writes one.
fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        format!("{value}")
    }
}

struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
        if labels.is_empty() {
            let _ = writeln!(self.0, "{name} {}", number(value));
        } else {
            let _ = writeln!(self.0, "{name}{{{}}} {}", labels.join(","), number(value));
        }
    }
}

/// The groups named per queue: a scrape's label set stays bounded however
/// many groups (tenants, keys) a queue has; the rest are `(other)`.
const TOP_GROUPS: usize = 20;

/// Per grouped queue: how many groups, and the jobs waiting (and running,
/// for capped ones) of its [`TOP_GROUPS`] biggest groups, the rest summed
/// as group `(other)` (a name no group has: it holds parentheses but a
/// group may too, so it is told apart by the `other` label as well).
async fn groups(api: &Api, queues: &[crate::api::QueueInfo], out: &mut Exposition) -> Result<()> {
    let mut summaries = Vec::new();
    for q in queues {
        match api.group_summary(&q.name, TOP_GROUPS).await {
            Ok(Some(summary)) => summaries.push((q.name.as_str(), summary)),
            Ok(None) | Err(crate::error::Error::InvalidArgument { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if summaries.is_empty() {
        return Ok(());
    }
    out.family(
        "cogworker_groups",
        "gauge",
        "Groups of a queue that have jobs or are paused.",
    );
    for (queue, summary) in &summaries {
        out.sample("cogworker_groups", &[("queue", queue)], summary.groups as f64);
    }
    out.family(
        "cogworker_group_size",
        "gauge",
        "Jobs waiting in a group of a queue: its biggest groups by name, the rest as other=\"1\".",
    );
    for (queue, summary) in &summaries {
        for group in &summary.top {
            let labels = [("queue", *queue), ("group", group.name.as_str()), ("other", "0")];
            out.sample("cogworker_group_size", &labels, group.size as f64);
        }
        let labels = [("queue", *queue), ("group", "(other)"), ("other", "1")];
        out.sample("cogworker_group_size", &labels, summary.other as f64);
    }
    out.family(
        "cogworker_group_running",
        "gauge",
        "Jobs of a capped group running now, for the biggest groups of a queue.",
    );
    for (queue, summary) in &summaries {
        for group in summary.top.iter().filter(|group| group.cap.is_some()) {
            let labels = [("queue", *queue), ("group", group.name.as_str())];
            out.sample("cogworker_group_running", &labels, group.running as f64);
        }
    }
    Ok(())
}

/// What one counter family counts.
type Count = fn(&ClassMetrics) -> u64;

/// The whole exposition, read from Redis now.
pub async fn render(api: &Api) -> Result<String> {
    let totals = api.metric_totals().await?;
    let queues = api.queues().await?;
    let processes = api.processes().await?;
    let mut out = Exposition(String::new());

    let counters: [(&str, &str, Count); 2] = [
        (
            "cogworker_jobs_processed_total",
            "Job executions finished (succeeded or failed), by queue and class.",
            |m| m.processed,
        ),
        (
            "cogworker_jobs_failed_total",
            "Job executions that failed, by queue and class.",
            |m| m.failed,
        ),
    ];
    for (name, help, count) in counters {
        out.family(name, "counter", help);
        for t in &totals {
            let labels = [("queue", t.queue.as_str()), ("class", t.metrics.class.as_str())];
            out.sample(name, &labels, count(&t.metrics) as f64);
        }
    }
    out.family(
        "cogworker_job_duration_seconds",
        "histogram",
        "How long job executions ran, by queue and class.",
    );
    for t in &totals {
        let (queue, class) = (t.queue.as_str(), t.metrics.class.as_str());
        let mut cumulative = 0u64;
        for (bound, count) in BUCKETS_SECS.iter().zip(&t.metrics.histogram) {
            cumulative += count;
            let le = number(*bound);
            out.sample(
                "cogworker_job_duration_seconds_bucket",
                &[("queue", queue), ("class", class), ("le", &le)],
                cumulative as f64,
            );
        }
        let labels = [("queue", queue), ("class", class)];
        out.sample(
            "cogworker_job_duration_seconds_bucket",
            &[("queue", queue), ("class", class), ("le", "+Inf")],
            t.metrics.processed as f64,
        );
        out.sample("cogworker_job_duration_seconds_sum", &labels, t.metrics.total_secs);
        out.sample(
            "cogworker_job_duration_seconds_count",
            &labels,
            t.metrics.processed as f64,
        );
    }

    out.family(
        "cogworker_jobs_expired_total",
        "counter",
        "Jobs dropped unstarted past their expires_at.",
    );
    let stats = api.stats().await?;
    out.sample("cogworker_jobs_expired_total", &[], stats.expired as f64);
    let counters = [
        (
            "cogworker_jobs_cancelled_total",
            "Jobs cancelled (dropped unrun, or stopped) and filed as cancelled.",
            stats.cancelled,
        ),
        (
            "cogworker_pushes_collapsed_total",
            "Debounced pushes that collapsed into their key's pending job.",
            stats.collapsed,
        ),
        (
            "cogworker_pushes_throttled_total",
            "Throttled pushes dropped before their key's next window.",
            stats.throttled,
        ),
        (
            "cogworker_jobs_replaced_total",
            "Waiting jobs replaced in place by a push of their key.",
            stats.replaced,
        ),
        (
            "cogworker_jobs_backlog_dropped_total",
            "Waiting jobs a group's backlog cap dropped to make room for newer ones.",
            stats.backlog_dropped,
        ),
    ];
    for (name, help, count) in counters {
        out.family(name, "counter", help);
        out.sample(name, &[], count as f64);
    }
    out.family(
        "cogworker_batch_events_total",
        "counter",
        "Batches that completed (every job ran), succeeded (every job succeeded) or had a job die.",
    );
    for (event, count) in api.batch_events().await? {
        out.sample("cogworker_batch_events_total", &[("event", event)], count as f64);
    }
    out.family("cogworker_queue_size", "gauge", "Jobs waiting on a queue.");
    for q in &queues {
        out.sample("cogworker_queue_size", &[("queue", &q.name)], q.size as f64);
    }
    out.family(
        "cogworker_queue_latency_seconds",
        "gauge",
        "How long the oldest job on a queue has waited.",
    );
    for q in &queues {
        out.sample("cogworker_queue_latency_seconds", &[("queue", &q.name)], q.latency);
    }
    groups(api, &queues, &mut out).await?;
    out.family("cogworker_queue_paused", "gauge", "1 while a queue is paused.");
    for q in &queues {
        out.sample(
            "cogworker_queue_paused",
            &[("queue", &q.name)],
            f64::from(u8::from(q.paused)),
        );
    }

    out.family("cogworker_processes", "gauge", "Worker processes alive (heartbeating).");
    out.sample("cogworker_processes", &[], processes.len() as f64);
    out.family("cogworker_busy_slots", "gauge", "Job slots running a job now.");
    out.sample(
        "cogworker_busy_slots",
        &[],
        processes.iter().map(|p| p.busy).sum::<u64>() as f64,
    );
    out.family("cogworker_slots", "gauge", "Job slots of the live processes.");
    out.sample(
        "cogworker_slots",
        &[],
        processes
            .iter()
            .map(|p| p.info["concurrency"].as_u64().unwrap_or(0))
            .sum::<u64>() as f64,
    );

    for (set, name, help) in [
        (
            JobSet::Scheduled,
            "cogworker_scheduled_jobs",
            "Jobs scheduled for later.",
        ),
        (
            JobSet::Retry,
            "cogworker_retry_jobs",
            "Failed jobs waiting for a retry.",
        ),
        (
            JobSet::Dead,
            "cogworker_dead_jobs",
            "Jobs out of retries, kept in dead.",
        ),
    ] {
        out.family(name, "gauge", help);
        out.sample(name, &[], api.set_size(set).await? as f64);
    }
    let limiters = api.limiters().await?;
    type Read = fn(&crate::api::LimiterInfo) -> u64;
    let families: [(&str, &str, &str, Read); 3] = [
        (
            "cogworker_limiter_in_use",
            "gauge",
            "What a rate limiter has given out now (leases held, grants in its interval).",
            |l| l.in_use,
        ),
        ("cogworker_limiter_limit", "gauge", "What a rate limiter allows.", |l| {
            l.limit
        }),
        (
            "cogworker_limiter_refused_total",
            "counter",
            "Jobs (and acquire calls) a rate limiter turned away, each once per wait (it waited, or went back to the schedule).",
            |l| l.refused,
        ),
    ];
    // No limiter, no families.
    for (name, kind, help, read) in families.iter().filter(|_| !limiters.is_empty()) {
        out.family(name, kind, help);
        for l in &limiters {
            out.sample(name, &[("limiter", &l.name)], read(l) as f64);
        }
    }
    Ok(out.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_numbers_are_written_as_the_format_asks() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(3.0), "3");
        let mut out = Exposition(String::new());
        out.sample("x", &[("class", "A\"")], 1.0);
        out.sample("y", &[], 2.0);
        assert_eq!(out.0, "x{class=\"A\\\"\"} 1\ny 2\n");
    }
}
