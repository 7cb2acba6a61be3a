"""Where an application plugs into its workers: server middleware around
every job, error handlers for every failure, death handlers for every job
filed in ``dead``, and hooks on the worker's life (``startup``, ``quiet``,
``shutdown``, ``heartbeat``). All run in the worker process; a hook that
raises is logged and never changes what happens to the job."""

from __future__ import annotations

import contextvars
import inspect
import logging
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any, Callable, Generic, TypeVar

from . import _core
from ._failures import describe_error

logger = logging.getLogger("cogworker")

EVENTS: tuple[str, ...] = tuple(_core.LIFECYCLE_EVENTS)  # the core's list

F = TypeVar("F", bound=Callable[..., Any])


class RunningJob:
    """The job a middleware or error handler sees: ``class_name``, ``jid``,
    ``queue``, ``args`` (a middleware may change them before calling on),
    ``retry_count``, ``created_at``, ``enqueued_at``, ``payload``, the
    whole job as a dict, fields other middleware added included, and
    ``worker``, the identity of the worker process running it (None in
    ``cogworker.testing``)."""

    __slots__ = ("_delivery", "_payload", "args", "class_name", "jid", "queue", "retry_count", "worker")

    @classmethod
    def of(cls, delivery: Any, args: list[Any], worker: str | None = None) -> RunningJob:
        """The job of a delivery the worker took, with its ``args``."""
        class_name, jid, queue, retry_count, _ = delivery.info
        job = cls(class_name, jid, queue, retry_count, args)
        job._delivery = delivery
        job.worker = worker
        return job

    def __init__(
        self,
        class_name: str,
        jid: str,
        queue: str,
        retry_count: int,
        args: list[Any],
        payload: dict[str, Any] | None = None,
    ) -> None:
        self.class_name = class_name
        self.jid = jid
        self.queue = queue
        self.retry_count = retry_count
        self.args = args
        self._delivery: Any = None
        self._payload = payload
        self.worker: str | None = None

    @property
    def payload(self) -> dict[str, Any]:
        """The whole job (every field, those middleware added included),
        made on first use."""
        if self._payload is None:
            delivery = self._delivery
            self._payload = (delivery.payload if delivery is not None else None) or {}
        return self._payload

    @property
    def bid(self) -> str | None:
        """The batch the job belongs to, if any: ``Batch(bid=...)`` adds
        more jobs to it from here."""
        bid = self.payload.get("bid")
        return bid if isinstance(bid, str) else None

    @property
    def cancelled(self) -> bool:
        """Whether the job was cancelled (``Api().cancel(jid)``, from any
        language) while it runs: a long job checks it to stop early. However
        it then ends, the job is filed as cancelled, not retried. (An
        ``async def`` handler is cancelled outright.)"""
        return self._delivery is not None and bool(self._delivery.cancelled)

    def progress(self, percent: float | None = None, message: str | None = None, data: Any = None) -> None:
        """Reports how far the job is (docs/long-jobs.md): ``percent`` 0 to
        100 (None when there is no total), a short ``message``, small
        JSON ``data``. Cheap in a tight loop: the latest is written at most
        every 250 ms; ``Api().progress(jid)`` reads it from any language.
        A bad value raises ``InvalidArgument`` naming it."""
        if self._delivery is not None:
            self._delivery.progress(percent, message, data)

    def checkpoint(self, cursor: Any) -> None:
        """Saves ``cursor`` (JSON data, at most 64 KiB) as where the job
        resumes: whatever runs it again (recovery after a crash, a
        shutdown's give-back, a retry, ``interrupt()``) starts it with
        ``cursor`` set to this."""
        if self._delivery is not None:
            self._delivery.checkpoint(cursor)
        else:
            self.payload["cursor"] = cursor

    @property
    def cursor(self) -> Any:
        """Where the job resumes: its last checkpoint, the one it was pushed
        with (``cursor=``), or None on a first run."""
        if self._delivery is not None:
            return self._delivery.cursor
        return self.payload.get("cursor")

    @property
    def stopping(self) -> bool:
        """Whether the job should stop now: its worker is shutting down, it
        was cancelled, or its time limit is near. Stop between items, then
        return (or ``interrupt()`` to resume later)."""
        return self._delivery is not None and bool(self._delivery.stopping)

    def iterated(self, cursor: Any, max_runtime: float | None = None) -> bool:
        """One item of an iteration is done: saves ``cursor`` (where the job
        resumes after it) and says whether to go on. False when the job
        should stop here (shutdown, its time limit near, cancelled, or
        this run has lasted ``max_runtime`` seconds): it was interrupted,
        so returning puts it back on its queue. ``@cogworker.iterate``
        calls it after each yield."""
        if self._delivery is not None:
            return bool(self._delivery.iterated(cursor, max_runtime))
        self.payload["cursor"] = cursor
        return True

    def interrupt(self) -> None:
        """The job stops here to resume later: when the handler returns it
        goes back on its queue with its last checkpoint, not counted as a
        failure or a retry."""
        if self._delivery is not None:
            self._delivery.interrupt()

    def get(self, field: str, default: Any = None) -> Any:
        """A payload field (``tenant_id``, ``trace``...), or ``default``."""
        return self.payload.get(field, default)

    def __getitem__(self, field: str) -> Any:
        """A payload field: ``job["jid"]``, ``job["error_message"]``."""
        return self.payload[field]

    def __contains__(self, field: object) -> bool:
        return field in self.payload

    @property
    def created_at(self) -> float | None:
        return self.payload.get("created_at")

    @property
    def enqueued_at(self) -> float | None:
        return self.payload.get("enqueued_at")

    def __repr__(self) -> str:
        return f"<RunningJob {self.class_name} jid={self.jid} queue={self.queue}>"


