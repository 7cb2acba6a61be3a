"""Pushing jobs to handlers in any language, by class name."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as _dt
import functools
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, TypedDict, TypeVar, Union

from . import _core, _hooks, _settings, _tracing, testing

if TYPE_CHECKING:
    from typing_extensions import Unpack

When = Union[float, int, _dt.datetime]
Delay = Union[float, int, _dt.timedelta]
RetryOption = Union[bool, int]
# A key (a group, a flow key), or a function of the job's arguments that
# returns one (or None: none), called once per job at its push.
KeyOption = Union[str, Callable[..., Optional[str]]]
T = TypeVar("T")


class PushOptions(TypedDict, total=False):
    """A push's options, the same in Python, Ruby and Rust (the core's
    ``PUSH_OPTIONS``; it checks each and names a bad one). Times are
    datetimes (naive: local time) or epoch seconds; lengths of time are
    timedeltas or seconds."""

    queue: str
    retry: RetryOption
    at: When
    unique_for: Delay
    result_ttl: Delay
    expires_in: Delay
    expires_at: When
    keep_expired: bool
    limits: Sequence[str]
    priority: int
    group: KeyOption
    group_cap: int
    group_rate: int
    group_rate_period: Delay
    group_rate_kind: str
    group_backlog: int
    group_backlog_full: str
    key: KeyOption
    debounce: Delay
    debounce_max: Delay
    throttle: Delay
    throttle_excess: str
    replace: bool
    sequence: bool
    timeout: Delay
    bid: str
    cursor: Any
    min_replicas_acked: int


# The batch a push in this thread or task joins (inside ``with batch:``;
# see batch.py).
joining_batch: contextvars.ContextVar[str | None] = contextvars.ContextVar("cogworker_batch", default=None)


def given(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options given (None: not given), for the core."""
    return {name: value for name, value in options.items() if value is not None}


def handler_and_options(handler: Any, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The handler's name and push options: a ``@job`` function (or one
    with ``.options(...)``) carries the options it was declared with,
    under those given here; a name carries none."""
    declared = getattr(handler, "push_options", None)
    if declared is None:
        return getattr(handler, "name", handler), given(options)
    handle = getattr(handler, "handle", handler)
    return handle.name, {**declared, **given(options)}


def joined(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with ``bid`` of the batch being pushed into, if any."""
    bid = joining_batch.get()
    if bid is None or "bid" in options:
        return options
    return {**options, "bid": bid}


