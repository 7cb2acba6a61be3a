//! Trace context: a job carries the W3C trace context of the push that
//! made it (`traceparent`, `tracestate` in the payload, whichever language
//! pushed), and a Rust worker runs it inside a `tracing` span that names
//! the job and continues that context.
//!
//! The spans use OpenTelemetry's field names (`otel.kind`, `messaging.*`),
//! so with the `opentelemetry` feature and a `tracing-opentelemetry` layer
//! they become PRODUCER and CONSUMER spans: the consumer a child of the
//! producer, in another process or language. Without the feature the span
//! still names the job (jid, class, queue) on every event a handler logs
//! inside it, and `trace_id`/`parent_span_id` name the pushing trace.
//! Their target is `cogworker::trace`, which [`crate::logging::init`] turns
//! off: its line format shows no spans, and a span per job is not free.

use crate::handler::Failure;
use crate::job::Job;
use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing::Span;

pub(crate) const TRACEPARENT: &str = "traceparent";
pub(crate) const TRACESTATE: &str = "tracestate";

/// The parts of a W3C `traceparent` (`00-<trace id>-<parent id>-<flags>`).
#[derive(Debug, PartialEq)]
pub(crate) struct TraceParent<'a> {
    pub trace_id: &'a str,
    pub span_id: &'a str,
    pub flags: &'a str,
}

/// `version-traceid-spanid-flags`, lower-case hex of those lengths, with
/// ids that are not all zeros (the W3C spec calls those invalid).
pub(crate) fn parse_traceparent(text: &str) -> Option<TraceParent<'_>> {
    let parts: Vec<&str> = text.split('-').collect();
    let well_formed = parts.len() == 4
        && parts.iter().zip([2, 32, 16, 2]).all(|(part, len)| {
            part.len() == len && part.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
    let nonzero = |id: &str| id.bytes().any(|b| b != b'0');
    (well_formed && parts[0] != "ff" && nonzero(parts[1]) && nonzero(parts[2])).then(|| TraceParent {
        trace_id: parts[1],
        span_id: parts[2],
        flags: parts[3],
    })
}

/// The trace context `job`'s payload carries, if valid.
pub(crate) fn parent_of(job: &Job) -> Option<TraceParent<'_>> {
    job.str_field(TRACEPARENT).and_then(parse_traceparent)
}

/// The span a Rust worker runs `job` in (CONSUMER, child of the push's
/// span when the payload carries its context). Nothing is read from the
/// payload unless a subscriber records the span.
pub(crate) fn job_span(job: &Job) -> Span {
    let span = tracing::info_span!(
        target: "cogworker::trace",
        "cogworker.job",
        otel.name = %format_args!("process {}", job.queue_name()),
        otel.kind = "consumer",
        otel.status_code = Empty,
        otel.status_description = Empty,
        messaging.system = "cogworker",
        messaging.operation.type = "process",
        messaging.destination.name = job.queue_name(),
        messaging.message.id = job.jid_str(),
        cogworker.job.class = job.display_class(),
        cogworker.job.retry_count = job.retry_count(),
        trace_id = Empty,
        parent_span_id = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(parent) = parent_of(job) {
        span.record("trace_id", parent.trace_id);
        span.record("parent_span_id", parent.span_id);
        #[cfg(feature = "opentelemetry")]
        otel::continue_trace(&span, &parent, job);
    }
    span
}

/// Marks `span` (a [`job_span`]) failed: error status, and with the
/// `opentelemetry` feature an `exception` event.
pub(crate) fn record_failure(span: &Span, failure: &Failure) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "error");
    span.record(
        "otel.status_description",
        format!("{}: {}", failure.class, failure.message).as_str(),
    );
    #[cfg(feature = "opentelemetry")]
    otel::exception_event(span, failure);
}

/// The span of a push of `jobs` (PRODUCER, a child of the caller's span);
/// with the `opentelemetry` feature its context is written into every job
/// that carries none yet, for the worker to continue.
pub(crate) fn push_span(jobs: &mut [Job]) -> Span {
    let Some(first) = jobs.first() else {
        return Span::none();
    };
    let queue = first.queue_name();
    let span = tracing::info_span!(
        target: "cogworker::trace",
        "cogworker.push",
        otel.name = %format_args!("send {queue}"),
        otel.kind = "producer",
        messaging.system = "cogworker",
        messaging.operation.type = "send",
        messaging.destination.name = queue,
        messaging.message.id = Empty,
        messaging.batch.message_count = (jobs.len() > 1).then_some(jobs.len() as u64),
        cogworker.job.class = first.display_class(),
    );
    #[cfg(feature = "opentelemetry")]
    otel::inject(&span, jobs);
    span
}

