"""Process-wide settings: ``cogworker.configure(...)`` and what reads them."""

from __future__ import annotations

import threading
from typing import Any

from . import _core

_lock = threading.Lock()
_settings: dict[str, Any] = {}
_default_client: Any = None


def configure(**settings: Any) -> None:
    """Set any setting of the engine (``redis_url``, ``namespace``, ``concurrency``,
    ``queues``, ``fetch``, ``shutdown_timeout``, ...). Validated at once: a bad
    name or value raises ``cogworker.ConfigError`` naming it. Later calls
    override earlier ones, and the default client is rebuilt."""
    global _default_client
    with _lock:
        merged = {**_settings, **settings}
        _core.Config(**merged)  # validates; raises ConfigError
        _settings.clear()
        _settings.update(merged)
        _default_client = None


def settings() -> dict[str, Any]:
    with _lock:
        return dict(_settings)


def make_config(**overrides: Any) -> _core.Config:
    """The configured settings with ``overrides`` (None values ignored) applied."""
    merged = settings()
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return _core.Config(**merged)


def default_client() -> Any:
    global _default_client
    with _lock:
        client = _default_client
    if client is None:
        from .client import Client

        client = Client()
        with _lock:
            _default_client = client
    return client


def reset() -> None:
    """Forget every setting (tests)."""
    global _default_client
    with _lock:
        _settings.clear()
        _default_client = None
