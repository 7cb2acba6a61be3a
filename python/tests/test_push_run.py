"""Push → run for sync and async handlers; arguments round-trip exactly."""

from __future__ import annotations

import datetime as dt
import time

import pytest
import tasks
from conftest import wait_for

import cogworker

ARGS = ["héllo ✓ 🚀", 2**70, -(2**65), {"nested": [1, None, {"x": True}], "f": 1.5}, None, [], ""]


def setup_function() -> None:
    tasks.RESULTS.clear()


def test_sync_and_async_handlers_run_with_exact_args(worker_factory) -> None:
    worker_factory(concurrency=4)
    jid = tasks.echo.enqueue(*ARGS)
    assert len(jid) == 24
    tasks.async_echo.enqueue({"big": 2**80})
    wait_for("both ran", lambda: len(tasks.RESULTS) == 2)
    assert tuple(ARGS) in tasks.RESULTS
    assert ("async", {"big": 2**80}) in tasks.RESULTS


def test_the_decorated_function_stays_callable() -> None:
    tasks.echo(1, 2)
    assert tasks.RESULTS == [(1, 2)]
    assert tasks.echo.name == "tasks.echo"
    assert tasks.named.name == "Echo.Named"
    assert tasks.named.queue == "critical"


def test_a_push_whose_args_the_handler_cannot_take_is_refused_at_once(configured) -> None:
    """Checked against the handler's signature where it is registered in
    the pushing process, as Celery checks (issue #44 item 20: the push was
    taken and the worker failed later with TypeError)."""
    with pytest.raises(cogworker.InvalidArgument, match="sleeper.*tag") as refused:
        tasks.sleeper.enqueue(1)
    assert refused.value.field == "args"
    with pytest.raises(cogworker.InvalidArgument):
        tasks.sleeper.options(queue="q").enqueue(1, "a", "extra")
    with pytest.raises(cogworker.InvalidArgument):
        tasks.sleeper.enqueue_in(5, 1)
    assert tasks.sleeper.enqueue(1, "a") is not None
    assert tasks.echo.enqueue(1, 2, 3) is not None, "*args takes any"


def test_client_pushes_by_class_name_and_in_bulk(worker_factory) -> None:
    worker_factory(queues=["critical", "default"])
    client = cogworker.Client()
    client.enqueue("Echo.Named", "via client", queue="critical")
    jids = client.enqueue_many("tasks.echo", [(i,) for i in range(50)])
    assert len(set(jids)) == 50
    wait_for("51 ran", lambda: len(tasks.RESULTS) == 51)
    assert ("named", "via client") in tasks.RESULTS


def test_options_and_scheduled_jobs(worker_factory) -> None:
    worker_factory(queues=["critical", "default"])
    tasks.echo.options(queue="critical").enqueue("now")
    due = time.time() + 1.0
    tasks.echo.enqueue_in(dt.timedelta(seconds=1), "later")
    tasks.echo.enqueue_at(dt.datetime.fromtimestamp(due + 0.2), "at")
    wait_for("now ran", lambda: ("now",) in tasks.RESULTS)
    assert ("later",) not in tasks.RESULTS
    wait_for("scheduled ran", lambda: ("later",) in tasks.RESULTS and ("at",) in tasks.RESULTS, timeout=10)
    assert time.time() >= due


def test_handlers_run_on_threads_with_their_own_thread_locals(worker_factory) -> None:
    worker_factory(concurrency=3)
    cogworker.Client().enqueue_many("tasks.count_per_thread", [()] * 60)
    wait_for("60 ran", lambda: len(tasks.RESULTS) == 60)
    per_thread: dict[str, int] = {}
    for _, name, count in tasks.RESULTS:
        per_thread[name] = max(per_thread.get(name, 0), count)
    assert all(name.startswith("cogworker.processor-") for name in per_thread)
    assert sum(per_thread.values()) == 60, "each thread's local counter saw only its own jobs"


def test_ops_api_reports_queues_and_stats(worker_factory, configured) -> None:
    api = cogworker.Api()
    tasks.echo.enqueue(1)
    queues = {q["name"]: q for q in api.queues()}
    assert queues["default"]["size"] == 1
    api.pause_queue("default")
    assert api.queues()[0]["paused"]
    w = worker_factory()
    time.sleep(0.7)
    assert tasks.RESULTS == [], "paused"
    api.unpause_queue("default")
    wait_for("ran after unpause", lambda: tasks.RESULTS == [(1,)])
    wait_for("counted", lambda: api.stats()["processed"] == 1)
    processes = api.processes()
    assert processes[0]["identity"] == w.identity
    assert processes[0]["info"]["concurrency"] == 10
    assert api.history(5)[0]["class"] == "tasks.echo"
