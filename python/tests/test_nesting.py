"""Values nested too deep, or containing themselves, are refused with a typed
error naming where they are (``args[…]`` at push, ``result`` when a handler
returns one) instead of crashing the process; one limit, the core's, holds
at push and when a worker reads a job."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tasks
from conftest import wait_for

import cogworker

LIMIT = 100


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@cogworker.job(name="Nesting.DeepResult", result_ttl=600, retry=False)
def deep_result(depth: int) -> list[Any]:
    return nested(depth)


def setup_function() -> None:
    tasks.RESULTS.clear()


def test_a_cyclic_or_very_deep_value_raises_instead_of_crashing(configured) -> None:
    cyclic_list: list[Any] = []
    cyclic_list.append(cyclic_list)
    cyclic_dict: dict[str, Any] = {}
    cyclic_dict["self"] = cyclic_dict
    client = cogworker.Client()
    for value in (cyclic_list, cyclic_dict, nested(100_000)):
        with pytest.raises(cogworker.InvalidArgument) as raised:
            client.enqueue("Work", 1, value)
        assert raised.value.field == "args[1]"
        assert f"deeper than {LIMIT} levels" in str(raised.value)
    assert cogworker.Api().queues() == [], "nothing was pushed"


def test_the_limit_is_one_number_at_push(worker_factory) -> None:
    with pytest.raises(cogworker.InvalidArgument, match=f"deeper than {LIMIT} levels"):
        tasks.echo.enqueue(nested(LIMIT + 1))
    with pytest.raises(cogworker.InvalidArgument, match=f"deeper than {LIMIT} levels"):
        tasks.echo.enqueue(nested(200))
    worker_factory()
    tasks.echo.enqueue(nested(LIMIT))
    wait_for("the deepest allowed ran", lambda: tasks.RESULTS == [(nested(LIMIT),)])


def test_a_raw_payload_nested_past_the_limit_is_buried_naming_it(worker_factory, configured) -> None:
    raw = json.dumps({"class": "tasks.echo", "queue": "default", "jid": "deep1", "args": [nested(LIMIT + 1)]})
    configured.cli_raw("LPUSH", "cogworker:queue:default", raw)
    worker_factory()
    [entry] = wait_for("in dead", lambda: cogworker.Api().entries("dead"))
    assert entry["job"]["raw_payload"] == raw, "its bytes kept"
    assert f"deeper than {LIMIT} levels" in entry["job"]["error_message"]
    assert tasks.RESULTS == []


def test_a_handler_returning_a_very_deep_value_fails_and_the_worker_goes_on(worker_factory) -> None:
    worker_factory()
    jid = deep_result.enqueue(100_000)
    with pytest.raises(cogworker.JobFailed) as raised:
        cogworker.Client().result(jid, wait=10)
    assert "result" in raised.value.error_message
    assert f"deeper than {LIMIT} levels" in raised.value.error_message
    tasks.echo.enqueue("after")
    wait_for("the worker went on", lambda: tasks.RESULTS == [("after",)])
