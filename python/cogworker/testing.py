"""Testing modes, usable without Redis.

- ``cogworker.testing.fake()``: pushes are recorded, not sent. Inspect them
  with ``handle.jobs``, run them with ``handle.drain()`` / ``handle.perform_one()``.
- ``cogworker.testing.inline()``: a push runs the handler at once, in the caller.
- ``cogworker.testing.disable()``: back to real pushes.

And for integration tests: ``RedisServer`` (a private ``redis-server``),
``free_port()`` and ``wait_for(what, check, timeout)``.

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
from collections.abc import Iterator
from typing import Any

from . import _core, _registry

# What is recorded and kept, and when it is forgotten, is the core's
# (cogworker::host::testing), the same in Ruby: entering a mode from real
# pushes starts with nothing recorded; the end of a block keeps what was
# recorded (look at it after the block) until the next entry or ``clear``.


class _Mode(contextlib.AbstractContextManager):
    def __init__(self, mode: str | None) -> None:
        self._previous = _core.set_testing_mode(mode)

    def __exit__(self, *exc: object) -> None:
        _core.set_testing_mode(self._previous)


def fake() -> _Mode:
    return _Mode("fake")


def inline() -> _Mode:
    return _Mode("inline")


def disable() -> _Mode:
    return _Mode(None)


def active() -> bool:
    return _core.testing_mode() is not None


def mode() -> str | None:
    return _core.testing_mode()


def run_inline(job: dict[str, Any]) -> None:
    """Inline mode: a push's job (as the engine prepared it and recorded
    its run) runs at once, in the caller; what it raises, the push raises."""
    _perform(job)


class RecordedJobs(list):  # type: ignore[type-arg]
    """The recorded jobs of one class (a copy, oldest first); ``clear()``
    forgets them."""

    def __init__(self, class_name: str) -> None:
        super().__init__(_core.testing_jobs(class_name))
        self._class_name = class_name

    def clear(self) -> None:
        super().clear()
        _core.testing_clear(self._class_name)


def jobs_for(class_name: str) -> RecordedJobs:
    """The recorded jobs of one class (fake mode)."""
    return RecordedJobs(class_name)


def all_jobs() -> Iterator[dict[str, Any]]:
    return iter(_core.testing_jobs(None))


def clear(class_name: str | None = None) -> None:
    """Forgets the recorded jobs of ``class_name`` (everything, kept
    results included: None)."""
    _core.testing_clear(class_name)


def perform_one(class_name: str) -> Any:
    """Runs the oldest recorded job of ``class_name``; IndexError if there is none."""
    return _core.testing_perform_one(class_name, _perform)


def drain(class_name: str) -> int:
    """Runs recorded jobs of ``class_name`` (including ones they push) until none are left."""
    return _core.testing_drain(_perform, class_name)


def drain_all() -> int:
    return _core.testing_drain(_perform)


def result(jid: str) -> Any:
    """``Client.result`` in a testing mode: what a job run here came to."""
    from .client import result_of

    return result_of(jid, _core.testing_result(jid))


def status(jid: str) -> str:
    return _core.testing_status(jid)


def _perform(job: dict[str, Any]) -> Any:
    """Runs a recorded or inline job's handler; the engine keeps its outcome."""
    handle = _registry.handlers().get(job["class"])
    if handle is None:
        _core.testing_unknown_class(str(job["class"]))  # raises the core's InvalidArgument
    from ._hooks import RunningJob, set_current

    args = job.get("args", [])
    running = RunningJob(
        job["class"], job["jid"], job.get("queue", "default"), job.get("retry_count", 0), args, job
    )
    token = set_current(running)
    try:
        return _core.testing_run(job, lambda: handle.run(args))
    finally:
        token.var.reset(token)


def free_port() -> int:
    """A TCP port nothing listens on now, on the loopback address."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Any, timeout: float = 15.0, interval: float = 0.02) -> Any:
    """``check()``'s first truthy value, asked every ``interval`` seconds;
    AssertionError naming ``what`` once ``timeout`` seconds pass (a test
    waits on a condition with a deadline, never sleeps and hopes)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for: {what}")
        time.sleep(interval)


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
