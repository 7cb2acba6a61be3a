"""Flow control by key (issue #46 part 3): a debounce or a singleton
declared on a function, its key computed from each push's args."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from conftest import wait_for

import cogworker

RAN: list[tuple[Any, ...]] = []


@cogworker.job(name="Flow.Reindex", key=lambda doc_id, *_: f"doc:{doc_id}", debounce=0.3)
def reindex(doc_id: int, n: int) -> None:
    RAN.append((doc_id, n))


@cogworker.job(name="Flow.Report", key=lambda report_id, *_: f"report:{report_id}", unique_for=60)
def report(report_id: int, n: int) -> None:
    RAN.append(("report", report_id))


@cogworker.job(
    name="Flow.Poll", key=lambda feed_id, *_: f"feed:{feed_id}", throttle=60, throttle_excess="drop"
)
def poll(feed_id: int, n: int) -> None:
    RAN.append(("poll", feed_id, n))


@cogworker.job(name="Flow.Sync", key=lambda user_id, *_: f"user:{user_id}", replace=True)
def sync(user_id: int, n: int) -> None:
    RAN.append(("sync", user_id, n))


@cogworker.job(name="Flow.Apply", key=lambda account, *_: f"acct:{account}", sequence=True)
def apply(account: int, n: int) -> None:
    RAN.append(("apply", account, n))
    time.sleep(0.02)


def setup_function() -> None:
    RAN.clear()


def test_a_debounce_declared_on_a_function_runs_each_keys_burst_once_with_its_last_args(
    configured, worker_factory
) -> None:
    jids = {reindex.enqueue(1, n) for n in range(20)}
    other = reindex.enqueue(2, 0)
    assert len(jids) == 1 and other not in jids
    worker_factory(concurrency=2)
    wait_for("both bursts ran", lambda: len(RAN) == 2)
    assert sorted(RAN) == [(1, 19), (2, 0)]


def test_a_singleton_answers_concurrent_pushes_with_the_pending_jobs_jid(configured, worker_factory) -> None:
    answers: list[str | None] = []

    def push_ten(first: int) -> None:
        answers.extend(report.enqueue(7, n) for n in range(first, first + 10))

    threads = [threading.Thread(target=push_ten, args=(10 * t,)) for t in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 100 and len(set(answers)) == 1 and answers[0], answers
    assert cogworker.Api().queue("default")["size"] == 1
    worker_factory(concurrency=1)
    wait_for("the report ran", lambda: RAN == [("report", 7)])


def test_flow_options_are_checked_where_they_are_written_and_at_each_push(configured) -> None:
    with pytest.raises(cogworker.InvalidJob, match="key"):
        cogworker.job(name="Flow.NoKey", debounce=1)(reindex.func)
    for bad in [0, -1, float("nan"), 1e300, "soon", True]:
        with pytest.raises(cogworker.InvalidJob, match="debounce"):
            cogworker.job(name="Flow.BadWindow", key=lambda *_: "k", debounce=bad)(reindex.func)  # type: ignore[arg-type]
    with pytest.raises(cogworker.InvalidJob, match="debounce_max"):
        reindex.options(debounce=2, debounce_max=1).enqueue(1, 1)
    with pytest.raises(cogworker.InvalidJob, match="at"):
        reindex.options(at=time.time() + 60).enqueue(1, 1)
    for bad in ["", 42, "x" * 257, "a\nb", ["k"]]:
        with pytest.raises(cogworker.InvalidJob, match="key"):
            reindex.options(key=lambda *_, bad=bad: bad).enqueue(1, 1)
    with pytest.raises(ZeroDivisionError):
        reindex.options(key=lambda *_: 1 / 0).enqueue(1, 1)


def test_a_throttle_declared_on_a_function_drops_a_keys_pushes_until_its_next_window(
    configured, worker_factory
) -> None:
    answers = [poll.enqueue(1, n) for n in range(5)] + [poll.enqueue(2, 0)]
    assert answers[0] and answers[1:5] == [None] * 4 and answers[5], answers
    assert configured.cli_raw("GET", "cogworker:stat:throttled") == "4"
    delayed = poll.options(throttle_excess="delay").enqueue(1, 9)
    assert [entry["job"]["jid"] for entry in cogworker.Api().entries("scheduled")] == [delayed]
    worker_factory(concurrency=1)
    wait_for("the two feeds polled", lambda: sorted(RAN) == [("poll", 1, 0), ("poll", 2, 0)])


def test_a_replacing_push_replaces_its_keys_waiting_job_in_place(configured, worker_factory) -> None:
    jids = {sync.enqueue(1, n) for n in range(5)}
    other = sync.enqueue(2, 0)
    assert len(jids) == 1 and other not in jids
    assert cogworker.Api().queue("default")["size"] == 2
    assert cogworker.Api().stats()["replaced"] == 4
    keys = {(k["mode"], k["class"], k["key"]): (k["jid"], k["waiting"]) for k in cogworker.Api().flow_keys()}
    assert keys == {
        ("replace", "Flow.Sync", "user:1"): (jids.pop(), True),
        ("replace", "Flow.Sync", "user:2"): (other, True),
    }
    worker_factory(concurrency=1)
    wait_for("both users synced", lambda: RAN == [("sync", 1, 4), ("sync", 2, 0)])
    with pytest.raises(cogworker.InvalidJob, match="replace"):
        sync.options(replace="yes").enqueue(1, 1)  # type: ignore[arg-type]


def test_a_sequence_declared_on_a_function_runs_each_keys_jobs_in_push_order(
    configured, worker_factory
) -> None:
    for n in range(6):
        apply.enqueue(1, n)
        apply.enqueue(2, n)
    assert [g["cap"] for g in cogworker.Api().groups("default")] == [1, 1]
    worker_factory(concurrency=4)
    wait_for("every job applied", lambda: len(RAN) == 12)
    for account in (1, 2):
        assert [n for _, a, n in RAN if a == account] == list(range(6))
    with pytest.raises(cogworker.InvalidJob, match="group_cap"):
        apply.options(group_cap=3).enqueue(1, 1)
