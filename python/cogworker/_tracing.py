"""OpenTelemetry, when ``opentelemetry-api`` is importable (no dependency
otherwise): a push opens a PRODUCER span and records its W3C trace
context (``traceparent``, ``tracestate``) in the payload; the worker runs
the handler inside a CONSUMER span that continues it, so a job's work shows
under the request that pushed it, whichever process or language pushed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import _core
from ._failures import describe_error

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # pragma: no cover - exercised where the library is absent
    trace = None  # type: ignore[assignment]

ENABLED = trace is not None
# The payload fields that carry a job's W3C trace context (the engine's).
CONTEXT_FIELDS = tuple(_core.TRACE_CONTEXT_FIELDS)
# What a PRODUCER span yields: the span (None when none records) and the
# trace context the jobs carry.
Produced = tuple[Any, dict[str, str]]
# The API's own providers: with one of them no SDK is set up.
_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider) if ENABLED else ()


def recording() -> bool:
    """Whether spans are recorded: the API is there and an SDK is set up
    (asked at every push and job: an application may set one up late).
    Without one no span is made; each cost a push about 40 us."""
    return ENABLED and not isinstance(trace.get_tracer_provider(), _NO_SDK)


def current_context() -> dict[str, str]:
    """The trace context current here (``traceparent``, ``tracestate``) for
    a job to carry: a push's PRODUCER span, or, where nothing records, one
    that is current anyway (a remote parent, say), for a process downstream
    that may record. Empty when there is none."""
    if not ENABLED or not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return {k: carrier[k] for k in CONTEXT_FIELDS if k in carrier}


def _tracer() -> Any:
    return trace.get_tracer(_core.TRACER_NAME)


def producing(class_name: str, queue: Any, count: int = 1) -> contextlib.AbstractContextManager[Produced]:
    """A PRODUCER span around a push of ``count`` jobs (named and described
    by the core); yields the span (None when tracing is off) for the caller
    to name the message once the push returns (``name_message``), and its
    trace context (``traceparent``, ``tracestate``) for the jobs to carry."""
    return _span(lambda: _core.producer_span(class_name, queue, count))


def producing_payloads(payloads: Sequence[dict[str, Any]]) -> contextlib.AbstractContextManager[Produced]:
    """``producing`` for raw payloads (the span named by the engine after
    the first); the engine gives the context to those without their own."""
    return _span(lambda: _core.payloads_span(payloads[0] if payloads else None, len(payloads)))


@contextlib.contextmanager
def _span(span_of: Callable[[], tuple[str, dict[str, Any]]]) -> Iterator[Produced]:
    if not recording():
        yield None, current_context()
        return
    name, attributes = span_of()
    with _tracer().start_as_current_span(name, kind=SpanKind.PRODUCER, attributes=attributes) as span:
        yield span, current_context()


def name_message(span: Any, jids: list[str | None]) -> None:
    """The attributes the engine gives a push's span once it returned
    ``jids`` (the message's id when it pushed one)."""
    if span is not None:
        span.set_attributes(_core.message_attributes(jids))


@contextlib.contextmanager
def consuming(delivery: Any) -> Iterator[None]:
    """A CONSUMER span around a handler (named and described by the core),
    child of the pushing span when the job carries its context; a failure
    sets its status and records the exception."""
    if not recording() or (span_of := delivery.job_span) is None:
        yield
        return
    name, attributes, carrier = span_of
    parent = TraceContextTextMapPropagator().extract(carrier) if carrier else None
    with _tracer().start_as_current_span(
        name,
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
    """The span's error status and exception event, as the engine words
    them (an exception whose ``__str__`` raises is named by its class
    alone: the span never changes what the job's failure says)."""
    description, attributes = _core.span_failure(*describe_error(error))
    span.set_status(Status(StatusCode.ERROR, description))
    try:
        span.record_exception(error)
    except BaseException:  # noqa: BLE001
        span.add_event("exception", attributes)