/// The PRODUCER span a host opens with its own OpenTelemetry API around a
/// push of `count` jobs of `class` to `queue` (`None`: the default queue):
/// its name and attributes, the same as the Rust client's own push span.
pub fn host_push_span(class: &str, queue: Option<&str>, count: usize) -> (String, Map<String, Value>) {
    let queue = queue.unwrap_or("default");
    let mut attributes = Map::new();
    attributes.insert("messaging.system".into(), "cogworker".into());
    attributes.insert("messaging.operation.type".into(), "send".into());
    attributes.insert("messaging.destination.name".into(), queue.into());
    attributes.insert("cogworker.job.class".into(), class.into());
    if count > 1 {
        attributes.insert("messaging.batch.message_count".into(), count.into());
    }
    (format!("send {queue}"), attributes)
}

/// A span a host opens with its own OpenTelemetry API: its name, its
/// attributes, and (around a job) the trace context to continue.
pub type HostSpan = (String, Map<String, Value>, Map<String, Value>);

/// The CONSUMER span a host opens around `job`'s handler: its name, its
/// attributes (the same as the Rust worker's own job span) and the trace context the job
/// carries (`traceparent`, `tracestate`: the parent to continue), for the
/// host's propagator to extract.
pub fn host_job_span(job: &Job) -> HostSpan {
    let queue = job.queue_name();
    let mut attributes = Map::new();
    attributes.insert("messaging.system".into(), "cogworker".into());
    attributes.insert("messaging.operation.type".into(), "process".into());
    attributes.insert("messaging.destination.name".into(), queue.into());
    attributes.insert("messaging.message.id".into(), job.jid_str().into());
    attributes.insert("cogworker.job.class".into(), job.display_class().into());
    attributes.insert("cogworker.job.retry_count".into(), job.retry_count().into());
    let carrier = [TRACEPARENT, TRACESTATE]
        .into_iter()
        .filter_map(|field| Some((field.to_string(), Value::from(job.str_field(field)?))))
        .collect();
    (format!("process {queue}"), attributes, carrier)
}

#[cfg(feature = "opentelemetry")]
mod otel {
    use super::{TraceParent, TRACEPARENT, TRACESTATE};
    use crate::handler::Failure;
    use crate::job::Job;
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use opentelemetry::{Context, KeyValue};
    use serde_json::Value;
    use std::str::FromStr;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Makes the pushing span (from the payload's context) the parent.
    pub(super) fn continue_trace(span: &Span, parent: &TraceParent<'_>, job: &Job) {
        let (Ok(trace_id), Ok(span_id), Ok(flags)) = (
            TraceId::from_hex(parent.trace_id),
            SpanId::from_hex(parent.span_id),
            u8::from_str_radix(parent.flags, 16),
        ) else {
            return;
        };
        let state = job
            .str_field(TRACESTATE)
            .and_then(|s| TraceState::from_str(s).ok())
            .unwrap_or_default();
        let remote = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
        // Fails only when no OpenTelemetry layer records the span.
        let _ = span.set_parent(Context::new().with_remote_span_context(remote));
    }

    pub(super) fn exception_event(span: &Span, failure: &Failure) {
        let mut attributes = vec![
            KeyValue::new("exception.type", failure.class.clone()),
            KeyValue::new("exception.message", failure.message.clone()),
        ];
        if !failure.backtrace.is_empty() {
            attributes.push(KeyValue::new("exception.stacktrace", failure.backtrace.join("\n")));
        }
        span.add_event("exception", attributes);
    }

    /// The span's context as `traceparent`/`tracestate` on each job that
    /// has none (a job re-pushed with its own context keeps it).
    pub(super) fn inject(span: &Span, jobs: &mut [Job]) {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        if !span_context.is_valid() {
            return;
        }
        let traceparent = format!(
            "00-{}-{}-{:02x}",
            span_context.trace_id(),
            span_context.span_id(),
            span_context.trace_flags().to_u8()
        );
        let tracestate = span_context.trace_state().header();
        for job in jobs.iter_mut().filter(|job| job.get(TRACEPARENT).is_none()) {
            job.set(TRACEPARENT, Value::String(traceparent.clone()));
            if !tracestate.is_empty() {
                job.set(TRACESTATE, Value::String(tracestate.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_parsed_only_when_valid() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            parse_traceparent(valid),
            Some(TraceParent {
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                span_id: "00f067aa0ba902b7",
                flags: "01"
            })
        );
        for invalid in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(parse_traceparent(invalid), None, "{invalid}");
        }
    }
}
