"""OpenTelemetry across two processes: a push in this process opens a
PRODUCER span and carries its trace context in the payload; the worker
process runs the handler in a CONSUMER span that is its child, with the
messaging attributes; a failed job's span has error status and the
exception event."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from conftest import HERE, RedisServer, wait_for, worker_env
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def test_the_consumer_span_continues_the_producer_span(configured: RedisServer, tmp_path) -> None:  # noqa: ANN001
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    from traced_tasks import fails, work

    with provider.get_tracer("test").start_as_current_span("POST /orders") as request:
        jid = work.enqueue(7)
        failing = fails.enqueue()
    sent = {
        s.attributes["messaging.message.id"]: s
        for s in exporter.get_finished_spans()
        if s.name == "send default"
    }
    assert set(sent) == {jid, failing}
    for span in sent.values():
        assert (
            span.kind == trace.SpanKind.PRODUCER and span.parent.span_id == request.get_span_context().span_id
        )
        assert span.attributes["messaging.system"] == "cogworker"

    spans_file = tmp_path / "spans.jsonl"
    worker = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "worker", "traced_tasks", "-c", "2"],
        env=worker_env(configured, TRACE_FILE=str(spans_file)),
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def consumed() -> dict[str, dict]:
            if not spans_file.exists():
                return {}
            spans = [json.loads(line) for line in spans_file.read_text().splitlines()]
            return {s["attributes"]["messaging.message.id"]: s for s in spans if s["kind"] == "CONSUMER"}

        spans = wait_for("both consumer spans", lambda: len(consumed()) == 2 and consumed())
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(20) == 0
    for message_id, span in spans.items():
        producer = sent[message_id].get_span_context()
        assert span["trace_id"] == format(producer.trace_id, "032x"), "same trace as the push"
        assert span["parent_id"] == format(producer.span_id, "016x"), "a child of the PRODUCER span"
        assert span["name"] == "process default"
        attributes = span["attributes"]
        assert attributes["messaging.system"] == "cogworker"
        assert attributes["messaging.destination.name"] == "default"
        assert attributes["messaging.operation.type"] == "process"
    assert (
        spans[jid]["attributes"]["cogworker.job.class"] == "Traced.Work" and spans[jid]["status"] == "UNSET"
    )
    assert spans[failing]["status"] == "ERROR" and "exception" in spans[failing]["events"]
