//! What a host's own OpenTelemetry calls write, decided once for both: the
//! payload fields a job's trace context travels in, the tracer's name, the
//! span of a push of raw payloads, the attribute that names a pushed
//! message, and how a failed job's span describes it. (The spans' names
//! and attributes are [`crate::trace`]'s, the Rust worker's own.)

use crate::host_value::HostValue;
use crate::job::Job;
use crate::trace::{host_push_span, TRACEPARENT, TRACESTATE};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The payload fields that carry a job's W3C trace context.
pub const TRACE_CONTEXT_FIELDS: [&str; 2] = [TRACEPARENT, TRACESTATE];

/// The name of the tracer a host asks its OpenTelemetry API for.
pub const TRACER_NAME: &str = "cogworker";

const MESSAGE_ID: &str = "messaging.message.id";

/// The PRODUCER span around a push of `count` raw payloads, `first` the
/// first of them (a map): named by its class and queue.
pub fn host_payloads_span(first: Option<&HostValue>, count: usize) -> (String, Map<String, Value>) {
    let field = |name: &str| match first {
        Some(HostValue::Map(pairs)) => pairs.iter().find_map(|(key, value)| match (key, value) {
            (HostValue::Text(key), HostValue::Text(value)) if key == name => Some(value.as_str()),
            _ => None,
        }),
        _ => None,
    };
    host_push_span(field("class").unwrap_or(""), field("queue"), count)
}

/// The attributes a push's span gets once the push returned `jids`: the
/// message's id when it pushed one job, none otherwise.
pub fn host_message_attributes(jids: &[Option<String>]) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let [Some(jid)] = jids {
        attributes.insert(MESSAGE_ID.into(), Value::from(jid.as_str()));
    }
    attributes
}

/// A failed job's span: its status description (`Class: message`, the
/// class alone when the message could not be read) and the attributes of
/// the exception event a host records when its API's own recording fails.
pub fn host_span_failure(class: Option<&str>, message: Option<&str>) -> (String, Map<String, Value>) {
    let class = class.unwrap_or("(an exception whose class could not be read)");
    let description = match message {
        Some(message) => format!("{class}: {message}"),
        None => class.to_string(),
    };
    let mut attributes = Map::new();
    attributes.insert("exception.type".into(), Value::from(class));
    (description, attributes)
}

/// `jobs` carry `context` (the push span's [`TRACE_CONTEXT_FIELDS`]),
/// except those that carry a trace context of their own: a raw payload
/// pushed again keeps the trace it was pushed in.
pub fn carry_trace_context(jobs: &mut [Job], context: &HashMap<String, String>) {
    if context.is_empty() {
        return;
    }
    for job in jobs.iter_mut().filter(|job| job.get(TRACEPARENT).is_none()) {
        for field in TRACE_CONTEXT_FIELDS {
            if let Some(value) = context.get(field) {
                job.set(field, Value::from(value.as_str()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_pushed_job_names_the_message_and_a_failure_names_its_class() {
        assert_eq!(
            Value::Object(host_message_attributes(&[Some("abc".into())])),
            json!({"messaging.message.id": "abc"})
        );
        assert!(host_message_attributes(&[Some("a".into()), Some("b".into())]).is_empty());
        assert!(host_message_attributes(&[None]).is_empty());
        assert_eq!(host_span_failure(Some("app.Boom"), Some("no")).0, "app.Boom: no");
        assert_eq!(host_span_failure(Some("app.Boom"), None).0, "app.Boom");
    }

    #[test]
    fn a_payload_with_its_own_trace_context_keeps_it() {
        let context = HashMap::from([("traceparent".to_string(), "00-new".to_string())]);
        let mut jobs = [Job::new("A"), Job::new("B").field("traceparent", json!("00-own"))];
        carry_trace_context(&mut jobs, &context);
        assert_eq!(jobs[0].str_field("traceparent"), Some("00-new"));
        assert_eq!(jobs[1].str_field("traceparent"), Some("00-own"));
    }

    #[test]
    fn a_payloads_span_is_named_by_the_first_payload() {
        let first = HostValue::Map(vec![
            (HostValue::Text("class".into()), HostValue::Text("A".into())),
            (HostValue::Text("queue".into()), HostValue::Text("q".into())),
        ]);
        let (name, attributes) = host_payloads_span(Some(&first), 2);
        assert_eq!(name, "send q");
        assert_eq!(attributes["cogworker.job.class"], json!("A"));
    }
}
