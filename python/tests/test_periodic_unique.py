"""Periodic entries and unique jobs from Python: validation, a worker
process ticking (and booting despite an entry no handler here runs), and
unique pushes that dedupe until the job ran."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from conftest import HERE, RedisServer, wait_for, worker_env
from test_cli import exit_code, lines, read

import cogworker
from cogworker import _periodic as periodic_module


@pytest.fixture(autouse=True)
def no_entries():
    periodic_module.clear()
    yield
    periodic_module.clear()


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"cron": "61 * * * *"}, "periodic.cron"),
        ({"cron": "* * *"}, "periodic.cron"),
        ({"cron": "* * * * *", "tz": "Mars/Olympus"}, "periodic.tz"),
        ({"cron": "* * * * *", "unique": "forever"}, "periodic.unique"),
        ({"cron": "* * * * *", "queue": ""}, "periodic.queue"),
        ({"cron": "* * * * *", "args": [object()]}, "periodic.args"),
    ],
)
def test_bad_entries_name_the_field(kwargs, named):
    cron = kwargs.pop("cron")
    with pytest.raises(cogworker.ConfigError, match=named):
        cogworker.periodic(cron, "Some.Class", **kwargs)
    assert periodic_module.entries() == []


def test_entries_take_the_handles_name_and_queue():
    @cogworker.job(queue="reports", name="Reports.Daily")
    def daily() -> None: ...

    pjid = cogworker.periodic("0 9 * * 1-5", daily, tz="Europe/Paris", unique="until_executed")
    again = cogworker.periodic("0 9 * * 1-5", daily, tz="Europe/Paris", unique="until_executed")
    assert pjid == again and len(pjid) == 20
    [entry] = periodic_module.entries()
    assert entry["class"] == "Reports.Daily" and entry["queue"] == "reports"


def test_a_worker_process_ticks_and_boots_past_an_unknown_class(redis_server: RedisServer, tmp_path):
    results = str(tmp_path / "ticks.txt")
    log_path = str(tmp_path / "worker.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cogworker", "worker", "periodic_tasks", "-c", "2"],
            env=worker_env(redis_server, TEST_RESULTS_FILE=results),
            cwd=HERE,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        wait_for("three ticks ran", lambda: len(lines(results)) >= 3, timeout=20)
        api = cogworker.Api(redis_url=redis_server.url)
        entries = {e["class"]: e for e in api.periodic()}
        assert entries["periodic_tasks.tick"]["last_slot"] > 0
        # The other entry still fires, onto its queue, for a worker elsewhere.
        queued_elsewhere = lambda: int(redis_server.cli_raw("LLEN", "cogworker:queue:elsewhere")) > 0  # noqa: E731
        wait_for("the unhandled entry pushed", queued_elsewhere)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert exit_code(proc) == 0
    assert set(lines(results)) == {"py-tick"}
    log = read(log_path)
    assert "Reports.Missing has no handler in this process" in log, log


def test_unique_jobs_dedupe_until_they_ran(configured: RedisServer, worker_factory):
    @cogworker.job(unique_for=60, name="Unique.Job")
    def once(value: int) -> None: ...

    first = once.enqueue(1)
    assert first is not None
    assert once.enqueue(1) is None, "duplicate refused"
    assert once.enqueue(2) is not None, "other args are another job"
    client = cogworker.Client()
    assert client.enqueue("Unique.Job", 1, unique_for=60) is None
    api = cogworker.Api()
    locks = api.unique_locks()
    assert {lock["jid"] for lock in locks} >= {first}
    assert all(0 < lock["ttl"] <= 60 for lock in locks)

    # An operator can clear a lock by hand: the job can be pushed again.
    [held] = [lock for lock in locks if lock["jid"] == first]
    assert api.clear_unique_lock(held["digest"])
    assert once.enqueue(1) is not None

    worker_factory()
    wait_for("all three ran", lambda: api.stats()["processed"] == 3)
    assert api.unique_locks() == []
    assert once.enqueue(1) is not None, "released once it ran"


def test_a_cron_that_never_fires_is_refused() -> None:
    with pytest.raises(cogworker.ConfigError) as info:
        cogworker.periodic("0 0 31 2 *", "Never.Runs")
    assert info.value.field == "periodic.cron"
    assert "never fires" in str(info.value)
