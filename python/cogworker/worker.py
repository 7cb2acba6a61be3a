"""Running jobs: Python threads take deliveries from the engine (the GIL
released while they wait) and run the registered handlers; a handler that
returns an awaitable (``async def``, or a wrapper around one) is awaited on
one event-loop thread shared by the slots.

However a handler ends, its delivery is settled exactly once: success,
failure (any ``BaseException``: ``SystemExit`` and ``KeyboardInterrupt``
from a handler are recorded as that job's failure, then the worker stops
gracefully), or, should this code itself fail, abandoned to the engine,
which files the job as ``cogworker::HandlerAborted``.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import logging
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, TypeVar

from . import _core, _hooks, _tracing
from ._coroutines import EventLoop
from ._hooks import RunningJob
from ._periodic import native_entries as periodic_entries
from ._settings import make_config
from .job import JobHandle, registry

logger = logging.getLogger("cogworker")

_JOB, _IDLE, _STOPPED = 0, 1, 2
_NEXT_JOB_WAIT = 0.5
T = TypeVar("T")


def qualified_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _safe(compute: Callable[[], T]) -> T | None:
    """``compute()``, or None if it raises (an exception's ``__str__`` may)."""
    try:
        return compute()
    except BaseException:  # noqa: BLE001 - reading the failure must not fail
        return None


def _text(text: str) -> str:
    """``text`` as valid Unicode (a lone surrogate becomes "?")."""
    return text.encode("utf-8", "replace").decode("utf-8")


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def app_traceback(error: BaseException) -> list[str]:
    """The traceback of ``error`` as ``traceback.format_exception`` writes
    it, without the worker's own frames (this package's: the slot loop,
    middleware chain, handle), which say nothing about the failure. All of
    them are kept when nothing else is left."""
    summary = traceback.TracebackException.from_exception(error)
    frames = [frame for frame in summary.stack if not frame.filename.startswith(_PACKAGE)]
    if frames:
        summary.stack = traceback.StackSummary.from_list(frames)
    return list(summary.format())


def describe_error(error: BaseException) -> tuple[str | None, str | None]:
    """``(error_class, error_message)`` as a failure records them (None:
    reading it raised; the core says so)."""
    return _safe(lambda: qualified_name(type(error))), _safe(lambda: _text(str(error)))


class Worker:
    """A worker: ``Worker(concurrency=10, queues=["critical,3", "default"]).run()``.

    Keyword settings override ``cogworker.configure``; ``hooks`` (a
    ``cogworker.Hooks``) replaces the process's middleware and handlers. Handlers are the
    functions decorated with ``@cogworker.job`` by the time it is built;
    jobs of any other class are failed by the engine, never run.
    """

    def __init__(self, hooks: _hooks.Hooks | None = None, **settings: Any) -> None:
        self.config = make_config(**settings)
        # The process's hooks (cogworker.on_error, ...), or a registry of its own.
        self.hooks = _hooks.hooks if hooks is None else hooks
        self._handlers: dict[str, JobHandle[Any]] = registry()
        # Periodic jobs this worker pushes go through the app's client
        # middleware too (registered by the time the worker is built).
        self._native = _core.Worker(
            self.config, sorted(self._handlers), periodic_entries(), bool(self.hooks.client_middleware)
        )
        self._threads: list[threading.Thread] = []
        self._events_thread: threading.Thread | None = None
        self._loop = EventLoop(self.config.get("async_concurrency"))
        self._coroutine_handlers = {
            name for name, handle in self._handlers.items() if inspect.iscoroutinefunction(handle.func)
        }
        self._started = False
        self._identity: str = self._native.identity

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def lifecycle(self) -> str:
        return self._native.lifecycle

    def start(self) -> None:
        """Starts the engine and the slot threads; returns at once. Raises if
        a slot thread cannot be started (the engine is stopped again)."""
        if self._started:
            raise RuntimeError("worker already started")
        self._started = True
        # The engine logs each job's start, end and failure (the CLI chose
        # the format already; elsewhere, text on stderr).
        _core.init_logging(False)
        self._native.start()
        for i in range(self.config.get("concurrency")):
            thread = threading.Thread(target=self._slot, name=f"cogworker.processor-{i}")
            try:
                thread.start()
            except BaseException as error:
                self.stop()
                raise RuntimeError(f"cogworker: could not start slot thread {i}: {error}") from error
            self._threads.append(thread)
        self._events_thread = threading.Thread(
            target=self._events, args=(self._native.next_event,), name="cogworker.events", daemon=True
        )
        self._events_thread.start()
        # The periodic ticker's requests to the client middleware, apart:
        # never behind an app's hook on the events thread.
        threading.Thread(
            target=self._events,
            args=(self._native.next_client_middleware,),
            name="cogworker.client-middleware",
            daemon=True,
        ).start()
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

    @property
    def given_back(self) -> int:
        """After ``wait``: how many jobs were still running when the shutdown
        timeout ran out and went back to their queues. Their handlers are
        not stopped (Python cannot stop a thread) and what they return is no
        longer recorded; a process that exits now keeps them from finishing
        here as well as in the next worker."""
        return int(self._native.given_back)

    def join(self, timeout: float = 5.0, slots: bool = True) -> bool:
        """After ``wait``: joins the slot threads (unless ``slots`` is
        False: they run handlers whose jobs were given back) and the
        events thread, all against one deadline; False if some slot is
        stuck in a handler."""
        deadline = time.monotonic() + timeout
        for thread in self._threads if slots else ():
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._events_thread is not None:
            # The shutdown hooks run there; give them the rest of the time.
            self._events_thread.join(max(0.0, deadline - time.monotonic()))
        self._loop.cancel_all()
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
        """The jobs running now: dicts with class, jid, queue, run_at."""
        return self._native.busy()

    def dump(self) -> None:
        """Logs the busy jobs and every thread's stack (what TTIN does)."""
        self._native.log_busy()  # in the engine's words, as in Ruby
        self._log_stacks()

    def signal(self, name: str) -> None:
        """A signal the worker command caught, by name: what it does (TERM
        and INT stop, TSTP quiets, TTIN dumps) is the engine's decision."""
        if self._native.signal(name):
            self._log_stacks()

    def exit_at_once(self, timeout: float = 5.0) -> bool:
        """After ``wait``: joins the threads the engine says to join
        (not the slots when jobs were given back) against one deadline;
        True when the process must exit now (``os._exit``), a thread being
        stuck in a handler or a given-back job's handler running on."""
        return self._native.exit_at_once(self.join(timeout, slots=self._native.join_slots()))

    def _log_stacks(self) -> None:
        frames = sys._current_frames()
        for thread in threading.enumerate():
            frame = frames.get(thread.ident or -1)
            if frame is not None:
                stack = "".join(traceback.format_stack(frame))
                logger.warning("thread %s:\n%s", thread.name, stack.rstrip())

    def _stop_at_exit(self) -> None:
        if self._native.lifecycle != "stopping":
            self.stop()
        self._native.wait(self.config.get("shutdown_timeout") + 20.0)

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

    def _events(self, next_event: Callable[[float], tuple[str, dict[str, Any] | None] | None]) -> None:
        """Runs the application's hooks on the events ``next_event`` reads
        until the engine has shut down and every event was handled."""
        while True:
            event = next_event(_NEXT_JOB_WAIT)
            if event is None:
                continue
            name, job = event
            if name == "ended":
                return
            if name == "client_middleware":
                job = job or {}
                jid = str(job.get("jid", ""))
                try:
                    self._native.reply_client_middleware(jid, self.hooks.periodic_push(job))
                except BaseException as error:  # noqa: BLE001 - a hook never loses a periodic run
                    error_class, message = describe_error(error)
                    self._native.client_middleware_raised(jid, f"{error_class}: {message}")
                continue
            self.hooks.dispatch(name, job)

    def _perform(self, delivery: Any) -> None:
        class_name, jid, _, _, args = delivery.info
        if class_name in self._coroutine_handlers and (
            not self.hooks.server_middleware or self.hooks.server_middleware.all_async()
        ):
            # A coroutine on the loop: this thread only waits for room there.
            handed_over = self._loop.submit(
                f"{class_name} jid={jid}",
                lambda: self._perform_coroutine(delivery),
                on_room=delivery.detach,
                give_up=lambda: self._native.lifecycle == "stopping",
            )
            if not handed_over:
                delivery.abandon("stopping before the event loop had room for it")  # left for the requeue
            return
        handle: JobHandle[Any] | None = None
        job: RunningJob | None = None
        current = None
        try:
            handle = self._handlers[class_name]
            current = _hooks.set_current((delivery, args, self._identity))
            if self.hooks.server_middleware or (_tracing.ENABLED and _tracing.recording()):
                job = running = RunningJob.of(delivery, args, self._identity)
                with _tracing.consuming(job):
                    value = self.hooks.server_middleware.invoke(job, lambda: self._call(handle, running.args))
            else:
                value = self._call(handle, args)
        except BaseException as error:  # noqa: BLE001 - every way a handler ends is recorded
            self._record_failure(delivery, handle, job, error)
        else:
            self._complete(delivery, handle, job, value)
        finally:
            if current is not None:
                current.var.reset(current)
            delivery.abandon("the Python slot ended without settling it")  # no-op once settled

    async def _perform_coroutine(self, delivery: Any) -> None:
        """An ``async def`` handler's job, as a task on the loop: settled
        here, however it ends."""
        import asyncio

        class_name, _, _, _, args = delivery.info
        handle = self._handlers[class_name]
        job: RunningJob | None = None
        try:
            # This task's own context: no reset needed.
            _hooks.set_current((delivery, args, self._identity))
            if self.hooks.server_middleware or (_tracing.ENABLED and _tracing.recording()):
                job = running = RunningJob.of(delivery, args, self._identity)
                with _tracing.consuming(job):
                    value = await self.hooks.server_middleware.ainvoke(
                        job, lambda: handle.func(*running.args)
                    )
            else:
                value = await handle.func(*args)
        except asyncio.CancelledError as error:
            if self._native.lifecycle == "stopping":
                # Still running past the shutdown deadline: the engine put it
                # back on its queue; it is not a failure.
                delivery.abandon("cancelled after the shutdown deadline")
            else:
                self._record_failure(delivery, handle, job, error)
        except BaseException as error:  # noqa: BLE001 - every way a handler ends is recorded
            self._record_failure(delivery, handle, job, error)
        else:
            self._complete(delivery, handle, job, value)
        finally:
            delivery.abandon("the coroutine ended without settling it")  # no-op once settled

    def _complete(
        self, delivery: Any, handle: JobHandle[Any] | None, job: RunningJob | None, value: Any
    ) -> None:
        """Success; the returned value is kept for a job with ``result_ttl``
        (one JSON cannot hold fails the job instead, naming ``result``)."""
        if not delivery.wants_result:
            delivery.complete()
            return
        try:
            delivery.complete_with(value)
        except _core.InvalidArgument as error:
            self._record_failure(delivery, handle, job, error)

    def _record_failure(
        self, delivery: Any, handle: JobHandle[Any] | None, job: RunningJob | None, error: BaseException
    ) -> None:
        _, _, _, retry_count, args = delivery.info
        if self.hooks.error_handlers:
            job = job or RunningJob.of(delivery, args, self._identity)
            self.hooks.report_error(error, job)
        self._fail(delivery, retry_count, handle, error)
        if isinstance(error, (SystemExit, KeyboardInterrupt)):
            logger.warning("%s raised by a job: stopping the worker gracefully", type(error).__name__)
            self.stop()

    def _call(self, handle: JobHandle[Any] | None, args: list[Any]) -> Any:
        """The handler's value (an awaitable it returns is run to the end)."""
        assert handle is not None
        result = handle.func(*args)
        if inspect.isawaitable(result):
            return self._loop.run(result)
        return result

    def _fail(
        self,
        delivery: Any,
        retry_count: int,
        handle: JobHandle[Any] | None,
        error: BaseException,
    ) -> None:
        retry_in: Any = None
        if handle is not None and handle.retry_in is not None:
            try:
                retry_in = handle.retry_in(retry_count, error)
                if isinstance(retry_in, datetime.timedelta):
                    retry_in = retry_in.total_seconds()
            except BaseException as hook_error:  # noqa: BLE001 - a broken hook must not lose the failure
                retry_in = f"an exception ({_safe(functools.partial(repr, hook_error))})"
        error_class, message = describe_error(error)
        lines = _safe(lambda: app_traceback(error)) or []
        backtrace = [_text(part) for chunk in lines for part in chunk.rstrip("\n").split("\n")]
        # Logged once, by the engine (class, message, jid, what happens next).
        delivery.fail(error_class, message, backtrace, retry_in)