# The job the current thread (or asyncio task) runs in a worker: a
# RunningJob, or (delivery, args, worker identity) to build one from only
# when asked.
_current: contextvars.ContextVar[Any] = contextvars.ContextVar("cogworker_current_job", default=None)


def current_job() -> RunningJob | None:
    """The job running in this thread or asyncio task (its ``jid``,
    ``retry_count``, ``queue``, payload fields...), inside a handler run by
    a worker or by ``cogworker.testing``; None anywhere else."""
    running = _current.get()
    if isinstance(running, tuple):
        return RunningJob.of(*running)
    return running


def set_current(running: Any) -> contextvars.Token[Any]:
    """Makes ``running`` (a RunningJob or ``(delivery, args, worker)``) the current
    job; pass the token to ``_current.reset`` when it ends."""
    return _current.set(running)


class JobDied(Exception):
    """What a death handler is given with the job when the class of the
    error it died of is not loaded here (a job of another language, a
    class gone since): the error as recorded. Where the class is loaded,
    the handler gets an exception of that class instead (see
    ``died_of``). Either has ``job``, ``jid``, ``error_class`` and
    ``error_message``."""

    job: dict[str, Any]
    jid: str | None
    error_class: str | None
    error_message: str | None

    def __init__(self, job: dict[str, Any]) -> None:
        _recorded_fields(self, job)
        super().__init__(f"{self.error_class}: {self.error_message}")


def _recorded_fields(error: BaseException, job: dict[str, Any]) -> None:
    error.job = job  # type: ignore[attr-defined]
    error.jid = job.get("jid")  # type: ignore[attr-defined]
    error.error_class = job.get("error_class")  # type: ignore[attr-defined]
    error.error_message = job.get("error_message")  # type: ignore[attr-defined]


def _loaded_class(name: str) -> type[Exception] | None:
    """The exception class ``name`` (``module.Qual.Name``, or a builtin's
    bare name) where its module is already imported: nothing is imported
    for a name a payload carries."""
    module_name, _, qualname = name.rpartition(".")
    found: Any = sys.modules.get(module_name or "builtins")
    if found is None and not module_name:
        found = sys.modules.get("__main__")
    for part in qualname.split("."):
        found = getattr(found, part, None) if part.isidentifier() else None
    return found if isinstance(found, type) and issubclass(found, Exception) else None


