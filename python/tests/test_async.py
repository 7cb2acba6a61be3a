"""``async def`` handlers run as coroutines on one event loop, as many at
once as ``async_concurrency`` allows whatever the thread ``concurrency``;
async server middleware wraps them; shutdown lets them finish before the
deadline and requeues what still runs after it; a coroutine that blocks the
loop is reported with its class and jid; async code pushes without
blocking its loop."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import wait_for

import cogworker
from cogworker import _hooks

STATE: dict[str, Any] = {}
_lock = threading.Lock()


def _reset() -> None:
    STATE.update(running=0, peak=0, done=[], wrapped=[])


@cogworker.job(name="Async.Nap")
async def nap(seconds: float, tag: str) -> None:
    with _lock:
        STATE["running"] += 1
        STATE["peak"] = max(STATE["peak"], STATE["running"])
    try:
        await asyncio.sleep(seconds)
    finally:
        with _lock:
            STATE["running"] -= 1
    STATE["done"].append(tag)


@cogworker.job(name="Async.Blocks")
async def blocks() -> None:
    time.sleep(0.8)  # the mistake the watchdog reports


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    _reset()
    _hooks.reset()
    yield
    _hooks.reset()


def test_coroutines_run_together_up_to_async_concurrency_whatever_the_threads(worker_factory) -> None:
    cogworker.Client().enqueue_many("Async.Nap", [[0.5, str(i)] for i in range(120)])
    worker_factory(concurrency=2, async_concurrency=50)
    wait_for("all ran", lambda: len(STATE["done"]) == 120, 30)
    assert STATE["peak"] == 50, "two threads fed fifty coroutines at once, never more"


def test_async_middleware_wraps_the_coroutine(worker_factory) -> None:
    class Timing:
        async def __call__(self, job: cogworker.RunningJob, call_next: Any) -> Any:
            STATE["wrapped"].append(("before", job.args[1], asyncio.current_task() is not None))
            value = await call_next()
            STATE["wrapped"].append(("after", job.args[1]))
            return value

    cogworker.server_middleware.add(Timing())
    nap.enqueue(0.01, "m")
    worker_factory(concurrency=1)
    wait_for("wrapped", lambda: ("after", "m") in STATE["wrapped"])
    assert STATE["wrapped"] == [("before", "m", True), ("after", "m")]
    assert STATE["done"] == ["m"]


def test_shutdown_lets_coroutines_finish_then_requeues_what_outlives_the_deadline(configured) -> None:
    nap.enqueue(0.5, "short")
    nap.enqueue(30, "long")
    worker = cogworker.Worker(concurrency=1, shutdown_timeout=2)
    worker.start()
    wait_for("both running", lambda: STATE["running"] == 2)
    worker.stop()
    assert worker.wait(15)
    worker.join(5)
    assert STATE["done"] == ["short"], "nothing was cancelled before the deadline"
    api = cogworker.Api()
    assert api.queue("default")["size"] == 1, "the long one is back on its queue"
    assert api.set_size("retry") == 0 and api.stats()["failed"] == 0


def test_a_coroutine_that_blocks_the_loop_is_reported(worker_factory, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="cogworker")
    jid = blocks.enqueue()
    worker_factory(concurrency=1)
    wait_for("the report", lambda: any("blocked" in r.getMessage() for r in caplog.records))
    (report,) = [r.getMessage() for r in caplog.records if "blocked" in r.getMessage()]
    assert f"Async.Blocks jid={jid}" in report, report


def test_async_code_pushes_without_blocking_its_loop(configured) -> None:
    async def main() -> list[Any]:
        return [
            await nap.aenqueue(0, "a"),
            await nap.options(queue="other").aenqueue(0, "b"),
            await cogworker.Client().aenqueue("Async.Nap", 0, "c"),
            await cogworker.Client().aenqueue_many("Async.Nap", [[0, "d"], [0, "e"]]),
        ]

    a, b, c, many = asyncio.run(main())
    assert all(isinstance(jid, str) for jid in (a, b, c, *many))
    api = cogworker.Api()
    assert api.queue("default")["size"] == 4 and api.queue("other")["size"] == 1


def test_many_coroutines_push_at_once_and_a_failed_push_raises_in_its_coroutine(configured) -> None:
    """A plain ``aenqueue`` is written by the engine with no thread
    waiting: 100 coroutines' pushes are all in flight at once, every one
    lands, and a push that fails raises in the coroutine that awaited it."""

    async def main() -> list[str | None]:
        return await asyncio.gather(*(nap.aenqueue(0, str(i)) for i in range(100)))

    jids = asyncio.run(main())
    assert len(set(jids)) == 100 and all(isinstance(jid, str) for jid in jids)
    assert cogworker.Api().queue("default")["size"] == 100

    async def unreachable() -> None:
        await cogworker.Client(redis_url="redis://127.0.0.1:1/0").aenqueue("Async.Nap", 0, "x")

    with pytest.raises(cogworker.RedisError, match="127.0.0.1:1"):
        asyncio.run(unreachable())

    async def invalid() -> None:
        await nap.aenqueue(0, object())

    with pytest.raises(cogworker.InvalidArgument):
        asyncio.run(invalid())
