"""A forked child (gunicorn-style preloading) can push with fresh connections."""

from __future__ import annotations

import os

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
