"""The ops API: queues, the scheduled/retry/dead sets, processes, stats.

Every method is one call of the engine's API table (the same calls, with
the same names and results, in Ruby and Rust); ``cogworker.Api.calls()``
lists them. Results are plain data: dicts, lists, numbers, strings.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Callable

from . import _core
from ._settings import make_config, shared_client


class Api:
    """``cogworker.Api().queues()`` and friends. Set names: "scheduled", "retry", "dead"."""

    def __init__(self, redis_url: str | None = None, namespace: str | None = None) -> None:
        if redis_url is None and namespace is None:
            self._native = _core.Api.of_client(shared_client())
        else:
            self._native = _core.Api(make_config(redis_url=redis_url, namespace=namespace))

    def call(self, name: str, *args: Any) -> Any:
        """Runs the API call ``name`` with positional ``args``."""
        return self._native.call(name, list(args))

    def admin(self, command: str, arg: str | None = None) -> str:
        """Runs an admin command (``cogworker stats``, ...); the text it prints."""
        return self._native.admin(command, arg)

    def watch(self, jid: str, timeout: float | None = None) -> Iterator[tuple[str, Any]]:
        """Follows job ``jid`` (docs/long-jobs.md): yields ``("progress",
        report)`` as the job reports, then ``("finished", end)``: its kept
        result once final (``result_ttl``), or else the last report of the
        run that ended. Pub/sub, no polling. Ends early, quietly, once
        ``timeout`` seconds have passed."""
        watch = self._native.watch(jid)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = watch.next(left)
            if event is None:
                return
            yield event
            if event[0] == "finished":
                return

    async def watch_async(self, jid: str, timeout: float | None = None) -> AsyncIterator[tuple[str, Any]]:
        """``watch`` for asyncio: ``async for kind, value in api.watch_async(jid)``
        (each wait runs on a thread of the loop's executor)."""
        watch = await asyncio.to_thread(self._native.watch, jid)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = await asyncio.to_thread(watch.next, left)
            if event is None:
                return
            yield event
            if event[0] == "finished":
                return

    @staticmethod
    def calls() -> list[tuple[str, list[str], str]]:
        """``(name, parameters, help)`` of every call."""
        return _core.api_calls()


def _method(name: str, params: list[str], help_text: str) -> Callable[..., Any]:
    names = [p.split("=")[0] for p in params]

    def method(self: Api, *args: Any, **kwargs: Any) -> Any:
        values = list(args)
        # A parameter not given goes as None, which the core reads as its
        # default (the table's `name=default`).
        for position in range(len(args), len(names)):
            values.append(kwargs.pop(names[position], None))
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword argument(s) {sorted(kwargs)}")
        return self.call(name, *values)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{name}({', '.join(params)}): {help_text}"
    return method


for _name, _params, _help in _core.api_calls():
    setattr(Api, _name, _method(_name, _params, _help))
