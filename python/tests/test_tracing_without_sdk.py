"""opentelemetry-api importable (many libraries depend on it) but no SDK
set up: nothing is recorded, so no span is made (one cost a push about
40 us), and a push still passes on a trace context that is current (a
remote parent, say), for a process downstream that records. Run in a
process of its own: test_tracing.py sets an SDK for the whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import cogworker
    from cogworker import _tracing, testing
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    def no_span(*args, **kwargs):
        raise AssertionError("a span was made without an SDK")

    _tracing._tracer = no_span

    @cogworker.job
    def traced_nowhere(n):
        return n

    with testing.fake():
        traced_nowhere.enqueue(1)
        cogworker.Client().enqueue_many("Other", [[1], [2]])
        parent = SpanContext(
            trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
            span_id=0x00F067AA0BA902B7,
            is_remote=True,
            trace_flags=TraceFlags(1),
        )
        with trace.use_span(NonRecordingSpan(parent)):
            traced_nowhere.enqueue(2)
            cogworker.Client().push({"class": "Raw", "args": []})
        jobs = list(testing.all_jobs())
    carried = {(job["class"].rsplit(".", 1)[-1], tuple(job["args"])): job.get("traceparent") for job in jobs}
    expected = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert carried == {
        ("traced_nowhere", (1,)): None,
        ("Other", (1,)): None,
        ("Other", (2,)): None,
        ("traced_nowhere", (2,)): expected,
        ("Raw", ()): expected,
    }, carried
    print("ok")
    """
)


def test_without_an_sdk_no_span_is_made_and_a_current_context_is_passed_on(tmp_path: Path) -> None:
    # Elsewhere than python/: its cogworker/ is the source, without _core.
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "ok"
