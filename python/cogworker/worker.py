"""Running jobs: Python threads take jobs from the engine (the GIL released
while they wait) and run the registered handlers. ``async def`` handlers
run on one event-loop thread shared by the slots."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import traceback
from typing import Any

from . import _core
from ._periodic import entries as periodic_entries
from ._settings import make_config
from .job import JobHandle, registry

logger = logging.getLogger("cogworker")

_JOB, _IDLE, _STOPPED = 0, 1, 2
_NEXT_JOB_WAIT = 0.5


def qualified_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _line(text: str) -> str:
    return _utf8(text).decode("utf-8")


class Worker:
    """A worker: ``Worker(concurrency=10, queues=["critical,3", "default"]).run()``.

    Keyword settings override ``cogworker.configure``. Handlers are the
    functions decorated with ``@cogworker.job`` (resolved at start).
    """

    def __init__(self, **settings: Any) -> None:
        self.config = make_config(**settings)
        entries = [json.dumps(e) for e in periodic_entries()]
        self._native = _core.Worker(self.config, entries, sorted(registry()))
        self._handlers: dict[str, JobHandle[Any]] = {}
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._started = False

    @property
    def identity(self) -> str:
        return self._native.identity

    @property
    def lifecycle(self) -> str:
        return self._native.lifecycle

    def start(self) -> None:
        """Starts the engine and the slot threads; returns at once."""
        if self._started:
            raise RuntimeError("worker already started")
        self._started = True
        self._handlers = registry()
        if any(h.is_async for h in self._handlers.values()):
            self._start_loop()
        self._native.start()
        for i in range(self.config.concurrency):
            t = threading.Thread(target=self._slot, name=f"cogworker.processor-{i}")
            t.start()
            self._threads.append(t)
        # Plain atexit runs after non-daemon threads are joined: too late.
        threading._register_atexit(self._stop_at_exit)  # type: ignore[attr-defined]
        logger.info(
            "cogworker worker %s: %d handler(s): %s",
            self.identity,
            len(self._handlers),
            ", ".join(sorted(self._handlers)) or "(none)",
        )

    def quiet(self) -> None:
        """Stop taking new jobs; running ones go on."""
        self._native.quiet()

    def stop(self) -> None:
        """Begin shutdown (returns at once; see ``wait``)."""
        self._native.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits for the engine's shutdown to complete; True once it has."""
        if timeout is None:
            while not self._native.wait(1.0):
                pass
            return True
        return self._native.wait(timeout)

    def join(self, timeout: float = 5.0) -> bool:
        """After ``wait``: joins the slot threads; False if some are stuck in a
        handler (their jobs were already put back on their queues)."""
        for t in self._threads:
            t.join(timeout)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    def run(self) -> None:
        """Starts, then blocks until stopped (``stop()``, a remote stop, or
        Ctrl-C on the main thread), and shuts down cleanly."""
        self.start()
        try:
            self.wait()
        except KeyboardInterrupt:
            self.stop()
            self.wait()
        self.join()

    def busy(self) -> list[dict[str, Any]]:
        return self._native.busy()

    def dump(self) -> None:
        """Logs the busy jobs and every thread's stack (TTIN)."""
        busy = self.busy()
        logger.warning("%d busy slot(s)", len(busy))
        for entry in busy:
            logger.warning("busy: %s jid=%s queue=%s", entry["class"], entry["jid"], entry["queue"])
        frames = sys._current_frames()
        for thread in threading.enumerate():
            frame = frames.get(thread.ident or -1)
            if frame is not None:
                stack = "".join(traceback.format_stack(frame))
                logger.warning("thread %s:\n%s", thread.name, stack.rstrip())

    def _stop_at_exit(self) -> None:
        if self._native.lifecycle != "stopping":
            self.stop()
        self._native.wait(self.config.shutdown_timeout + 20.0)

    def _start_loop(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_forever()

        self._loop_thread = threading.Thread(target=run, name="cogworker.asyncio", daemon=True)
        self._loop_thread.start()

    def _slot(self) -> None:
        native = self._native
        while True:
            # Fast path: a job that is ready is taken without releasing the
            # GIL; only an idle slot waits (with the GIL released).
            state, delivery = native.try_next_job()
            if state == _IDLE:
                state, delivery = native.next_job(_NEXT_JOB_WAIT)
            if state == _JOB:
                self._perform(delivery)
            elif state == _STOPPED:
                return

    def _perform(self, delivery: Any) -> None:
        handle = self._handlers.get(delivery.class_name)
        if handle is None:
            message = f"no handler registered for class {delivery.class_name!r}"
            self._native.fail(delivery, b"cogworker.UnknownHandler", _utf8(message), [])
            return
        try:
            args = json.loads(delivery.args_json)
            if handle.is_async:
                assert self._loop is not None
                asyncio.run_coroutine_threadsafe(handle.func(*args), self._loop).result()
            else:
                handle.func(*args)
        except Exception as error:  # noqa: BLE001 - every handler failure is recorded
            self._fail(delivery, handle, error)
        else:
            self._native.complete(delivery)

    def _fail(self, delivery: Any, handle: JobHandle[Any], error: BaseException) -> None:
        retry_in = None
        if handle.retry_in is not None:
            try:
                retry_in = handle.retry_in(delivery.retry_count, error)
            except Exception:  # noqa: BLE001 - a broken hook must not lose the failure
                logger.exception("retry_in hook of %s failed; using the default backoff", handle.name)
        lines = traceback.format_exception(type(error), error, error.__traceback__)
        backtrace = [_line(part) for chunk in lines for part in chunk.rstrip("\n").split("\n")]
        logger.warning(
            "%s jid=%s failed: %s\n%s",
            handle.name,
            delivery.jid,
            qualified_name(type(error)),
            "".join(lines).rstrip(),
        )
        self._native.fail(
            delivery,
            _utf8(qualified_name(type(error))),
            _utf8(str(error)),
            backtrace,
            None if retry_in is None else float(retry_in),
        )
