"""Job results (opt-in with ``result_ttl``): the returned value, the error
of a job that failed for good, pending statuses, waiting without polling,
a return value JSON cannot hold failing the job, async handlers, and a job
without ``result_ttl`` keeping nothing."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from conftest import wait_for

import cogworker


@cogworker.job(name="Results.Add", result_ttl=600)
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b, "big": 2**70}


@cogworker.job(name="Results.Fails", result_ttl=600, retry=1, retry_in=lambda count, error: 0)
def fails() -> None:
    raise ValueError("no luck")


@cogworker.job(name="Results.NotJson", result_ttl=600, retry=False)
def not_json() -> object:
    return object()


@cogworker.job(name="Results.Slow", result_ttl=600)
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


ATTEMPTS: list[str] = []


@cogworker.job(name="Results.Flaky", result_ttl=600, retry=2, retry_in=lambda count, error: 0)
def flaky(key: str) -> str:
    ATTEMPTS.append(key)
    if ATTEMPTS.count(key) == 1:
        raise ValueError("first run fails")
    return f"{key} on run {ATTEMPTS.count(key)}"


@cogworker.job(name="Results.Plain")
def plain() -> int:
    return 1


def test_the_value_a_job_returned(worker_factory) -> None:
    jid = add.enqueue(2, 3)
    client = cogworker.Client()
    assert client.result(jid) == cogworker.Pending(jid, "queued")
    assert client.status(jid) == "queued"
    later = add.enqueue_in(3600, 1, 1)
    assert client.status(later) == "scheduled"
    worker_factory()
    assert client.result(jid, wait=10) == {"sum": 5, "big": 2**70}
    assert client.status(jid) == "succeeded"
    record = cogworker.Api().result(jid)
    assert record["class"] == "Results.Add" and record["retry_count"] == 0
    assert record["started_at"] <= record["finished_at"]


def test_a_job_that_failed_for_good_raises_job_failed_after_retrying(worker_factory) -> None:
    jid = fails.enqueue()
    worker_factory()
    client = cogworker.Client()
    with pytest.raises(cogworker.JobFailed) as raised:
        client.result(jid, wait=15)
    assert raised.value.status == "dead" and raised.value.error_class == "ValueError"
    assert raised.value.error_message == "no luck"
    assert isinstance(raised.value, cogworker.Error)


def test_a_value_json_cannot_hold_fails_the_job(worker_factory) -> None:
    jid = not_json.enqueue()
    worker_factory()
    with pytest.raises(cogworker.JobFailed) as raised:
        cogworker.Client().result(jid, wait=10)
    assert raised.value.status == "failed" and "result" in raised.value.error_message


def test_waiting_blocks_until_the_job_is_done_and_wakes_every_waiter(worker_factory) -> None:
    jid = slow.enqueue(0.5)
    got: list[Any] = []
    waiters = [
        threading.Thread(target=lambda: got.append(cogworker.Client().result(jid, wait=20))) for _ in range(3)
    ]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.2)
    worker_factory()
    for waiter in waiters:
        waiter.join(20)
    assert got == ["slept"] * 3

    async def main() -> Any:
        return await cogworker.Client().aresult(jid, wait=1)

    assert asyncio.run(main()) == "slept"
    # A wait that times out returns the status as it stands.
    assert cogworker.Client().result("no-such-jid", wait=0.2) == cogworker.Pending("no-such-jid", "unknown")


def test_a_job_without_result_ttl_keeps_nothing(worker_factory) -> None:
    jid = plain.enqueue()
    worker_factory()
    wait_for("it ran", lambda: cogworker.Api().stats()["processed"] == 1)
    assert cogworker.Client().status(jid) == "unknown"
    assert cogworker.Api().result(jid) is None


def test_the_result_of_a_job_that_succeeded_after_a_retry(worker_factory) -> None:
    jid = flaky.enqueue("k")
    worker_factory()
    assert cogworker.Client().result(jid, wait=15) == "k on run 2"
    assert cogworker.Api().result(jid)["retry_count"] == 1


@cogworker.job(name="Results.WhoAmI", result_ttl=600, retry=1, retry_in=lambda count, error: 0)
def who_am_i() -> dict[str, Any]:
    job = cogworker.current_job()
    assert job is not None
    if job.retry_count == 0:
        raise ValueError("fail the first run, to see the retry count")
    return {"jid": job.jid, "retry_count": job.retry_count, "worker": job.worker}


@cogworker.job(name="Results.WhoAmIAsync", result_ttl=600)
async def who_am_i_async() -> str | None:
    await asyncio.sleep(0)
    job = cogworker.current_job()
    return job.jid if job else None


def test_a_handler_reads_its_own_job_with_current_job(worker_factory) -> None:
    assert cogworker.current_job() is None, "outside a job"
    jid, async_jid = who_am_i.enqueue(), who_am_i_async.enqueue()
    worker = worker_factory()
    client = cogworker.Client()
    assert client.result(jid, wait=15) == {"jid": jid, "retry_count": 1, "worker": worker.identity}
    assert client.result(async_jid, wait=15) == async_jid
    assert cogworker.Api().result(jid)["worker"] == worker.identity
    with cogworker.testing.fake():
        fake_jid = who_am_i_async.enqueue()
        assert who_am_i_async.perform_one() == fake_jid
