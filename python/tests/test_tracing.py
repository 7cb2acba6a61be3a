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

import cogworker

# One provider for the module: OpenTelemetry takes the first one set.
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


def test_the_consumer_span_continues_the_producer_span(configured: RedisServer, tmp_path) -> None:  # noqa: ANN001
    exporter.clear()
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


def test_a_bulk_or_raw_push_is_one_producer_span_every_job_continues(configured: RedisServer) -> None:
    exporter.clear()
    client = cogworker.Client()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with provider.get_tracer("test").start_as_current_span("import"):
        bulk = client.enqueue_many("Traced.Work", [(1,), (2,), (3,)], queue="bulk")
        raw = client.push_bulk(
            [
                {"class": "Traced.Work", "args": [4], "queue": "raw"},
                {"class": "Traced.Work", "args": [5], "queue": "raw", "traceparent": own},
            ]
        )
    spans = {s.name: s for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.PRODUCER}
    assert set(spans) == {"send bulk", "send raw"}
    assert spans["send bulk"].attributes["messaging.batch.message_count"] == 3

    def carried(queue: str) -> dict[str, str]:
        payloads = [
            json.loads(p)
            for p in configured.cli_raw("LRANGE", f"cogworker:queue:{queue}", "0", "-1").splitlines()
        ]
        return {p["jid"]: p.get("traceparent") for p in payloads}

    def context_of(span) -> str:  # noqa: ANN001
        context = span.get_span_context()
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    assert carried("bulk") == {jid: context_of(spans["send bulk"]) for jid in bulk}
    assert carried("raw") == {raw[0]: context_of(spans["send raw"]), raw[1]: own}, (
        "a payload's own context is kept"
    )


def test_a_push_through_client_middleware_is_one_producer_span(configured: RedisServer) -> None:
    """With client middleware, a push and a bulk push each opened a second
    PRODUCER span (Ruby opened one): now one, as without middleware."""
    from cogworker import _hooks

    exporter.clear()
    stamp = cogworker.client_middleware.add(lambda job: {**job, "tenant": "acme"})
    try:
        client = cogworker.Client()
        jid = client.enqueue("Traced.Work", 1, queue="stamped")
        client.enqueue_many("Traced.Work", [(2,), (3,)], queue="stamped_bulk")
    finally:
        _hooks.client_middleware.remove(stamp)
    producers = [s.name for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.PRODUCER]
    assert sorted(producers) == ["send stamped", "send stamped_bulk"]
    [stored] = [
        json.loads(p) for p in configured.cli_raw("LRANGE", "cogworker:queue:stamped", "0", "-1").splitlines()
    ]
    assert (stored["jid"], stored["tenant"]) == (jid, "acme")
    assert stored["traceparent"].split("-")[1] == format(
        next(s for s in exporter.get_finished_spans() if s.name == "send stamped")
        .get_span_context()
        .trace_id,
        "032x",
    )
