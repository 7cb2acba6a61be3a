"""Failures: recorded with the exception's class, message and traceback;
retried; exhausted into dead; garbage payloads buried with their bytes."""

from __future__ import annotations

import os

import tasks
from conftest import wait_for

import cogworker


def setup_function() -> None:
    tasks.RESULTS.clear()


def test_a_failure_is_recorded_then_retried(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory()
    jid = tasks.flaky.enqueue("k1")
    wait_for("ran twice", lambda: tasks.RESULTS.count(("flaky", "k1")) == 2)
    attempts = wait_for("attempt recorded", lambda: api.attempts(jid))
    assert attempts[0]["error_class"] == "tasks.BoomError"
    assert attempts[0]["error_message"] == "first attempt of k1 fails"
    assert attempts[0]["outcome"] == "retry"
    counts = dict.fromkeys(
        ["expired", "cancelled", "collapsed", "throttled", "replaced", "backlog_dropped"], 0
    )
    counts.update(processed=1, failed=1)
    wait_for("stats", lambda: api.stats() == counts)


def test_exhausted_retries_land_in_dead_with_the_traceback(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory()
    jid = tasks.always_fails.enqueue()
    entry = wait_for("in dead", lambda: api.find("dead", jid))
    job = entry["job"]
    assert job["retry_count"] == 2
    assert job["error_class"] == "tasks.BoomError"
    assert job["error_message"] == "always ? fails", "lone surrogate made valid"
    assert any("raise BoomError" in line for line in job["error_backtrace"])
    assert job["error_backtrace"][-1].startswith("tasks.BoomError")
    # The frames are the app's: the worker's own (6 of 8 before) are left out.
    package = os.path.dirname(cogworker.__file__)
    frames = [line for line in job["error_backtrace"] if line.lstrip().startswith("File ")]
    assert frames and not [f for f in frames if package in f], job["error_backtrace"]


def test_retry_false_discards(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory()
    tasks.discard_on_failure.enqueue()
    wait_for("failed", lambda: api.stats()["failed"] == 1)
    assert api.set_size("retry") == 0
    assert api.set_size("dead") == 0


def test_unknown_handler_goes_to_retry(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory()
    jid = cogworker.Client().enqueue("NoSuch.Handler", 1)
    entry = wait_for("in retry", lambda: api.find("retry", jid))
    assert entry["job"]["error_class"] == "cogworker::UnknownHandler"


def test_garbage_payloads_are_buried_while_valid_jobs_flow(worker_factory, configured) -> None:
    api = cogworker.Api()
    worker_factory()
    garbage = ["not json", "[1,2]", '{"args":[]}', '{"class":"tasks.echo","args":"x"}']
    for raw in garbage:
        configured.cli_raw("LPUSH", "cogworker:queue:default", raw)
        tasks.echo.enqueue("ok")
    wait_for("garbage buried", lambda: api.set_size("dead") == len(garbage))
    wait_for("valid jobs ran", lambda: tasks.RESULTS.count(("ok",)) == len(garbage))
    kept = sorted(e["job"]["raw_payload"] for e in api.entries("dead"))
    assert kept == sorted(garbage)
    assert all(e["job"]["class"] == "(unparseable)" for e in api.entries("dead"))


def test_retry_now_from_dead(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory()
    jid = tasks.always_fails.enqueue()
    entry = wait_for("in dead", lambda: api.find("dead", jid))
    assert api.retry_now("dead", entry)
    # It runs again at once; its retries are spent, so one more failure buries it again.
    wait_for(
        "back in dead after one more failure",
        lambda: (found := api.find("dead", jid)) is not None and found["job"]["retry_count"] == 3,
    )