def died_of(job: dict[str, Any]) -> Exception:
    """The exception a death handler gets for ``job`` (a filed payload), as
    Celery's ``on_failure`` and Sidekiq's death handlers get one: of the
    job's own error class where it is loaded here (``isinstance(error,
    MyError)``; made without calling its ``__init__``, its message as
    recorded), else a ``JobDied``."""
    cls = _loaded_class(str(job.get("error_class") or ""))
    if cls is None:
        return JobDied(job)
    try:
        error = cls.__new__(cls)
        error.args = (str(job.get("error_message") or ""),)
        _recorded_fields(error, job)
    except Exception:  # noqa: BLE001 - a class that cannot be made so gets the record
        return JobDied(job)
    return error


Middleware = Callable[[RunningJob, Callable[[], Any]], Any]
ClientMiddleware = Callable[[dict[str, Any]], Any]
M = TypeVar("M", bound=Callable[..., Any])


class _Chain(Generic[M]):
    """Middleware in the order added; read without a lock (a tuple swapped
    whole), so adding while jobs run is safe."""

    shape = "(job, call_next)"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: tuple[M, ...] = ()

    def add(self, middleware: M) -> M:
        """Appends ``middleware`` (innermost so far); returns it."""
        if not callable(middleware):
            raise TypeError(f"middleware must be callable as {self.shape}, not {middleware!r}")
        with self._lock:
            self._entries = (*self._entries, middleware)
        return middleware

    def remove(self, middleware: M) -> None:
        with self._lock:
            self._entries = tuple(m for m in self._entries if m is not middleware)

    def clear(self) -> None:
        with self._lock:
            self._entries = ()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[M]:
        return iter(self._entries)


class MiddlewareChain(_Chain[Middleware]):
    """Server middleware, outermost first: each is called as
    ``middleware(job, call_next)``; ``call_next()`` runs the rest of the
    chain and the handler and returns the handler's value. Not calling it
    skips the job (it counts as done); catching what it raises swallows the
    failure; raising fails the job."""

    def all_async(self) -> bool:
        """Is every middleware an ``async def`` (itself or its ``__call__``)?
        Then an ``async def`` handler runs as a coroutine inside them."""
        return all(_is_async(m) for m in self._entries)

    async def ainvoke(self, job: RunningJob, run: Callable[[], Any]) -> Any:
        """Awaits ``run()`` (the coroutine handler) inside every middleware,
        each awaited: ``async def __call__(self, job, call_next)`` and
        ``await call_next()``."""
        chain = self._entries

        async def call(index: int) -> Any:
            if index == len(chain):
                return await run()
            return await chain[index](job, lambda: call(index + 1))

        return await call(0)

    def invoke(self, job: RunningJob, run: Callable[[], Any]) -> Any:
        """Runs ``run`` (the handler) inside every middleware."""
        chain = self._entries

        def call(index: int) -> Any:
            if index == len(chain):
                return run()
            return chain[index](job, lambda: call(index + 1))

        return call(0)


