"""Rate limiters from Python (issue #30, part 1): defined here, checked and
written by the engine, taken with ``with limiter:`` and by the limits a
job declares, shared with every other process and language."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time

import pytest
import tasks
from conftest import wait_for

import cogworker
from cogworker import Limiter


def test_a_concurrent_limit_holds_across_threads_and_frees_on_exit(configured) -> None:
    erp = Limiter.concurrent("py-erp", 2)
    running, most = [0], [0]
    lock = threading.Lock()

    def body() -> None:
        with erp:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.1)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=body) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 2
    assert [entry["in_use"] for entry in cogworker.Api().limiters() if entry["name"] == "py-erp"] == [0]


def test_over_the_limit_after_its_wait_raises_over_limit_naming_it(configured) -> None:
    one = Limiter.concurrent("py-single", 1, wait=dt.timedelta(milliseconds=100))
    lease = one.acquire()
    started = time.monotonic()
    with pytest.raises(cogworker.OverLimit, match="py-single"):
        with one:
            pytest.fail("the body ran over the limit")
    assert 0.09 < time.monotonic() - started < 2
    lease.release()
    lease.release()  # a second release does nothing
    with one.within_limit(wait=0):
        pass


def test_a_window_spreads_grants_and_async_code_waits_off_the_loop(configured) -> None:
    window = Limiter.window("py-window", 3, 0.3)

    async def grab() -> float:
        async with window:
            return time.monotonic()

    async def all_of_them() -> list[float]:
        return await asyncio.gather(*(grab() for _ in range(6)))

    times = sorted(asyncio.run(all_of_them()))
    assert times[3] - times[0] >= 0.25, times


def test_definitions_are_checked_naming_the_field(configured) -> None:
    with pytest.raises(cogworker.InvalidArgument, match="limit"):
        Limiter.bucket("py-bad", 0, 1)
    with pytest.raises(cogworker.InvalidArgument, match="lease_ttl"):
        Limiter.concurrent("py-bad", 1, lease_ttl=0.5)
    with pytest.raises(cogworker.InvalidArgument, match="interval"):
        Limiter.leaky("py-bad", 1, "fortnight")
    assert repr(Limiter.bucket("py-api", 10, "minute")) == "<Limiter bucket py-api limit=10>"
    # Made where Redis cannot be reached (an import before it is up): no
    # error until it is used.
    unreachable = Limiter.concurrent("py-later", 1, client=cogworker.Client("redis://127.0.0.1:1/0"))
    with pytest.raises(cogworker.RedisError):
        unreachable.acquire(wait=0)


def test_a_job_declaring_a_limiter_defined_here_runs_within_it(worker_factory) -> None:
    tasks.LIMITED.update(now=0, most=0, ran=0)
    Limiter.concurrent("py-one", 1)
    for _ in range(4):
        tasks.limited.enqueue(0.1)
    worker_factory(concurrency=4)
    wait_for("all four ran", lambda: tasks.LIMITED["ran"] == 4, timeout=20)
    assert tasks.LIMITED["most"] == 1
