"""The conformance suite's job classes (tests/conformance/scenarios.json),
imported by its runner and by the worker processes it starts."""

from __future__ import annotations

import datetime
import time
from typing import Any

import cogworker

TRAIL: list[str] = []


class ConformanceError(Exception):
    pass


@cogworker.job(name="ConformanceEcho")
def conformance_echo(*args: Any) -> list[Any]:
    return list(args)


@cogworker.job(name="ConformanceBoom", retry_in=lambda count, error: 3600)
def conformance_boom() -> None:
    raise ConformanceError("boom")


@cogworker.job(name="ConformanceSlow")
def conformance_slow(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


@cogworker.job(name="ConformanceLong")
def conformance_long(mode: str) -> Any:
    job = cogworker.current_job()
    assert job is not None
    if mode == "until_stopping":
        deadline = time.monotonic() + 10
        while not job.stopping and time.monotonic() < deadline:
            time.sleep(0.01)
        TRAIL.append("stopped")
        return None
    if mode == "steps":
        for percent in (25, 50, 75):
            job.progress(percent)
            time.sleep(0.2)
        return "stepped"
    if job.cursor is None:
        job.progress(50, "half", data={"step": 1})
        job.checkpoint({"at": 1})
        if mode == "interrupt":
            job.interrupt()
        return None
    return {"cursor": job.cursor, "stopping": job.stopping}


@cogworker.job(name="ConformanceIterate")
@cogworker.iterate(max_runtime=0.1)
def conformance_iterate(count: int, *, cursor: int | None = None) -> Any:
    TRAIL.append("start" if cursor is None else "resume")
    for i in range(cursor or 0, count):
        time.sleep(0.2)
        TRAIL.append(f"item:{i}")
        yield i + 1


@cogworker.job(name="ConformanceElsewhere", queue="elsewhere", priority=7)
def conformance_elsewhere(*args: Any) -> None:
    pass


@cogworker.job(name="ConformanceInterrupt", retry_in=lambda count, error: 3600)
def conformance_interrupt() -> None:
    raise KeyboardInterrupt  # what Ctrl-C raises


# Retry hooks answering in each way a hook may: a length of time in the
# language's own type, text that is no number, and a raise.
@cogworker.job(name="ConformanceRetryLong", retry_in=lambda count, error: datetime.timedelta(seconds=1000))
def conformance_retry_long() -> None:
    raise ConformanceError("retried in a timedelta")


@cogworker.job(name="ConformanceRetryText", retry_in=lambda count, error: "soon")
def conformance_retry_text() -> None:
    raise ConformanceError("retried in text")


@cogworker.job(name="ConformanceRetryRaises", retry_in=lambda count, error: 1 / 0)
def conformance_retry_raises() -> None:
    raise ConformanceError("the hook raises")


@cogworker.job(name="ConformanceWhoAmI")
def conformance_who_am_i() -> list[Any]:
    job = cogworker.current_job()
    return [job.bid, bool(job.jid)]


@cogworker.job(name="ConformanceGrow")
def conformance_grow(*args: Any) -> None:
    """Adds a ConformanceEcho of its args to its own batch."""
    job = cogworker.current_job()
    assert job is not None
    with cogworker.Batch(bid=job.bid):
        conformance_echo.enqueue(*args)


@cogworker.job(name="ConformanceDeclared", queue="declared", retry=False)
def conformance_declared(*args: Any) -> None:
    pass


# The handler objects a scenario may give instead of a name ("object": true).
OBJECTS = {"ConformanceElsewhere": conformance_elsewhere, "ConformanceDeclared": conformance_declared}
# The handlers a scenario pushes for later through their own methods.
SCHEDULABLE = {"ConformanceEcho": conformance_echo}


@cogworker.job(name="ConformanceTrail")
def conformance_trail() -> None:
    TRAIL.append("handler")


def trail_middleware(name: str) -> Any:
    def middleware(job: cogworker.RunningJob, call_next: Any) -> Any:
        TRAIL.append(f"{name}:before")
        value = call_next()
        TRAIL.append(f"{name}:after")
        return value

    return middleware


def gate_middleware(job: cogworker.RunningJob, call_next: Any) -> Any:
    """Skips a job whose args are ["skip"], makes ["change", x] into
    [x + "!"], and swallows a ConformanceError."""
    if job.args == ["skip"]:
        return None
    if job.args and job.args[0] == "change":
        job.args = [f"{job.args[1]}!"]
    try:
        return call_next()
    except ConformanceError:
        return None


def server_middleware(name: str) -> Any:
    """The middleware a scenario names: the gate, or a trail entry."""
    return gate_middleware if name == "gate" else trail_middleware(name)


def tenant_middleware(job: dict[str, Any]) -> dict[str, Any] | None:
    """Client middleware: stops a push whose args are ["stop"], stamps
    every other with tenant "acme"."""
    if job["args"] == ["stop"]:
        return None
    return {**job, "tenant": "acme"}
