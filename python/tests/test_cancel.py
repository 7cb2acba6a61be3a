"""Cancellation from Python (issue #30, part 5): an ``async def`` handler is
cancelled outright, a plain one reads ``current_job().cancelled`` and
stops; either way the job is filed as cancelled and never retried."""

from __future__ import annotations

import time

import pytest
import tasks
from conftest import wait_for

import cogworker


def setup_function() -> None:
    tasks.CANCELS.clear()


@pytest.mark.parametrize(
    ("handle", "seen"), [(tasks.long_async, "cancelled outright"), (tasks.long_sync, "stopped early")]
)
def test_a_running_job_is_cancelled_within_a_second_and_never_retried(worker_factory, handle, seen) -> None:
    hooks = cogworker.Hooks()
    reported: list[str] = []

    @hooks.on_error
    def report(error: BaseException, job: cogworker.RunningJob) -> None:
        reported.append(type(error).__name__)

    worker_factory(concurrency=2, hooks=hooks)
    client = cogworker.Client()
    jid = handle.enqueue()
    wait_for("it started", lambda: tasks.CANCELS == ["started"])
    wait_for("it shows as busy", lambda: cogworker.Api().busy())
    asked = time.monotonic()
    assert client.cancel(jid) == "running"
    with pytest.raises(cogworker.JobFailed) as failed:
        client.result(jid, wait=5)
    assert time.monotonic() - asked < 1.0
    assert (failed.value.status, failed.value.error_class) == ("cancelled", "cogworker::Cancelled")
    wait_for("it stopped", lambda: tasks.CANCELS == ["started", seen], timeout=1)
    api = cogworker.Api()
    wait_for("filed by the worker", lambda: "stopped" in (api.result(jid) or {}).get("error_message", ""))
    assert client.status(jid) == "cancelled"
    # The busy entry goes with the next acknowledgement, just after the filing.
    wait_for("it left the busy list", lambda: not api.busy(), timeout=2)
    assert api.set_size("retry") == 0
    assert reported == [], "a cancellation is no error to report"


def test_a_scheduled_job_is_taken_off_and_an_unknown_one_is_said(configured) -> None:
    client = cogworker.Client()
    jid = tasks.long_sync.enqueue_in(3600)
    assert client.cancel(jid) == "scheduled"
    assert cogworker.Api().set_size("scheduled") == 0
    assert client.status(jid) == "cancelled"
    assert client.cancel("f00f00f00f00f00f00f00f00") == "unknown"
