"""Fair groups inside a queue (issue #46): a job's group, given at its push
or computed from its args by its declaration, and the turns groups take."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from conftest import wait_for

import cogworker
from cogworker import testing

RAN: list[tuple[Any, ...]] = []


@cogworker.job(name="Groups.ByAccount", group=lambda account_id, *_: f"acct:{account_id}")
def by_account(account_id: int, n: int) -> None:
    RAN.append((account_id, n))


@cogworker.job(name="Groups.Plain")
def plain(n: int) -> None:
    RAN.append(("plain", n))


# Per account: how many of its jobs run now, and the most that ran at once.
RUNNING: dict[int, list[int]] = {}
RUNNING_LOCK = threading.Lock()


@cogworker.job(name="Groups.Capped", group=lambda account_id, *_: f"acct:{account_id}", group_cap=2)
def capped(account_id: int, n: int) -> None:
    with RUNNING_LOCK:
        now_and_most = RUNNING.setdefault(account_id, [0, 0])
        now_and_most[0] += 1
        now_and_most[1] = max(now_and_most)
    time.sleep(0.05)
    with RUNNING_LOCK:
        RUNNING[account_id][0] -= 1
    RAN.append((account_id, n))


@cogworker.job(
    name="Groups.Paced", group=lambda api_key, *_: f"api:{api_key}", group_rate=3, group_rate_period=0.5
)
def paced(api_key: int, n: int) -> None:
    RAN.append(("paced", api_key, n, time.monotonic()))


def setup_function() -> None:
    RAN.clear()
    RUNNING.clear()


def test_a_declared_group_is_computed_from_each_pushs_args_and_checked_by_the_core() -> None:
    with testing.fake():
        by_account.enqueue(42, 1)
        by_account.options(group="fixed").enqueue(7, 2)
        by_account.options(group=lambda *_: None).enqueue(7, 3)
        cogworker.Client().enqueue("Groups.Plain", 1, group="tenant-1")
        cogworker.Client().enqueue_many("Groups.ByAccount", [(1, 0), (2, 0)], group=lambda a, _: f"t{a}")
        jobs = testing.jobs_for("Groups.ByAccount")
        assert [job.get("group") for job in jobs] == ["acct:42", "fixed", None, "t1", "t2"]
        assert testing.jobs_for("Groups.Plain")[0]["group"] == "tenant-1"
        # What the function returns is checked as any group; what it
        # raises, the push raises.
        for bad in ["", 42, "x" * 257, "a\nb"]:
            with pytest.raises(cogworker.InvalidJob, match="group"):
                by_account.options(group=lambda *_, bad=bad: bad).enqueue(1, 1)
        with pytest.raises(ZeroDivisionError):
            by_account.options(group=lambda *_: 1 / 0).enqueue(1, 1)
        for bad in ["", 42, -1, float("nan"), float("inf"), ["a"], {"a": 1}]:
            with pytest.raises(cogworker.InvalidJob, match="group"):
                plain.options(group=bad).enqueue(1)  # type: ignore[arg-type]
    with pytest.raises(cogworker.InvalidJob, match="group"):
        cogworker.job(name="Groups.Bad", group=7)(plain.func)  # type: ignore[arg-type]


def test_a_tenants_backlog_does_not_hold_back_anothers_jobs(configured, worker_factory) -> None:
    for n in range(30):
        by_account.enqueue(1, n)
    by_account.enqueue(2, 0)
    by_account.enqueue(2, 1)
    plain.enqueue(0)
    assert configured.cli_raw("LLEN", "cogworker:group:default acct:1") == "30"
    assert cogworker.Api().queue("default")["size"] == 33
    worker_factory(concurrency=1)
    wait_for("every job ran", lambda: len(RAN) == 33)
    assert RAN.index((2, 0)) < 4 and RAN.index((2, 1)) < 7, RAN
    assert RAN.index(("plain", 0)) < 4, RAN
    assert [n for account, n in RAN if account == 1] == list(range(30))
    # The next fetch finds the groups empty and drops them.
    wait_for("no group key left", lambda: configured.cli_raw("KEYS", "cogworker:group*") == "")


def test_groups_are_listed_weighed_paused_and_resumed_through_the_api(configured) -> None:
    for n in range(3):
        by_account.enqueue(1, n)
    api = cogworker.Api()
    api.set_group_weight("default", "acct:1", 2.5)
    assert api.pause_group("default", "acct:1") is True
    [group] = api.groups("default")
    assert (group["name"], group["size"], group["weight"], group["paused"]) == ("acct:1", 3, 2.5, True)
    assert group["turns"] is None
    assert api.resume_group("default", "acct:1") is True
    assert api.groups("default")[0]["paused"] is False
    for bad in [0, -1, float("nan"), 2e6]:
        with pytest.raises(cogworker.InvalidArgument, match="weight"):
            api.set_group_weight("default", "acct:1", bad)
    with pytest.raises(cogworker.InvalidArgument, match="group"):
        api.pause_group("default", "")


def test_a_cap_declared_on_the_function_limits_each_key_fleet_wide(configured, worker_factory) -> None:
    for n in range(12):
        capped.enqueue(n % 3, n)
    assert [group["cap"] for group in cogworker.Api().groups("default")] == [2, 2, 2]
    worker_factory(concurrency=8)
    wait_for("every job ran", lambda: len(RAN) == 12)
    assert RUNNING == {0: [0, 2], 1: [0, 2], 2: [0, 2]}
    # The next fetch finds the groups empty and drops them.
    wait_for("no group key left", lambda: configured.cli_raw("KEYS", "cogworker:group*") == "")


def test_a_bad_group_cap_is_refused_at_push_and_buried_when_raw(configured, worker_factory) -> None:
    for bad in [0, -1, 2_000_000, 1.5, float("nan"), float("inf"), "2", [2], True]:
        with pytest.raises(cogworker.InvalidJob, match="group_cap"):
            capped.options(group_cap=bad).enqueue(1, 1)  # type: ignore[arg-type]
    with pytest.raises(cogworker.InvalidJob, match="group_cap"):
        cogworker.job(name="Groups.BadCap", group_cap=-3)(plain.func)
    raw = {"class": "Groups.Capped", "args": [1, 1], "jid": "e" * 24, "group": "g", "group_cap": 1e300}
    configured.cli_raw("LPUSH", "cogworker:queue:default", json.dumps(raw))
    worker_factory(concurrency=1)
    wait_for("the payload is buried", lambda: configured.cli_raw("ZCARD", "cogworker:dead") == "1")
    [buried] = cogworker.Api().entries("dead")
    assert "`group_cap` is 1e+300" in buried["job"]["error_message"], buried
    assert RAN == []


def test_a_rate_declared_on_the_function_paces_each_key(configured, worker_factory) -> None:
    for n in range(9):
        paced.enqueue(1, n)
    paced.enqueue(2, 0)
    [first, second] = sorted(cogworker.Api().groups("default"), key=lambda g: g["name"])
    assert (first["rate"], first["rate_period"]) == (3, 0.5)
    worker_factory(concurrency=8)
    wait_for("every paced job ran", lambda: len(RAN) == 10)
    key1 = [at for _, key, _, at in RAN if key == 1]
    assert key1[-1] - key1[0] >= 0.9, "9 at 3 per 0.5 s take at least two more periods"
    key2 = next(at for _, key, _, at in RAN if key == 2)
    assert key2 < key1[-1], "the other key did not wait behind it"
    for bad in [0, -1, 2.5, "10/s", True]:
        with pytest.raises(cogworker.InvalidJob, match="group_rate"):
            paced.options(group_rate=bad).enqueue(1, 1)  # type: ignore[arg-type]
    with pytest.raises(cogworker.InvalidJob, match="group_rate_period"):
        paced.options(group_rate_period=0).enqueue(1, 1)


def test_a_backlog_cap_refuses_a_push_past_it_naming_the_group(configured) -> None:
    bounded = plain.options(group="inbox:1", group_backlog=2)
    bounded.enqueue(1)
    bounded.enqueue(2)
    with pytest.raises(cogworker.OverLimit, match="group inbox:1"):
        bounded.enqueue(3)
    dropping = plain.options(group="inbox:2", group_backlog=1, group_backlog_full="drop_oldest")
    for n in range(3):
        dropping.enqueue(n)
    assert cogworker.Api().stats()["backlog_dropped"] == 2
    assert sorted((g["name"], g["size"]) for g in cogworker.Api().groups("default")) == [
        ("inbox:1", 2),
        ("inbox:2", 1),
    ]
    for bad in [0, -1, "many", True]:
        with pytest.raises(cogworker.InvalidJob, match="group_backlog"):
            plain.options(group="g", group_backlog=bad).enqueue(1)  # type: ignore[arg-type]
