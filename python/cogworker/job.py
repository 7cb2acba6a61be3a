"""``@cogworker.job``: turns a function into a job handler with a handle to
enqueue it. The function stays directly callable."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar, overload

from . import _core, _registry, testing
from .client import Delay, PushOptions, RetryOption, When, default_client, given, off_loop

if TYPE_CHECKING:
    from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])

RetryIn = Callable[[int, BaseException], Any]


def registry() -> dict[str, JobHandle[Any]]:
    """Handlers by class name (a copy)."""
    return _registry.handlers()


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _signature_of(func: Callable[..., Any]) -> inspect.Signature | None:
    """The signature pushes are checked against; None where Python cannot
    say (some builtins and C functions): those are not checked."""
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


class JobHandle(Generic[F]):
    """What ``@cogworker.job`` returns: call it like the function, or enqueue it."""

    def __init__(
        self,
        func: F,
        *,
        name: str | None = None,
        retry_in: RetryIn | None = None,
        **options: Unpack[PushOptions],
    ) -> None:
        functools.update_wrapper(self, func)
        self.func = func
        self.name = name or f"{func.__module__}.{func.__qualname__}"
        self.retry_in = retry_in
        # Every push's options unless it gives its own; checked now, so a
        # misspelt name fails where it is written (a function of the args
        # is called at each push, with them).
        self.push_options = given(options)
        _core.check_options(self.name, **self.push_options)
        self._signature = _signature_of(func)

    def check_args(self, args: Sequence[Any]) -> None:
        """Refuses, at the push, args the function cannot be called with
        (as Celery checks): not later, in a worker, as a ``TypeError``."""
        if self._signature is None:
            return
        try:
            self._signature.bind(*args)
        except TypeError as mismatch:
            takes = f"{self.name}{self._signature} cannot take them ({mismatch})"
            error = _core.InvalidArgument(f"invalid argument args = {list(args)!r}: {takes}")
            error.field, error.value = "args", repr(list(args))
            raise error from None

    @property
    def queue(self) -> str:
        return str(self.push_options.get("queue", "default"))

    @property
    def retry(self) -> RetryOption:
        retry: RetryOption = self.push_options.get("retry", True)
        return retry

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cogworker job {self.name} queue={self.queue!r}>"

    def run(self, args: Sequence[Any]) -> Any:
        """Calls the function with ``args``; an awaitable it returns (an
        ``async def``, or a wrapper around one) is run to completion."""
        result = self.func(*args)
        if inspect.isawaitable(result):
            import asyncio  # deferred: most apps never run an async handler

            return asyncio.run(_await(result))
        return result

    def options(self, **options: Unpack[PushOptions]) -> _Bound:
        """Enqueue with other options: ``handle.options(queue="critical").enqueue(...)``."""
        return _Bound(self, {**self.push_options, **given(options)})

    def _bound(self) -> _Bound:
        return _Bound(self, self.push_options)

    def enqueue(self, *args: Any) -> str | None:
        """Pushes a job; returns its jid (None: a unique duplicate was
        refused). Args the function cannot take raise ``InvalidArgument``."""
        self.check_args(args)
        # The push options as they are: nothing downstream changes them.
        return default_client().push_job(self.name, args, self.push_options)

    def step(self, *args: Any, takes_result: bool = False) -> dict[str, Any]:
        """A workflow step (``cogworker.chain``): this job with ``args``;
        ``takes_result``: the step before's result goes first."""
        return self._bound().step(*args, takes_result=takes_result)

    def enqueue_in(self, delay: Delay, *args: Any) -> str | None:
        """Pushes a job to run ``delay`` (seconds or a timedelta) from now."""
        return self._bound().enqueue_in(delay, *args)

    def enqueue_at(self, when: When, *args: Any) -> str | None:
        """Pushes a job to run at ``when`` (a datetime or epoch seconds)."""
        return self._bound().enqueue_at(when, *args)

    async def aenqueue(self, *args: Any) -> str | None:
        """``enqueue`` for async code: awaits the push without blocking the loop."""
        return await self._bound().aenqueue(*args)

    async def aenqueue_in(self, delay: Delay, *args: Any) -> str | None:
        return await off_loop(self.enqueue_in, delay, *args)

    async def aenqueue_at(self, when: When, *args: Any) -> str | None:
        return await off_loop(self.enqueue_at, when, *args)

    # Fake-mode helpers (cogworker.testing).
    @property
    def jobs(self) -> list[dict[str, Any]]:
        return testing.jobs_for(self.name)

    def drain(self) -> int:
        return testing.drain(self.name)

    def perform_one(self) -> Any:
        return testing.perform_one(self.name)

    def clear(self) -> None:
        testing.clear(self.name)


class _Bound:
    """A handle with per-call options."""

    def __init__(self, handle: JobHandle[Any], options: dict[str, Any]) -> None:
        self.handle, self.push_options = handle, options

    def _push(self, args: Sequence[Any], **timing: Any) -> str | None:
        self.handle.check_args(args)
        return default_client().push_job(self.handle.name, args, {**self.push_options, **timing})

    def enqueue(self, *args: Any) -> str | None:
        return self._push(args)

    def step(self, *args: Any, takes_result: bool = False) -> dict[str, Any]:
        from .workflow import step  # deferred: workflow imports the client

        return step(self.handle.name, *args, takes_result=takes_result, **self.push_options)

    def enqueue_in(self, delay: Delay, *args: Any) -> str | None:
        return self._push(args, delay=delay)

    def enqueue_at(self, when: When, *args: Any) -> str | None:
        return self._push(args, at=when)

    async def aenqueue(self, *args: Any) -> str | None:
        self.handle.check_args(args)
        return await default_client().apush_job(self.handle.name, args, self.push_options)


@overload
def job(func: F) -> JobHandle[F]: ...


@overload
def job(
    *, name: str | None = None, retry_in: RetryIn | None = None, **options: Unpack[PushOptions]
) -> Callable[[F], JobHandle[F]]: ...


def job(
    func: Any = None,
    *,
    name: str | None = None,
    retry_in: RetryIn | None = None,
    **options: Unpack[PushOptions],
) -> Any:
    """Registers a function (plain or ``async def``) as the handler of jobs of
    class ``name`` (default ``module.qualname``; two functions may not share
    one: that raises ``cogworker.ConfigError``).

    ``options`` are every push's (see ``PushOptions``; a push's own
    options win), checked here: ``queue`` (default ``"default"``);
    ``retry``: True (25 retries), False (discard on failure) or a number;
    ``result_ttl`` (seconds or timedelta): keep the outcome (the returned
    value, JSON data, or the error) that long, read with
    ``cogworker.Client().result(jid, wait=...)``; ``unique_for``: a push
    while a job with the same args is pending (at most that long) is
    refused and returns None; ``expires_in``, ``limits``, ...
    ``retry_in(retry_count, exception)``: seconds (or a timedelta) until the
    next retry, or None for the default backoff.
    """

    def register(f: F) -> JobHandle[F]:
        handle = JobHandle(f, name=name, retry_in=retry_in, **options)
        _registry.register(handle)
        return handle

    return register(func) if func is not None else register
