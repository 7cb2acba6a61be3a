"""``cogworker worker -p N`` as real processes: the children share the
work, a dead child is restarted, TERM stops them all (exit 0), and a parent
killed with -9 leaves no child running."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from conftest import RedisServer, children_of, wait_for
from test_cli import exit_code, lines, read, start_worker

import cogworker


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def registered_pids() -> set[int]:
    return {int(p["info"]["pid"]) for p in cogworker.Api().processes()}


@pytest.fixture
def results(tmp_path) -> str:
    return str(tmp_path / "results.txt")


def start_swarm(server: RedisServer, results: str) -> tuple[subprocess.Popen[bytes], list[int]]:
    """``-p 2 -c 1``, once both children have registered."""
    proc = start_worker(server, results, "-p", "2", "-c", "1")

    def registered_children() -> list[int]:
        kids = children_of(proc.pid)
        return kids if len(kids) == 2 and registered_pids() >= set(kids) else []

    return proc, wait_for("2 worker processes registered", registered_children)


def test_the_children_share_the_work_and_stop_together(configured, results) -> None:
    proc, children = start_swarm(configured, results)
    client = cogworker.Client()
    # One slot each: two 1 s jobs run at once only in two processes.
    for tag in ("a", "b"):
        client.enqueue("tasks.sleeper", 1.0, tag)
    wait_for("both jobs started", lambda: {"('start', 'a')", "('start', 'b')"} <= set(lines(results)))
    assert "('slept', 'a')" not in lines(results), "the jobs ran one after the other"
    proc.send_signal(signal.SIGTERM)
    assert exit_code(proc, 30) == 0, read(results + ".log")
    assert {"('slept', 'a')", "('slept', 'b')"} <= set(lines(results))
    assert not any(alive(pid) for pid in children)
    assert cogworker.Api().stats()["processed"] == 2
    log = read(results + ".log")
    assert "started worker process 2 of 2" in log and "all 2 worker processes stopped" in log


def test_a_child_that_dies_is_restarted(configured, results) -> None:
    proc, children = start_swarm(configured, results)
    os.kill(children[0], signal.SIGKILL)
    replaced = wait_for(
        "a new child",
        lambda: (kids := children_of(proc.pid)) and len(kids) == 2 and children[0] not in kids and kids,
    )
    assert children[1] in replaced
    (newcomer,) = set(replaced) - {children[1]}
    wait_for("the new child registered", lambda: newcomer in registered_pids())
    cogworker.Client().enqueue("tasks.echo", "after restart")
    wait_for("the job ran", lambda: "('after restart',)" in lines(results))
    assert f"(pid {children[0]}) was killed by signal 9; restarting in" in read(results + ".log")
    proc.send_signal(signal.SIGINT)
    assert exit_code(proc, 30) == 0, read(results + ".log")


def test_a_parent_killed_with_9_leaves_no_child_running(configured, results) -> None:
    proc, children = start_swarm(configured, results)
    proc.kill()
    proc.wait(5)
    wait_for("every child gone", lambda: not any(alive(pid) for pid in children), timeout=30)


def test_an_invalid_process_count_is_refused_naming_it(configured, results) -> None:
    proc = start_worker(configured, results, "-p", "0")
    assert exit_code(proc) == 2
    assert "processes = 0" in read(results + ".log")
