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
