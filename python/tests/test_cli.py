"""The `cogworker worker` command as a real process: graceful TERM/INT,
TERM past the timeout requeues, kill -9 and recovery by another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import HERE, RedisServer, wait_for, worker_env

import cogworker


def start_worker(server: RedisServer, results: str, *extra: str, **env: str) -> subprocess.Popen[bytes]:
    """A worker process; its log goes to ``results + ".log"``."""
    with open(results + ".log", "ab") as log:
        return _popen(server, results, log, extra, env)


def _popen(server: RedisServer, results: str, log, extra, env) -> subprocess.Popen[bytes]:  # noqa: ANN001
    return subprocess.Popen(
        [sys.executable, "-m", "cogworker", "worker", "tasks", "-c", "2", *extra],
        env=worker_env(server, TEST_RESULTS_FILE=results, TEST_WORKER_PROCESS="1", **env),
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )


def lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f]
    except FileNotFoundError:
        return []


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def exit_code(proc: subprocess.Popen[bytes], timeout: float = 15) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.fixture
def results(tmp_path) -> str:
    return str(tmp_path / "results.txt")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_lets_the_running_job_finish(configured, results, sig) -> None:
    proc = start_worker(configured, results)
    cogworker.Client().enqueue("tasks.sleeper", 1.0, "a")
    wait_for("job started", lambda: "('start', 'a')" in lines(results))
    proc.send_signal(sig)
    assert exit_code(proc) == 0, read(results + ".log")
    assert "('slept', 'a')" in lines(results)
    assert cogworker.Api().queues()[0]["size"] == 0
    assert cogworker.Api().stats()["processed"] == 1


def test_stop_past_the_timeout_requeues_the_job(configured, results) -> None:
    proc = start_worker(configured, results, "--shutdown-timeout", "0.5")
    jid = cogworker.Client().enqueue("tasks.sleeper", 30, "b")
    wait_for("job started", lambda: "('start', 'b')" in lines(results))
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert exit_code(proc) == 0
    assert time.monotonic() - started < 10
    queued = configured.cli_raw("LRANGE", "cogworker:queue:default", "0", "-1")
    assert jid in queued, "the cut-off job is back on its queue"


def test_killed_worker_jobs_are_recovered_by_another(configured, results) -> None:
    a = start_worker(configured, results)
    jid = cogworker.Client().enqueue("tasks.sleeper", 30, "c")
    wait_for("A started it", lambda: "('start', 'c')" in lines(results))
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    b = start_worker(configured, results, TEST_ORPHAN_THRESHOLD="2", TEST_SLEEP_SCALE="0")
    try:
        wait_for("B finished it", lambda: "('slept', 'c')" in lines(results), timeout=30)
        assert lines(results).count("('start', 'c')") == 2
        assert cogworker.Api().find("dead", jid) is None
    finally:
        b.send_signal(signal.SIGTERM)
        assert exit_code(b) == 0


def test_bad_config_exits_with_a_clear_message(configured, results) -> None:
    proc = start_worker(configured, results, "-c", "0")
    assert exit_code(proc) == 2
    with open(results + ".log") as f:
        err = f.read()
    assert "concurrency" in err and "0" in err


def test_tstp_quiets_and_ttin_dumps_busy_jobs_and_stacks(configured, results) -> None:
    proc = start_worker(configured, results)
    try:
        cogworker.Client().enqueue("tasks.sleeper", 1.5, "d")
        wait_for("job started", lambda: "('start', 'd')" in lines(results))
        proc.send_signal(signal.SIGTTIN)
        log = results + ".log"
        # The busy jobs are logged first, then every thread's stack.
        wait_for("busy jobs logged", lambda: "busy: tasks.sleeper" in read(log))
        wait_for("thread stacks logged", lambda: "thread main:" in read(log))
        proc.send_signal(signal.SIGTSTP)
        api = cogworker.Api()
        wait_for("quiet in the registry", lambda: all(p["quiet"] for p in api.processes()))
        cogworker.Client().enqueue("tasks.sleeper", 0, "e")
        wait_for("running job finished", lambda: "('slept', 'd')" in lines(results))
        time.sleep(1.0)
        assert "('start', 'e')" not in lines(results), "quiet: no new jobs taken"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert exit_code(proc) == 0
    assert configured.cli("LLEN", "cogworker:queue:default") == "(integer) 1"


def test_a_worker_whose_log_pipe_closed_runs_jobs_and_stops_on_term(configured, results) -> None:
    """``cogworker worker tasks 2>&1 | head``: once the reader is gone every
    log line fails to write; the worker goes on and TERM still stops it,
    giving back the job it was running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "worker", "tasks", "-c", "2", "--shutdown-timeout", "0.5"],
        env=worker_env(configured, TEST_RESULTS_FILE=results, TEST_WORKER_PROCESS="1"),
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    client = cogworker.Client()
    client.enqueue_many("tasks.echo", [(i,) for i in range(20)])
    wait_for("20 ran", lambda: len(lines(results)) == 20)
    jid = client.enqueue("tasks.sleeper", 30, "piped")
    wait_for("the long job started", lambda: "('start', 'piped')" in lines(results))
    proc.send_signal(signal.SIGTERM)
    assert exit_code(proc) == 0
    queued = configured.cli_raw("LRANGE", "cogworker:queue:default", "0", "-1")
    assert jid in queued, "the cut-off job is back on its queue"


@pytest.mark.parametrize("processes", [1, 2])
def test_jobs_given_back_at_shutdown_do_not_also_finish_in_the_stopping_process(
    configured, results, processes
) -> None:
    """Past ``shutdown_timeout`` the running jobs go back to their queue and
    the process exits at once: their handlers do not run on to the end
    there (they run again, once, in the next worker)."""
    proc = start_worker(configured, results, "-c", "4", "-p", str(processes), "--shutdown-timeout", "1")
    tags = [f"t{i}" for i in range(4 * processes)]
    cogworker.Client().enqueue_many("tasks.sleeper", [(3, tag) for tag in tags])
    wait_for("all started", lambda: all(f"('start', '{tag}')" in lines(results) for tag in tags))
    proc.send_signal(signal.SIGTERM)
    assert exit_code(proc) == 0
    assert not any("slept" in line for line in lines(results)), lines(results)
    assert cogworker.Api().stats()["processed"] == 0
    again = start_worker(configured, results, "-c", str(4 * processes))
    try:
        wait_for("all ran again", lambda: sum("slept" in line for line in lines(results)) == len(tags))
    finally:
        again.send_signal(signal.SIGTERM)
        assert exit_code(again) == 0
    slept = sorted(line for line in lines(results) if "slept" in line)
    assert slept == sorted(f"('slept', '{tag}')" for tag in tags)
    assert cogworker.Api().stats()["processed"] == len(tags)
