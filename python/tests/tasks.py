"""Handlers used by the tests (imported in-process and by worker processes)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import cogworker

# Worker processes started by the tests read their extra settings here.
if os.environ.get("TEST_WORKER_PROCESS"):
    cogworker.configure(
        orphan_threshold=float(os.environ.get("TEST_ORPHAN_THRESHOLD", "300")),
        orphan_check_interval=0.5,
        heartbeat_interval=0.5,
    )

RESULTS: list = []
THREAD_NAMES: set = set()
_local = threading.local()


def _record(value: object) -> None:
    RESULTS.append(value)
    path = os.environ.get("TEST_RESULTS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{value}\n")


@cogworker.job
def echo(*args: object) -> None:
    _record(args)


@cogworker.job(name="Echo.Named", queue="critical")
def named(value: object) -> None:
    _record(("named", value))


@cogworker.job
async def async_echo(value: object) -> None:
    await asyncio.sleep(0.001)
    _record(("async", value))


@cogworker.job
def count_per_thread() -> None:
    _local.count = getattr(_local, "count", 0) + 1
    THREAD_NAMES.add(threading.current_thread().name)
    _record(("thread", threading.current_thread().name, _local.count))


class BoomError(Exception):
    pass


@cogworker.job(retry=2, retry_in=lambda count, error: 0.1)
def flaky(key: str) -> None:
    attempts = RESULTS.count(("flaky", key))
    _record(("flaky", key))
    if attempts == 0:
        raise BoomError(f"first attempt of {key} fails")


@cogworker.job(retry=1, retry_in=lambda count, error: 0.1)
def always_fails() -> None:
    raise BoomError("always \udcff fails")


@cogworker.job(retry=False)
def discard_on_failure() -> None:
    raise RuntimeError("discarded")


@cogworker.job
def sleeper(seconds: float, tag: str) -> None:
    _record(("start", tag))
    time.sleep(seconds * float(os.environ.get("TEST_SLEEP_SCALE", "1")))
    _record(("slept", tag))


@cogworker.job(retry_in=lambda count, error: 3600 if isinstance(error, cogworker.JobTimeout) else None)
def patient_sleeper(seconds: float, tag: str) -> None:
    """`sleeper` whose retry hook puts a timed-out job an hour away."""
    sleeper(seconds, tag)


# The bodies of `limited` running at once, and the most seen.
LIMITED = {"now": 0, "most": 0, "ran": 0}
_limited_lock = threading.Lock()


@cogworker.job(limits=["py-one"])
def limited(seconds: float) -> None:
    with _limited_lock:
        LIMITED["now"] += 1
        LIMITED["most"] = max(LIMITED["most"], LIMITED["now"])
    time.sleep(seconds)
    with _limited_lock:
        LIMITED["now"] -= 1
        LIMITED["ran"] += 1


# What the cancellable jobs saw: "started", then how they ended.
CANCELS: list[str] = []


@cogworker.job(result_ttl=600)
async def long_async() -> None:
    CANCELS.append("started")
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CANCELS.append("cancelled outright")
        raise
    CANCELS.append("finished")


@cogworker.job(result_ttl=600)
def long_sync() -> str:
    CANCELS.append("started")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        job = cogworker.current_job()
        if job is not None and job.cancelled:
            CANCELS.append("stopped early")
            return "stopped"
        time.sleep(0.02)
    CANCELS.append("finished")
    return "finished"


@cogworker.job(timeout=0.5)
def busy_loop(tag: str) -> None:
    """Runs Python code until told its time limit passed."""
    _record(("loop", tag))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.01)
    except cogworker.JobTimeout:
        _record(("told", tag))
        raise
    _record(("finished", tag))


@cogworker.job(timeout=0.5)
async def slow_async(tag: str) -> None:
    _record(("awaiting", tag))
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        _record(("cancelled", tag))
        raise


BATCH_CALLS: list[tuple[str, str, dict]] = []


@cogworker.job
def batch_step(value: object) -> None:
    _record(("batch_step", value))


@cogworker.job
def batch_spawner(count: int) -> None:
    """A job of a batch that adds ``count`` steps to its own batch."""
    job = cogworker.current_job()
    assert job is not None and job.bid is not None
    with cogworker.Batch(bid=job.bid):
        for n in range(count):
            batch_step.enqueue(("spawned", n))


@cogworker.job
def batch_done(status: dict, tag: str) -> None:
    BATCH_CALLS.append((tag, status["event"], status))


WORKFLOW_CALLS: list[tuple[object, ...]] = []


@cogworker.job
def workflow_double(value: int) -> int:
    return value * 2


@cogworker.job
def workflow_record(*args: object) -> None:
    WORKFLOW_CALLS.append(args)


@cogworker.job(name="LongSteps", result_ttl=60)
async def long_steps(count: int) -> str:
    """Reports ``count`` steps, 0.1 s apart, from an ``async def`` handler."""
    job = cogworker.current_job()
    assert job is not None
    for step in range(1, count + 1):
        job.progress(100 * step / count, f"step {step}", data={"step": step})
        await asyncio.sleep(0.1)
    return "done"
