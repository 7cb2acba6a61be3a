"""OpenTelemetry, when ``opentelemetry-api`` is importable (no dependency
otherwise): a push opens a PRODUCER span and records its W3C trace
context (``traceparent``, ``tracestate``) in the payload; the worker runs
the handler inside a CONSUMER span that continues it, so a job's work shows
under the request that pushed it, whichever process or language pushed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # pragma: no cover - exercised where the library is absent
    trace = None  # type: ignore[assignment]

ENABLED = trace is not None
SYSTEM = "cogworker"


def _tracer() -> Any:
    return trace.get_tracer("cogworker")


@contextlib.contextmanager
def producing(class_name: str, queue: str | None, opts: dict[str, Any]) -> Iterator[Any]:
    """A PRODUCER span around a push whose trace context goes into ``opts``
    (the push's options); yields the span (None when tracing is off) for
    the caller to name the jid once the push returns it."""
    if not ENABLED:
        yield None
        return
    queue = queue or "default"
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.destination.name": queue,
        "cogworker.job.class": class_name,
    }
    with _tracer().start_as_current_span(
        f"send {queue}", kind=SpanKind.PRODUCER, attributes=attributes
    ) as span:
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier)
        opts.update({k: carrier[k] for k in ("traceparent", "tracestate") if k in carrier})
        yield span


def name_message(span: Any, jid: str | None) -> None:
    if span is not None and jid is not None:
        span.set_attribute("messaging.message.id", jid)


@contextlib.contextmanager
def consuming(job: Any) -> Iterator[None]:
    """A CONSUMER span around a handler, child of the pushing span when the
    payload carries its context; a failure sets its status and records the
    exception."""
    if not ENABLED:
        yield
        return
    payload = job.payload
    carrier = {k: payload[k] for k in ("traceparent", "tracestate") if isinstance(payload.get(k), str)}
    parent = TraceContextTextMapPropagator().extract(carrier) if carrier else None
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue,
        "messaging.message.id": job.jid,
        "cogworker.job.class": job.class_name,
        "cogworker.job.retry_count": job.retry_count,
    }
    with _tracer().start_as_current_span(
        f"process {job.queue}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield
        except BaseException as error:
            _record_failure(span, error)
            raise


def _record_failure(span: Any, error: BaseException) -> None:
    """The span's error status and exception event; an exception whose
    ``__str__`` raises is named by its class alone (the span never changes
    what the job's failure says)."""
    try:
        description = f"{type(error).__name__}: {error}"
    except BaseException:  # noqa: BLE001
        description = type(error).__name__
    span.set_status(Status(StatusCode.ERROR, description))
    try:
        span.record_exception(error)
    except BaseException:  # noqa: BLE001
        span.add_event("exception", {"exception.type": type(error).__name__})
