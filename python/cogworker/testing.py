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

A push in a testing mode is validated and filled by the engine exactly as a
real push would be: what would be refused in production is refused here.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from . import _core, _registry

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


def record(job_json: str) -> str:
    """A push in a testing mode (the job as the engine prepared it):
    recorded (fake) or run (inline). Returns its jid."""
    job = json.loads(job_json)
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
    handle = _registry.handlers().get(job["class"])
    if handle is None:
        raise LookupError(f"no handler registered for class {job['class']!r}")
    from ._hooks import RunningJob, set_current

    args = job.get("args", [])
    running = RunningJob(
        job["class"],
        job["jid"],
        job.get("queue", "default"),
        job.get("retry_count", 0),
        args,
        json.dumps(job),
    )
    token = set_current(running)
    try:
        return handle.run(args)
    finally:
        token.var.reset(token)


class RedisServer:
    """A private ``redis-server`` on a free loopback port, in a temporary
    directory, for integration tests and demos; stopped by pid (the engine's
    own helper)::

        with cogworker.testing.RedisServer() as server:
            cogworker.configure(redis_url=server.url)
    """

    def __init__(self, *extra_args: str, port: int | None = None) -> None:
        self._native: Any = _core.RedisServer(list(extra_args), port)
        self.url, self.port, self.dir = self._native.info

    def start(self) -> None:
        """Starts it again after ``stop`` (same port, same data directory)."""
        self._native.spawn()

    def stop(self) -> None:
        """SIGKILL (no save), and waits for the exit."""
        self._native.kill()

    def close(self) -> None:
        """Stops it and removes its data directory."""
        if self._native is not None:
            self._native.kill()
            self._native = None

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
