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

import inspect
import sys
import threading
import traceback
from typing import Any

from . import _core, _hooks, _tracing
from ._coroutines import EventLoop
from ._failures import app_traceback, describe_error, safe, valid_text
from ._hooks import RunningJob
from ._logging import forward_engine_logs
from ._periodic import native_entries as periodic_entries
from ._settings import make_config
from .job import JobHandle, registry


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
        self._loop = EventLoop(self.config.get("async_concurrency"), lambda: self._native.interruptions)
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
        # The engine logs each job's start, end and failure: in the CLI's
        # format where it chose one; embedded, through ``logging``.
        forward_engine_logs()
        self._native.start()
        for i in range(self.config.get("concurrency")):
            try:
                self._start_slot(i)
            except BaseException as error:
                self.stop()
                raise RuntimeError(f"cogworker: could not start slot thread {i}: {error}") from error
        # The application's hooks run on an events thread; the periodic
        # ticker's requests to the client middleware on one apart, never
        # behind an app's hook.
        for role, target, hook in (
            ("events", self._native.run_hooks, self.hooks.dispatch),
            ("client_middleware", self._native.run_client_middleware, self.hooks.periodic_push),
        ):
            threading.Thread(target=target, args=(hook,), name=_core.THREAD_NAMES[role], daemon=True).start()
        # Raises JobTimeout in a slot whose job's time limit passed.
        threading.Thread(
            target=self._native.run_timekeeper,
            args=(self._retry_in_past_time_limit,),
            name=_core.THREAD_NAMES["timekeeper"],
            daemon=True,
        ).start()
        # Plain atexit runs after non-daemon threads are joined: too late.
        threading._register_atexit(self._stop_at_exit)  # type: ignore[attr-defined]

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
        """After ``wait``: waits for the slot threads (unless ``slots`` is
        False: they run handlers whose jobs were given back) and the events
        threads to finish, all against one deadline; False if some slot is
        stuck in a handler."""
        joined = self._native.join(timeout, slots)
        self._loop.cancel_all()
        return joined

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
        """Each thread's stack, logged by the engine (as Ruby's are)."""
        frames = sys._current_frames()
        main = threading.main_thread()
        stacks = [
            (thread.name, thread is main, "".join(traceback.format_stack(frame)))
            for thread in threading.enumerate()
            if (frame := frames.get(thread.ident or -1)) is not None
        ]
        _core.Worker.log_thread_stacks(stacks)

    def _stop_at_exit(self) -> None:
        if self._native.lifecycle != "stopping":
            self.stop()
        self._native.wait(self.config.get("shutdown_timeout") + 20.0)
        # The events and timekeeper threads leave the engine's loops before
        # the interpreter finalizes (a thread that wakes in one then would
        # take the GIL from a finalized interpreter).
        self._native.join(5.0, False)

    def _start_slot(self, index: int) -> None:
        thread = threading.Thread(target=self._slot, args=(index,), name=_core.slot_thread_name(index))
        thread.start()
        self._threads.append(thread)

    def _slot(self, index: int) -> None:
        """A slot thread: runs jobs until the worker stops. One that ends
        before (an exception raised into it between jobs, say) is replaced
        when the engine says so, as Ruby's are."""
        stopped = False
        try:
            self._native.run_slot(self._perform, self._describe)
            stopped = True
        finally:
            if not stopped and self._native.slot_ended_early(threading.current_thread().name):
                self._start_slot(index)

    def _perform(self, delivery: Any) -> Any:
        """Runs the delivery's handler (through the server middleware, in a
        CONSUMER span when tracing records) and returns its value; the core
        settles it. A coroutine handler is handed to the event loop, which
        settles it there."""
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
                stop_asked=lambda: delivery.cancelled or delivery.timed_out,
            )
            if not handed_over:
                delivery.abandon("stopping before the event loop had room for it")  # left for the requeue
            return None
        handle = self._handlers[class_name]
        current = _hooks.set_current((delivery, args, self._identity))
        try:
            if self.hooks.server_middleware or (_tracing.ENABLED and _tracing.recording()):
                job = RunningJob.of(delivery, args, self._identity)
                with _tracing.consuming(delivery):
                    return self.hooks.server_middleware.invoke(job, lambda: self._call(handle, job.args))
            return self._call(handle, args)
        finally:
            current.var.reset(current)

    async def _perform_coroutine(self, delivery: Any) -> None:
        """An ``async def`` handler's job, as a task on the loop: settled
        here, however it ends, by the core's rule."""
        import asyncio

        class_name, _, _, _, args = delivery.info
        handle = self._handlers[class_name]
        try:
            # This task's own context: no reset needed.
            _hooks.set_current((delivery, args, self._identity))
            if self.hooks.server_middleware or (_tracing.ENABLED and _tracing.recording()):
                job = RunningJob.of(delivery, args, self._identity)
                with _tracing.consuming(delivery):
                    value = await self.hooks.server_middleware.ainvoke(job, lambda: handle.func(*job.args))
            else:
                value = await handle.func(*args)
        except asyncio.CancelledError as error:
            if self._native.lifecycle == "stopping":
                # Still running past the shutdown deadline: the engine put it
                # back on its queue; it is not a failure.
                delivery.abandon("cancelled after the shutdown deadline")
            else:
                self._native.settle(delivery, False, error, self._describe)
        except BaseException as error:  # noqa: BLE001 - every way a handler ends is recorded
            self._native.settle(delivery, False, error, self._describe)
        else:
            self._native.settle(delivery, True, value, self._describe)

    def _describe(self, delivery: Any, error: BaseException) -> tuple[Any, Any, list[str], Any, bool]:
        """What the core records of a failure, after the error handlers ran:
        ``(error_class, message, backtrace, retry_in, stops_worker)``."""
        class_name, _, _, retry_count, args = delivery.info
        if self.hooks.error_handlers:
            self.hooks.report_error(error, RunningJob.of(delivery, args, self._identity))
        retry_in = self._retry_hook(class_name, retry_count, error)
        error_class, message = describe_error(error)
        lines = safe(lambda: app_traceback(error)) or []
        backtrace = [valid_text(part) for chunk in lines for part in chunk.rstrip("\n").split("\n")]
        # Logged once, by the engine (class, message, jid, what happens next).
        return error_class, message, backtrace, retry_in, isinstance(error, (SystemExit, KeyboardInterrupt))

    def _retry_hook(self, class_name: str, retry_count: int, error: BaseException) -> Any:
        """What the class's retry hook says, for the engine to read: what
        it returned (seconds, a ``timedelta``, None for the default
        backoff), or the exception it raised."""
        handle = self._handlers.get(class_name)
        if handle is None or handle.retry_in is None:
            return None
        try:
            return handle.retry_in(retry_count, error)
        except BaseException as hook_error:  # noqa: BLE001 - a broken hook must not lose the failure
            return hook_error

    def _retry_in_past_time_limit(self, class_name: str, retry_count: int) -> Any:
        """The retry hook asked of a timeout when the limit passes (in a
        child of ``-p N``, whose job may be filed without this process's
        Python if its handler will not stop)."""
        return self._retry_hook(class_name, retry_count, _core.JobTimeout(_core.TIME_LIMIT_PASSED))

    def _call(self, handle: JobHandle[Any], args: list[Any]) -> Any:
        """The handler's value (an awaitable it returns is run to the end)."""
        result = handle.func(*args)
        if inspect.isawaitable(result):
            return self._loop.run(result)
        return result