class JobFailed(_core.Error):
    """``Client().result(jid)`` of a job that failed for good (``dead``, or
    ``failed`` when retries were off): ``status``, ``error_class``,
    ``error_message``, ``jid`` and the whole ``record``."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.jid = record.get("jid")
        self.status = record.get("status")
        self.error_class = record.get("error_class")
        self.error_message = record.get("error_message")
        super().__init__(f"job {self.jid} {self.status}: {self.error_class}: {self.error_message}")


class Pending:
    """``Client().result(jid)`` of a job without a final outcome yet:
    ``status`` is ``queued``, ``scheduled``, ``waiting`` (a batch callback
    or later workflow step not yet handed over), ``running``, ``retrying``
    or ``unknown`` (no result kept: pushed without ``result_ttl``, never
    pushed, or expired; a wait for it returns at once)."""

    __slots__ = ("jid", "status")

    def __init__(self, jid: str, status: str) -> None:
        self.jid, self.status = jid, status

    def __repr__(self) -> str:
        return f"<Pending {self.jid} {self.status}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pending) and (self.jid, self.status) == (other.jid, other.status)

    def __hash__(self) -> int:
        return hash((self.jid, self.status))


def result_of(jid: str, outcome: tuple[str, Any]) -> Any:
    """What ``result(jid)`` answers, from the engine's outcome (``(kind,
    value)``, decided by the core): the value, a raised ``JobFailed``, or a
    ``Pending``."""
    kind, value = outcome
    if kind == "succeeded":
        return value
    if kind == "failed":
        raise JobFailed(value)
    return Pending(jid, value)


class Client:
    """Pushes jobs. ``Client()`` uses ``cogworker.configure`` settings (and
    COGWORKER_REDIS_URL / REDIS_URL); arguments override them."""

    def __init__(
        self, redis_url: str | None = None, namespace: str | None = None, hooks: _hooks.Hooks | None = None
    ) -> None:
        # The client middleware of the process's hooks, or of ``hooks``.
        self._middleware = (_hooks.hooks if hooks is None else hooks).client_middleware
        if redis_url is None and namespace is None:
            self._native = _settings.shared_client()
        else:
            self._native = _core.Client(_settings.make_config(redis_url=redis_url, namespace=namespace))

    def result(self, jid: str, wait: float | None = None) -> Any:
        """The value a job pushed with ``result_ttl`` returned. Raises
        ``cogworker.JobFailed`` if it failed for good; returns a
        ``cogworker.Pending`` (with its ``status``) if it has no final
        outcome yet. ``wait`` (seconds): wait that long for one, blocked on
        Redis (no polling)."""
        if testing.active():
            return testing.result(jid)
        return result_of(jid, self._native.result(jid, None if wait is None else float(wait)))

    async def aresult(self, jid: str, wait: float | None = None) -> Any:
        """``result`` for async code: waits without blocking the loop."""
        return await off_loop(self.result, jid, wait)

    def cancel(self, jid: str) -> str:
        """Cancels the job ``jid``, in whatever language it runs, and says
        where it was: ``scheduled`` or ``retrying`` (taken off now),
        ``running`` (an ``async def`` handler is cancelled outright; a
        plain one sees ``current_job().cancelled``), ``queued`` (dropped
        unrun when a worker takes it) or ``unknown``. Its status becomes
        ``cancelled``."""
        return self._native.cancel(jid)

    def status(self, jid: str) -> str:
        """queued, scheduled, running, retrying, dead, succeeded, failed,
        expired, cancelled or unknown."""
        if testing.active():
            return testing.status(jid)
        return self._native.status(jid)

    def enqueue(self, class_name: str, *args: Any, **options: Unpack[PushOptions]) -> str | None:
        """Pushes one job for handler ``class_name``; returns its jid, or
        None when ``unique_for`` refused it: while a job with the same
        class, queue and args is queued, scheduled, running or retrying (at
        most that long), a push is refused. ``options``: see
        ``PushOptions``."""
        return self.push_job(class_name, args, given(options))

    async def aenqueue(self, class_name: str, *args: Any, **options: Unpack[PushOptions]) -> str | None:
        """``enqueue`` for async code, with its options: awaits the push
        without blocking the loop."""
        return await self.apush_job(class_name, args, given(options))

    async def aenqueue_many(
        self, class_name: str, args_list: Iterable[Sequence[Any]], **options: Unpack[PushOptions]
    ) -> list[str | None]:
        """``enqueue_many`` for async code."""
        return await off_loop(self.enqueue_many, class_name, list(args_list), **options)

    def enqueue_in(
        self, delay: Delay, class_name: str, *args: Any, **options: Unpack[PushOptions]
    ) -> str | None:
        """Like ``enqueue``, to run ``delay`` (seconds or a timedelta) from now."""
        return self.push_job(class_name, args, {**given(options), "delay": delay})

    def enqueue_many(
        self, class_name: str, args_list: Iterable[Sequence[Any]], **options: Unpack[PushOptions]
    ) -> list[str | None]:
        """Pushes one job per args tuple, all in one round trip (None for a
        unique job refused as a duplicate)."""
        opts = given(options)
        args_list = [list(args) for args in args_list]
        if _tracing.ENABLED:
            with _tracing.producing(class_name, opts.get("queue"), len(args_list)) as (span, context):
                jids = self._push(class_name, args_list, {**opts, **context})
                _tracing.name_message(span, jids)
                return jids
        return self._push(class_name, args_list, opts)

    def push_job(self, class_name: str, args: Sequence[Any], opts: dict[str, Any]) -> str | None:
        """Pushes ``class_name(*args)`` with push options (in a PRODUCER
        span whose trace context the job carries, with OpenTelemetry)."""
        if _tracing.recording():
            with _tracing.producing(class_name, opts.get("queue")) as (span, context):
                jids = self._push(class_name, [args], {**opts, **context})
                _tracing.name_message(span, jids)
                return jids[0]
        # No span to open (entering `producing` costs a tenth of a push):
        # only a context that is current anyway to pass on.
        context = _tracing.current_context()
        if context:
            opts = {**opts, **context}
        return self._push(class_name, [args], opts)[0]

    def _push(self, class_name: str, args_list: list[Any], opts: dict[str, Any]) -> list[str | None]:
        """Through the client middleware, then a testing mode's record or
        one round trip: the engine's order."""
        return self._native.push_many(
            class_name, args_list, self._apply(), testing.run_inline, **joined(opts)
        )

    def _apply(self) -> Callable[[dict[str, Any]], dict[str, Any] | None] | None:
        return self._middleware.apply if self._middleware else None

    async def apush_job(self, class_name: str, args: Sequence[Any], opts: dict[str, Any]) -> str | None:
        """``push_job`` for async code. A plain push (no client middleware,
        testing mode or recording tracer) is written by the engine while the
        loop runs on, with no thread waiting for it: 100 coroutines pushing
        at once are 100 pushes in flight. Others run ``push_job`` on the
        loop's executor."""
        if self._middleware or testing.active() or _tracing.recording():
            return await off_loop(self.push_job, class_name, args, opts)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[str | None]] = loop.create_future()

        def done(error: BaseException | None, jids: list[str | None] | None) -> None:
            loop.call_soon_threadsafe(_settle, future, error, jids)

        self._native.push_many_then(
            class_name, [list(args)], done, **joined(opts), **_tracing.current_context()
        )
        return (await future)[0]

    def push(self, payload: dict[str, Any]) -> str | None:
        """Pushes a raw job payload (a dict with at least ``class``); returns
        its jid, or None for a unique job whose duplicate holds the lock."""
        return self.push_bulk([payload])[0]

    def push_bulk(self, payloads: Sequence[dict[str, Any]]) -> list[str | None]:
        """Pushes raw job payloads in one round trip (in one PRODUCER span,
        with OpenTelemetry: the payloads without a trace context carry its)."""
        if _tracing.ENABLED and payloads:
            with _tracing.producing_payloads(payloads) as (span, context):
                jids = self._native.push_payloads(payloads, self._apply(), testing.run_inline, context)
                _tracing.name_message(span, jids)
                return jids
        return self._native.push_payloads(payloads, self._apply(), testing.run_inline)


def _settle(future: asyncio.Future[Any], error: BaseException | None, value: Any) -> None:
    """On the loop: the engine's answer to ``future`` (unless it was cancelled)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


async def off_loop(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` on the running loop's executor thread: a
    push from async code never blocks its event loop."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(call, *args, **kwargs))


_default_lock = threading.Lock()
_default: tuple[int, Client] | None = None


def default_client() -> Client:
    """The client the job handles push with, rebuilt when settings change."""
    global _default
    current = _default  # read once: swapped whole, never changed in place
    if current is not None and current[0] == _settings.generation():
        return current[1]
    with _default_lock:
        if _default is None or _default[0] != _settings.generation():
            _default = (_settings.generation(), Client())
        return _default[1]
