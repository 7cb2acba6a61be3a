"""Process-wide settings: ``cogworker.configure(...)`` and what reads them."""

from __future__ import annotations

import threading
from typing import Any

from . import _core, _hooks

_lock = threading.Lock()
_settings: dict[str, Any] = {}
_generation = 0
# The process's one native config and client for the configured settings
# (every Client(), Api() and Worker() without overrides shares them, and so
# one connection), built on first use, again after a configure().
_shared: dict[str, Any] = {}


def configure(
    *,
    server_middleware: list[Any] | None = None,
    client_middleware: list[Any] | None = None,
    error_handlers: list[Any] | None = None,
    death_handlers: list[Any] | None = None,
    **settings: Any,
) -> None:
    """Set any setting (``redis_url``, ``namespace``, ``concurrency``,
    ``queues``, ``fetch``, ``shutdown_timeout``, ... see docs/configuration.md).
    Validated at once: a bad name or value raises ``cogworker.ConfigError``
    naming it. Later calls override earlier ones. ``server_middleware``,
    ``client_middleware``, ``error_handlers`` and ``death_handlers`` replace
    the hooks registered so far (see ``cogworker.server_middleware``,
    ``client_middleware``, ``on_error``, ``on_death``)."""
    global _generation
    _hooks.install(server_middleware, error_handlers, death_handlers, client_middleware)
    with _lock:
        merged = {**_settings, **settings}
        _core.Config(**merged)  # validates; raises ConfigError
        _settings.clear()
        _settings.update(merged)
        _shared.clear()
        _generation += 1


def settings() -> dict[str, Any]:
    with _lock:
        return dict(_settings)


def generation() -> int:
    """Changes whenever the settings do (clients built before are stale)."""
    return _generation


def make_config(**overrides: Any) -> _core.Config:
    """The configured settings with ``overrides`` (None values ignored)
    applied; without overrides, the process's one config."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return _shared_native("config", lambda: _core.Config(**settings()))
    return _core.Config(**{**settings(), **given})


def shared_client() -> _core.Client:
    """The process's one native client (and connection) for the configured
    settings: what ``Client()`` and ``Api()`` without overrides use."""
    return _shared_native("client", lambda: _core.Client(make_config()))


def _shared_native(kind: str, build: Any) -> Any:
    with _lock:
        native = _shared.get(kind)
    if native is None:
        native = build()
        with _lock:
            native = _shared.setdefault(kind, native)
    return native


def reset() -> None:
    """Forget every setting (tests)."""
    global _generation
    with _lock:
        _settings.clear()
        _shared.clear()
        _generation += 1
