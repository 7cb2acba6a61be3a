"""cogworker.testing: fake and inline modes, no Redis needed."""

from __future__ import annotations

import pytest
import tasks

import cogworker
from cogworker import testing


def setup_function() -> None:
    tasks.RESULTS.clear()


def test_fake_mode_records_and_drains() -> None:
    with testing.fake():
        jid = tasks.echo.enqueue(1, "two")
        tasks.echo.enqueue(3)
        assert len(tasks.echo.jobs) == 2
        assert tasks.echo.jobs[0]["jid"] == jid
        assert tasks.echo.jobs[0]["args"] == [1, "two"]
        assert tasks.RESULTS == []
        tasks.echo.perform_one()
        assert tasks.RESULTS == [(1, "two")]
        assert tasks.echo.drain() == 1
        assert tasks.echo.jobs == []
        cogworker.Client().enqueue("Echo.Named", "x")
        assert testing.jobs_for("Echo.Named")[0]["queue"] == "default"
        tasks.named.clear()
        assert tasks.named.jobs == []


def test_inline_mode_runs_at_push_including_async() -> None:
    with testing.inline():
        tasks.echo.enqueue("now")
        tasks.async_echo.enqueue("too")
    assert tasks.RESULTS == [("now",), ("async", "too")]


def test_inline_mode_raises_handler_errors() -> None:
    with testing.inline(), pytest.raises(tasks.BoomError):
        tasks.always_fails.enqueue()


def test_perform_one_with_nothing_recorded() -> None:
    with testing.fake(), pytest.raises(IndexError):
        tasks.echo.perform_one()


def test_push_options_are_the_cores_and_are_checked_where_a_job_declares_them() -> None:
    import datetime as dt
    import typing

    from cogworker import _core
    from cogworker.client import PushOptions

    # The typed options are the core's, less those with a method of their
    # own (enqueue_in) or set by the tracing.
    assert set(typing.get_type_hints(PushOptions)) | {"delay", "traceparent", "tracestate"} == set(
        _core.PUSH_OPTIONS
    )
    with pytest.raises(cogworker.InvalidArgument, match="limts"):
        cogworker.job(limts=["stripe"])(lambda: None)  # type: ignore[call-arg]
    with pytest.raises(cogworker.InvalidJob, match="expires_in"):
        cogworker.job(name="Bad.Expiry", expires_in="soon")(lambda: None)  # type: ignore[arg-type]

    def limited(n: int) -> None: ...

    handle = cogworker.job(name="Limited.Job", limits=["stripe"], expires_in=dt.timedelta(minutes=1))(limited)
    with testing.fake():
        soon = dt.datetime.now() + dt.timedelta(hours=1)
        handle.options(queue="mail", keep_expired=True).enqueue_at(soon, 1)
        [job] = handle.jobs
    assert (job["queue"], job["limits"], job["keep_expired"]) == ("mail", ["stripe"], True)
    assert abs(job["at"] - soon.timestamp()) < 0.01
    assert job["expires_at"] > job["created_at"] + 59
    with pytest.raises(cogworker.InvalidJob, match="at"):
        cogworker.Client().enqueue("X", at=dt.timedelta(hours=1))  # type: ignore[arg-type]
