"""Jobs for the tracing test, in a worker process whose spans are written
to the file TRACE_FILE names (one JSON object per span)."""

import json
import os

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import cogworker


class FileExporter(SpanExporter):
    def export(self, spans):  # noqa: ANN001, ANN201
        with open(os.environ["TRACE_FILE"], "a", encoding="utf-8") as f:
            for span in spans:
                entry = {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": format(span.context.trace_id, "032x"),
                    "span_id": format(span.context.span_id, "016x"),
                    "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
                    "attributes": dict(span.attributes or {}),
                    "status": span.status.status_code.name,
                    "events": [event.name for event in span.events],
                }
                f.write(json.dumps(entry) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
trace.set_tracer_provider(provider)


@cogworker.job(name="Traced.Work")
def work(n: int) -> int:
    return n


@cogworker.job(name="Traced.Fails", retry=False)
def fails() -> None:
    raise ValueError("traced failure")