class ClientMiddlewareChain(_Chain[ClientMiddleware]):
    """Client middleware, in order: each is called as ``middleware(job)``
    with the job about to be pushed (a dict: ``class``, ``args``, ``queue``,
    ``jid``, ``created_at``...) and returns the job to push, changed as it
    likes (a tenant id, trace context), or None to stop the push (which
    then returns None). Runs on every push from this process: ``enqueue``,
    ``enqueue_in``, ``enqueue_many``, ``Client.push``/``push_bulk``."""

    shape = "(job)"

    def apply(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """``job`` through every middleware, or None once one stops it."""
        for middleware in self._entries:
            job = middleware(job)
            if job is None:
                return None
            if not isinstance(job, dict):
                returned = type(job).__name__
                raise TypeError(f"client middleware {middleware!r} returned {returned}, not a dict or None")
        return job


def _is_async(middleware: Any) -> bool:
    # A function, or an object whose class defines `async def __call__`.
    return inspect.iscoroutinefunction(middleware) or inspect.iscoroutinefunction(type(middleware).__call__)


class Hooks:
    """One configuration's hooks, as Ruby's ``Config#hooks``: server and
    client middleware, error and death handlers, lifecycle hooks. The
    process has one (``cogworker.hooks``, which ``cogworker.on_error``,
    ``cogworker.server_middleware`` ... register on); a ``Worker`` or
    ``Client`` given ``hooks=`` uses another."""

    def __init__(self) -> None:
        self.server_middleware = MiddlewareChain()
        self.client_middleware = ClientMiddlewareChain()
        self.error_handlers: list[Callable[[BaseException, RunningJob], Any]] = []
        self.death_handlers: list[Callable[[RunningJob, JobDied], Any]] = []
        self.events: dict[str, list[Callable[[], Any]]] = {name: [] for name in EVENTS}

    def on_error(self, handler: F) -> F:
        """``handler(exc, job)`` is called whenever a job's handler raises,
        before the failure is filed (report it to Sentry, a log...)."""
        self.error_handlers.append(handler)
        return handler

    def on_death(self, handler: F) -> F:
        """``handler(job, error)`` is called whenever this worker files a job in
        ``dead`` (out of retries, unknown class, unreadable payload): ``job`` is
        a ``RunningJob`` as an error handler gets it (``job.jid``,
        ``job.class_name``, ``job["error_message"]``: the payload as filed),
        ``error`` a ``cogworker.JobDied``."""
        self.death_handlers.append(handler)
        return handler

    def on(self, event: str) -> Callable[[F], F]:
        """``@cogworker.on("startup")``: runs the function in the worker
        process at ``startup``, ``quiet``, ``shutdown`` or each ``heartbeat``."""
        event = _core.lifecycle_event(event)  # ConfigError naming the events there are

        def register(hook: F) -> F:
            self.events[event].append(hook)
            return hook

        return register

    def install(
        self,
        middleware: list[Middleware] | None,
        error_handlers: list[Any] | None,
        death_handlers: list[Any] | None,
        client: list[Any] | None = None,
    ) -> None:
        """``configure(server_middleware=..., client_middleware=...,
        error_handlers=..., death_handlers=...)``: each list given replaces what
        was registered."""
        if client is not None:
            self.client_middleware.clear()
            for entry in client:
                self.client_middleware.add(entry)
        if middleware is not None:
            self.server_middleware.clear()
            for entry in middleware:
                self.server_middleware.add(entry)
        if error_handlers is not None:
            self.error_handlers[:] = list(error_handlers)
        if death_handlers is not None:
            self.death_handlers[:] = list(death_handlers)

    def reset(self) -> None:
        """Forget every hook (tests)."""
        self.install([], [], [], [])
        for hooks in self.events.values():
            hooks.clear()

    def report_error(self, error: BaseException, job: RunningJob) -> None:
        for handler in list(self.error_handlers):
            _call_safely("error", handler, error, job)

    def periodic_push(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """A periodic job the worker is about to push, through the client
        middleware: the job, or None to push nothing. What a middleware
        raises goes to the engine, which pushes the job as it was."""
        return self.client_middleware.apply(job)

    def dispatch(self, event: str, payload: dict[str, Any] | None) -> None:
        """Runs the hooks of one worker event (on the worker's events thread)."""
        if event == "death":
            payload = payload or {}
            job = RunningJob(
                str(payload.get("class", "")),
                str(payload.get("jid", "")),
                str(payload.get("queue", "")),
                int(payload.get("retry_count") or 0),
                list(payload.get("args") or []),
                payload,
            )
            for handler in list(self.death_handlers):
                _call_safely("death", handler, job, died_of(payload))
            return
        for hook in list(self.events.get(event, ())):
            _call_safely(event, hook)


def traceback_lines(error: BaseException) -> list[str]:
    """``error``'s whole traceback, a line each, as the core's backtrace
    field takes it (a hook's, a ``-p N`` child's)."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return text.rstrip().split("\n")


def _call_safely(role: str, hook: Callable[..., Any], *args: Any) -> None:
    """Calls ``hook``; what it raises is logged by the engine (``role``:
    ``error``, ``death`` or the lifecycle event) and goes no further."""
    try:
        hook(*args)
    except BaseException as error:  # noqa: BLE001 - a hook never changes what happens to a job
        name = getattr(hook, "__qualname__", None) or repr(hook)
        error_class, message = describe_error(error)
        _core.hook_raised(role, name, error_class or "", message or "", traceback_lines(error))


# The process's hooks, and the module-level names that register on them.
hooks = Hooks()
server_middleware = hooks.server_middleware
client_middleware = hooks.client_middleware
on_error = hooks.on_error
on_death = hooks.on_death
on = hooks.on
install = hooks.install
reset = hooks.reset
