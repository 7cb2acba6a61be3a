//! OpenTelemetry through `tracing` (feature `opentelemetry`): a push opens a
//! PRODUCER span whose context the job carries; the worker runs the handler
//! in a CONSUMER span that is its child, with the messaging attributes; a
//! failed job's span has error status and an exception event; a context
//! another language wrote (a literal traceparent) is continued the same way.

mod common;

use cogworker::{Client, Failure, Job, Retry, Worker};
use common::*;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use std::time::Duration;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

fn consumer_of<'a>(spans: &'a [SpanData], jid: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Consumer && text(s, "messaging.message.id").as_deref() == Some(jid))
        .unwrap_or_else(|| panic!("no consumer span for {jid} in {spans:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_span_continues_the_trace_of_its_push() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("cogworker-test")));
    // The worker's tasks run on other threads: the subscriber is global.
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let worker = Worker::builder(config)
        .register("Traced", |_job| async { Ok(()) })
        .register("Broken", |_job| async { Err(Failure::new("BoomError", "it broke")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    let request = tracing::info_span!("request");
    let request_context = request.context().span().span_context().clone();
    let (traced, broken) = async {
        let traced = client.push(Job::new("Traced")).await.unwrap().unwrap();
        let broken = client
            .push(Job::new("Broken").retry(Retry::Max(0)))
            .await
            .unwrap()
            .unwrap();
        (traced, broken)
    }
    .instrument(request.clone())
    .await;
    drop(request);
    // As a Python or Ruby push writes it.
    let foreign_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let foreign = client
        .push(Job::new("Traced").field("traceparent", json!(format!("00-{foreign_trace}-00f067aa0ba902b7-01"))))
        .await
        .unwrap()
        .unwrap();

    wait_until("three consumer spans", Duration::from_secs(20), || {
        let exporter = exporter.clone();
        async move {
            let spans = exporter.get_finished_spans().unwrap();
            spans.iter().filter(|s| s.span_kind == SpanKind::Consumer).count() == 3
        }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    let producer = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Producer && text(s, "messaging.message.id").as_deref() == Some(&*traced))
        .expect("a producer span for the push");
    assert_eq!(producer.name, "send default");
    assert_eq!(producer.span_context.trace_id(), request_context.trace_id());
    assert_eq!(
        producer.parent_span_id,
        request_context.span_id(),
        "the push is a child of the request"
    );
    assert_eq!(text(producer, "messaging.system").as_deref(), Some("cogworker"));

    let consumer = consumer_of(&spans, &traced);
    assert_eq!(consumer.name, "process default");
    assert_eq!(consumer.span_context.trace_id(), producer.span_context.trace_id());
    assert_eq!(
        consumer.parent_span_id,
        producer.span_context.span_id(),
        "the run is a child of the push"
    );
    assert!(consumer.parent_span_is_remote);
    assert_eq!(text(consumer, "messaging.system").as_deref(), Some("cogworker"));
    assert_eq!(text(consumer, "messaging.destination.name").as_deref(), Some("default"));
    assert_eq!(text(consumer, "cogworker.job.class").as_deref(), Some("Traced"));
    assert_eq!(consumer.status, Status::Unset);

    let failed = consumer_of(&spans, &broken);
    assert!(matches!(&failed.status, Status::Error { description } if description.contains("BoomError: it broke")));
    let exception = failed
        .events
        .iter()
        .find(|e| e.name == "exception")
        .expect("an exception event");
    assert!(exception
        .attributes
        .iter()
        .any(|kv| kv.key.as_str() == "exception.type" && kv.value.as_str() == "BoomError"));

    let continued = consumer_of(&spans, &foreign);
    assert_eq!(continued.span_context.trace_id().to_string(), foreign_trace);
    assert_eq!(continued.parent_span_id.to_string(), "00f067aa0ba902b7");
}
