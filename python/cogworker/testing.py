"""Testing modes, usable without Redis.

- ``cogworker.testing.fake()``: pushes are recorded, not sent. Inspect them
  with ``handle.jobs``, run them with ``handle.drain()`` / ``handle.perform_one()``.
- ``cogworker.testing.inline()``: a push runs the handler at once, in the caller.
- ``cogworker.testing.disable()``: back to real pushes.

Each is a function and a context manager::

    with cogworker.testing.fake():
        send_email.enqueue("a@example.com")
        assert len(send_email.jobs) == 1
        send_email.drain()
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from . import _core

_lock = threading.RLock()
_mode: str | None = None
_jobs: dict[str, list[dict[str, Any]]] = {}


class _Mode(contextlib.AbstractContextManager):
    def __init__(self, mode: str | None) -> None:
        global _mode
        with _lock:
            self._previous = _mode
            _mode = mode

    def __exit__(self, *exc: object) -> None:
        global _mode
        with _lock:
            _mode = self._previous
            if _mode is None:
                _jobs.clear()


def fake() -> _Mode:
    return _Mode("fake")


def inline() -> _Mode:
    return _Mode("inline")


def disable() -> _Mode:
    return _Mode(None)


def active() -> bool:
    return _mode is not None


def mode() -> str | None:
    return _mode


def record(payload: dict[str, Any]) -> str:
    """A push in a testing mode: recorded (fake) or run (inline)."""
    job = dict(payload)
    job.setdefault("jid", _core.new_jid())
    job.setdefault("queue", "default")
    job.setdefault("args", [])
    job.setdefault("enqueued_at", time.time())
    if _mode == "inline":
        _perform(job)
    else:
        with _lock:
            _jobs.setdefault(job["class"], []).append(job)
    return job["jid"]


def jobs_for(class_name: str) -> list[dict[str, Any]]:
    """The live list of recorded jobs for one class (fake mode)."""
    with _lock:
        return _jobs.setdefault(class_name, [])


def all_jobs() -> Iterator[dict[str, Any]]:
    with _lock:
        return iter([job for jobs in _jobs.values() for job in jobs])


def clear(class_name: str | None = None) -> None:
    with _lock:
        if class_name is None:
            _jobs.clear()
        else:
            _jobs.pop(class_name, None)


def perform_one(class_name: str) -> Any:
    """Runs the oldest recorded job of ``class_name``; raises if there is none."""
    with _lock:
        jobs = _jobs.get(class_name) or []
        if not jobs:
            raise IndexError(f"no {class_name} jobs recorded")
        job = jobs.pop(0)
    return _perform(job)


def drain(class_name: str) -> int:
    """Runs recorded jobs of ``class_name`` (including ones they push) until none are left."""
    count = 0
    while jobs_for(class_name):
        perform_one(class_name)
        count += 1
    return count


def drain_all() -> int:
    count = 0
    while True:
        with _lock:
            pending = [name for name, jobs in _jobs.items() if jobs]
        if not pending:
            return count
        for name in pending:
            count += drain(name)


def _perform(job: dict[str, Any]) -> Any:
    from .job import registry, run_sync

    handle = registry().get(job["class"])
    if handle is None:
        raise LookupError(f"no handler registered for class {job['class']!r}")
    return run_sync(handle.func, job.get("args", []))


class RedisServer:
    """A private ``redis-server`` on a free loopback port, in a temporary
    directory, for integration tests and demos; stopped by pid::

        with cogworker.testing.RedisServer() as server:
            cogworker.configure(redis_url=server.url)
    """

    def __init__(self, *extra_args: str, port: int | None = None) -> None:
        import socket
        import tempfile

        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        self.port: int = port
        self.dir = tempfile.mkdtemp(prefix="cogworker-redis-")
        self.extra_args = extra_args
        self.proc: Any = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import socket
        import subprocess

        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                *self.extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        import shutil

        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
