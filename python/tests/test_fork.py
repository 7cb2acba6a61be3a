"""A forked child (gunicorn-style preloading) can push with fresh connections."""

from __future__ import annotations

import os
import time

import tasks

import cogworker


def test_forked_child_can_push(configured) -> None:
    tasks.echo.enqueue("parent")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            tasks.echo.enqueue("child")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    tasks.echo.enqueue("parent again")
    assert cogworker.Api().queues()[0]["size"] == 3


def test_forked_child_can_run_a_worker(configured) -> None:
    tasks.RESULTS.clear()
    tasks.echo.enqueue("for the child")
    api = cogworker.Api()
    assert api.queues()[0]["size"] == 1  # the parent's connections are live before the fork
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            worker = cogworker.Worker(concurrency=2)
            worker.start()
            deadline = time.monotonic() + 15
            while ("for the child",) not in tasks.RESULTS and time.monotonic() < deadline:
                time.sleep(0.02)
            worker.stop()
            worker.wait(15)
            worker.join()
            code = 0 if ("for the child",) in tasks.RESULTS else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert api.stats()["processed"] == 1
