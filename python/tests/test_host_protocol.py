"""However a handler ends, its job is settled exactly once and its slot is
freed: BaseException subclasses, SystemExit and KeyboardInterrupt (recorded,
then a graceful stop), exceptions whose __str__ raises, retry hooks that
return the wrong thing or raise, wrapped coroutines, async handlers that
raise BaseException. Afterwards the worker still runs jobs on every slot."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import escapes
import pytest
from conftest import HERE, wait_for, worker_env

import cogworker


def setup_function() -> None:
    escapes.RAN.clear()
    escapes.together.reset()


def retried(api: cogworker.Api, jid: str | None) -> dict:
    return wait_for(f"{jid} in retry", lambda: api.find("retry", jid))


def test_every_wrong_ending_is_filed_and_every_slot_runs_again(worker_factory) -> None:
    api = cogworker.Api()
    worker_factory(concurrency=escapes.ALL_SLOTS)
    base = retried(api, escapes.raises_base_exception.enqueue())
    assert base["job"]["error_class"] == "escapes.NotAnException"
    assert base["job"]["error_message"] == "not an Exception"
    bad_str = retried(api, escapes.raises_bad_str.enqueue())
    assert bad_str["job"]["error_class"] == "escapes.BadStr"
    assert "could not be read" in bad_str["job"]["error_message"]
    in_timedelta = retried(api, escapes.retry_in_timedelta.enqueue())
    assert 990 < in_timedelta["score"] - time.time() <= 1000
    for handle in (escapes.retry_in_string, escapes.retry_in_raises):
        entry = retried(api, handle.enqueue())
        assert 10 < entry["score"] - time.time() < 30, "the default backoff"
    from_coroutine = retried(api, escapes.async_base_exception.enqueue())
    assert from_coroutine["job"]["error_message"] == "from a coroutine"
    escapes.wrapped_coroutine.enqueue("ran")
    wait_for("the wrapped coroutine ran", lambda: ("wrapped", "ran") in escapes.RAN)

    for n in range(escapes.ALL_SLOTS):
        escapes.all_at_once.enqueue(n)
    wait_for("every slot busy at once", lambda: len(escapes.RAN) == 1 + escapes.ALL_SLOTS)
    escapes.together.reset()
    for n in range(escapes.ALL_SLOTS):
        escapes.async_all_at_once.enqueue(n)
    wait_for("async jobs on every slot", lambda: len(escapes.RAN) == 1 + 2 * escapes.ALL_SLOTS)
    processed = 1 + 2 * escapes.ALL_SLOTS
    assert api.stats() == {
        "processed": processed,
        "failed": 6,
        "expired": 0,
        "cancelled": 0,
        "collapsed": 0,
        "throttled": 0,
        "replaced": 0,
        "backlog_dropped": 0,
    }


@pytest.mark.parametrize(
    ("push", "error_class"),
    [
        (lambda: escapes.exits.enqueue(3), "SystemExit"),
        (lambda: escapes.interrupted.enqueue(), "KeyboardInterrupt"),
        (lambda: escapes.async_exits.enqueue(), "SystemExit"),
    ],
)
def test_exit_from_a_job_is_its_failure_and_stops_the_worker(worker_factory, push, error_class) -> None:
    api = cogworker.Api()
    worker = worker_factory()
    entry = retried(api, push())
    assert entry["job"]["error_class"] == error_class
    assert worker.wait(15), "the worker stopped"
    assert worker.join(5)
    # Any float: infinity waits (here: returns at once), NaN is named.
    assert worker.wait(math.inf) and worker.wait(-1.0)
    with pytest.raises(cogworker.InvalidArgument, match="timeout"):
        worker.wait(math.nan)


def test_exit_in_a_job_ends_the_worker_process_with_0(configured, tmp_path) -> None:
    log = tmp_path / "worker.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cogworker", "worker", "escapes"],
            env=worker_env(configured),
            cwd=HERE,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    jid = cogworker.Client().enqueue("escapes.exits", 1)
    assert proc.wait(30) == 0, log.read_text()
    assert cogworker.Api().find("retry", jid)["job"]["error_class"] == "SystemExit"


def test_term_with_stuck_handlers_waits_one_deadline_not_one_per_thread(configured, tmp_path) -> None:
    results = tmp_path / "results.txt"
    env = worker_env(configured, TEST_RESULTS_FILE=str(results))
    with open(tmp_path / "worker.log", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cogworker", "worker", "escapes", "-c", "20", "--shutdown-timeout", "1"],
            env=env,
            cwd=HERE,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    cogworker.Client().enqueue_many("escapes.stuck", [(120,)] * 20)
    wait_for("20 stuck", lambda: results.exists() and results.read_text().count("stuck") == 20)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(30) == 0
    assert time.monotonic() - started < 15, "one deadline for all slot threads"
    assert cogworker.Api().queue("default")["size"] == 20, "all requeued"


def test_handlers_of_one_name_are_refused() -> None:
    def factory(n: int):
        def handler() -> None: ...

        return handler

    cogworker.job(name="escapes.factory_made")(factory(1))
    with pytest.raises(cogworker.ConfigError) as info:
        cogworker.job(name="escapes.factory_made")(factory(2))
    assert info.value.field == "name"
    assert "already the name of" in str(info.value)


def test_fake_mode_refuses_what_a_real_push_would(configured) -> None:
    with cogworker.testing.fake():
        with pytest.raises(cogworker.InvalidJob) as info:
            escapes.exits.enqueue(object())
        assert info.value.field == "args[0]"
        with pytest.raises(cogworker.InvalidJob) as info:
            escapes.exits.options(queue="").enqueue(1)
        assert info.value.field == "queue"
        with pytest.raises(cogworker.InvalidJob) as info:
            escapes.exits.enqueue_in(float("nan"), 1)
        assert info.value.field == "delay"
        with pytest.raises(cogworker.InvalidJob) as info:
            escapes.exits.enqueue("lone \udcff surrogate")
        assert info.value.field == "args[0]"
        assert escapes.exits.jobs == []


def test_every_api_call_is_a_typed_method() -> None:
    import re
    from pathlib import Path

    stub = (Path(cogworker.__file__).parent / "api.pyi").read_text()
    typed = set(re.findall(r"    def (\w+)\(", stub))
    for name, _params, _help in cogworker.Api.calls():
        assert name in typed, f"api.pyi lacks {name}"
        assert callable(getattr(cogworker.Api, name))


def test_a_slot_thread_that_cannot_start_fails_the_start(configured, monkeypatch) -> None:
    import threading

    started = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name.startswith("cogworker.processor-") and len(started) == 2:
            raise RuntimeError("can't start new thread")
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    worker = cogworker.Worker(concurrency=4)
    with pytest.raises(RuntimeError, match="slot thread 2"):
        worker.start()
    monkeypatch.undo()
    assert worker.wait(15), "the engine was stopped again"
    assert worker.join(5)
