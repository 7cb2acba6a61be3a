"""The worker's event loop: ``async def`` handlers run here as coroutines,
many at once (up to ``async_concurrency``), without a thread each. A slot
thread that takes such a job waits only for room on the loop, hands the
job over and takes the next one. A watchdog reports a coroutine that
blocks the loop (calls blocking code) with the job's class and jid."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import asyncio

logger = logging.getLogger("cogworker")

BLOCKED_AFTER = 0.5
"""A loop that has not run a callback for this long is reported blocked."""


class EventLoop:
    """One event loop thread per worker, started on first use."""

    def __init__(self, limit: int, interruptions: Callable[[], int] = lambda: 0) -> None:
        self._limit = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        # Each running task, with what says whether its job must stop
        # (cancelled, or past its time limit).
        self._tasks: dict[asyncio.Task[Any], Callable[[], bool]] = {}
        # How many times the engine told a running job to stop (the watch
        # looks at the tasks only when that changes).
        self._interruptions = interruptions
        self._beat = time.monotonic()
        self._stopped = threading.Event()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        import asyncio  # deferred: importing it costs ~30 ms and most apps never await

        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="cogworker.asyncio", daemon=True).start()
                threading.Thread(target=self._watch, name="cogworker.loop-watch", daemon=True).start()
            return self._loop

    def run(self, awaitable: Any) -> Any:
        """Runs ``awaitable`` on the loop and waits for it (the thread-slot
        way: an awaitable a sync path returned); raises what it raised."""
        import asyncio

        ok, value = asyncio.run_coroutine_threadsafe(_guarded(awaitable), self._ensure()).result()
        if not ok:
            raise value
        return value

    def submit(
        self,
        name: str,
        make: Callable[[], Coroutine[Any, Any, None]],
        on_room: Callable[[], None],
        give_up: Callable[[], bool],
        stop_asked: Callable[[], bool] = lambda: False,
    ) -> bool:
        """Waits for room (at most ``async_concurrency`` coroutines), calls
        ``on_room()``, then starts ``make()`` as a task named ``name`` and
        returns True at once; False if ``give_up()`` says to stop waiting
        first. The coroutine must settle its job itself and never raise."""
        while not self._limit.acquire(timeout=0.5):
            if give_up():
                return False
        loop = self._ensure()
        on_room()

        def start() -> None:
            task = loop.create_task(make(), name=name)
            self._tasks[task] = stop_asked
            task.add_done_callback(self._finished)

        try:
            loop.call_soon_threadsafe(start)
        except BaseException:
            self._limit.release()
            raise
        return True

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.pop(task, None)
        self._limit.release()

    def cancel_all(self) -> None:
        """After shutdown: the coroutines still running were requeued by
        the engine; cancel them, then end the loop."""
        self._stopped.set()
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def cancel() -> None:
            for task in list(self._tasks):
                task.cancel()
            loop.call_later(0.1, loop.stop)

        try:
            loop.call_soon_threadsafe(cancel)
        except RuntimeError:
            pass  # the loop is already gone

    def _watch(self) -> None:
        """Every 0.1 s asks the loop to note the time; when it has not for
        BLOCKED_AFTER, the task running now is blocking it: say which."""
        import asyncio

        loop = self._loop
        assert loop is not None
        reported: Any = None
        heard = self._interruptions()

        def beat() -> None:
            self._beat = time.monotonic()

        def cancel_stopped() -> None:
            # A job cancelled, or past its time limit, while its coroutine
            # runs: cancelled outright (its CancelledError settles it, as
            # cancelled or timed out).
            for task, stop_asked in list(self._tasks.items()):
                if stop_asked():
                    task.cancel()

        while not self._stopped.wait(0.1):
            try:
                loop.call_soon_threadsafe(beat)
                if heard != (heard := self._interruptions()):
                    loop.call_soon_threadsafe(cancel_stopped)
            except RuntimeError:
                return
            stalled = time.monotonic() - self._beat
            if stalled < BLOCKED_AFTER:
                reported = None
                continue
            task = asyncio.current_task(loop)
            if task is not None and task is not reported:
                reported = task
                logger.warning(
                    "the event loop has been blocked for %.1f s by %s: an async handler is calling blocking "
                    "code (use await, or run it in a thread)",
                    stalled,
                    task.get_name(),
                )


async def _guarded(awaitable: Any) -> tuple[bool, Any]:
    # Nothing a handler raises may escape into the shared loop (SystemExit
    # there would end it, and every later async job would hang).
    try:
        return True, await awaitable
    except BaseException as error:  # noqa: BLE001 - handed back to the slot
        return False, error
