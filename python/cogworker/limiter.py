"""Rate limiters shared by every process that uses their name, in any
language (docs/rate-limits.md). ``with limiter:`` runs its block once the
limiter gives capacity, waiting up to the limiter's ``wait`` (5 s unless
told), and raises ``cogworker.OverLimit`` if none came; a concurrent
limiter's place is held until the block ends, however it ends. The
definition is checked here and written to Redis when the limiter is made
(on first use if Redis cannot be reached then)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator
from typing import Any, Union

from . import _core
from .client import Client, Delay, default_client, off_loop

Interval = Union[Delay, str]  # seconds, a timedelta, or "second", "minute", "hour", "day"


class Limiter:
    """Make one with ``Limiter.concurrent``, ``bucket``, ``window`` or
    ``leaky``; ``client``: the Redis it lives on (default: the client of
    the settings as they are when it is made)."""

    def __init__(
        self, kind: str, name: str, limit: int, client: Client | None = None, **options: Any
    ) -> None:
        client = client if client is not None else default_client()
        self._native = _core.Limiter(client._native, kind, name, limit, **options)
        # The leases `with` holds, innermost last, per thread and per task.
        self._held: contextvars.ContextVar[tuple[_core.Lease, ...]] = contextvars.ContextVar(
            f"held:{name}", default=()
        )

    @classmethod
    def concurrent(
        cls,
        name: str,
        limit: int,
        *,
        lease_ttl: Delay | None = None,
        wait: Delay | None = None,
        client: Client | None = None,
    ) -> Limiter:
        """At most ``limit`` at once, fleet-wide. A holder that dies frees
        its place within ``lease_ttl`` (15 s)."""
        return cls("concurrent", name, limit, client, lease_ttl=lease_ttl, wait=wait)

    @classmethod
    def bucket(
        cls,
        name: str,
        limit: int,
        interval: Interval,
        *,
        wait: Delay | None = None,
        client: Client | None = None,
    ) -> Limiter:
        """At most ``limit`` per fixed ``interval``."""
        return cls("bucket", name, limit, client, interval=interval, wait=wait)

    @classmethod
    def window(
        cls,
        name: str,
        limit: int,
        interval: Interval,
        *,
        wait: Delay | None = None,
        client: Client | None = None,
    ) -> Limiter:
        """At most ``limit`` in any sliding ``interval``."""
        return cls("window", name, limit, client, interval=interval, wait=wait)

    @classmethod
    def leaky(
        cls,
        name: str,
        limit: int,
        interval: Interval,
        *,
        wait: Delay | None = None,
        client: Client | None = None,
    ) -> Limiter:
        """``limit`` per ``interval``, evenly spread."""
        return cls("leaky", name, limit, client, interval=interval, wait=wait)

    @property
    def name(self) -> str:
        return self._native.name

    def __repr__(self) -> str:
        return f"<Limiter {self._native.kind} {self._native.name} limit={self._native.limit}>"

    def acquire(self, wait: Delay | None = None) -> _core.Lease:
        """Takes capacity, waiting up to ``wait`` (default: the limiter's);
        raises ``cogworker.OverLimit`` if none came. ``release()`` the
        lease when done."""
        return self._native.acquire(wait)

    @contextlib.contextmanager
    def within_limit(self, wait: Delay | None = None) -> Iterator[None]:
        """``with limiter.within_limit(wait=2):`` — ``with limiter:`` with
        another wait."""
        lease = self.acquire(wait)
        try:
            yield
        finally:
            lease.release()

    @contextlib.asynccontextmanager
    async def awithin_limit(self, wait: Delay | None = None) -> AsyncIterator[None]:
        """``within_limit`` for async code: waits without blocking the loop."""
        lease = await off_loop(self.acquire, wait)
        try:
            yield
        finally:
            await off_loop(lease.release)

    def __enter__(self) -> Limiter:
        self._held.set((*self._held.get(), self.acquire()))
        return self

    def __exit__(self, *_exc: object) -> None:
        *outer, lease = self._held.get()
        self._held.set(tuple(outer))
        lease.release()

    async def __aenter__(self) -> Limiter:
        lease = await off_loop(self.acquire)
        self._held.set((*self._held.get(), lease))
        return self

    async def __aexit__(self, *_exc: object) -> None:
        *outer, lease = self._held.get()
        self._held.set(tuple(outer))
        await off_loop(lease.release)
