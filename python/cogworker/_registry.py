"""The handlers this process has, by class name: what ``@cogworker.job``
registers and what a worker tells the core it may run (nothing else runs)."""

from __future__ import annotations

import threading
from typing import Any

from ._core import ConfigError

_lock = threading.Lock()
_handlers: dict[str, Any] = {}


def register(handle: Any) -> None:
    """Adds a job handle; a second, different function under the same class
    name is refused (it would silently replace the first)."""
    with _lock:
        existing = _handlers.get(handle.name)
        if existing is not None and existing.func is not handle.func:
            error = ConfigError(
                f"invalid config job name = {handle.name!r}: already the name of {_describe(existing.func)}, "
                f"so {_describe(handle.func)} cannot have it too; give one of them name=..."
            )
            error.field, error.value = "name", handle.name
            raise error
        _handlers[handle.name] = handle


def handlers() -> dict[str, Any]:
    """Handlers by class name (a copy)."""
    with _lock:
        return dict(_handlers)


def _describe(func: Any) -> str:
    code = getattr(func, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}{where}"
