"""Periodic (cron) jobs.

``cogworker.periodic("*/5 * * * *", send_digest)`` registers an entry; every
worker process that registered it ticks for it, and each slot runs once
across the whole fleet (no leader; see ``docs/internals.md``). Register
entries in the modules the worker imports, next to the handlers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from . import _core
from .client import RetryOption, handler_and_options
from .job import JobHandle

_lock = threading.Lock()
_entries: dict[str, _core.Periodic] = {}


def periodic(
    cron: str,
    job: JobHandle[Any] | str,
    args: Sequence[Any] = (),
    *,
    queue: str | None = None,
    unique: str | None = None,
    tz: str | None = None,
    retry: RetryOption | None = None,
) -> str:
    """Pushes ``job`` (a ``@cogworker.job`` handle, or a class name handled
    in any language) with ``args`` on every slot of ``cron``: 5 fields, or 6
    with seconds first; evaluated in ``tz`` (an IANA name; UTC by default).

    ``unique="until_executed"`` skips a slot while the previous run is still
    queued, running or retrying. Returns the entry's id (pjid). Raises
    ``cogworker.ConfigError`` naming what is wrong.
    """
    if not isinstance(job, (JobHandle, str)):
        raise TypeError(f"job must be a @cogworker.job handle or a class name, got {job!r}")
    # The core takes the handler's declared queue and retry where not given.
    class_name, declared = handler_and_options(job, {})
    entry = _core.periodic_entry(
        cron, class_name, declared, args=list(args), queue=queue, unique=unique, tz=tz, retry=retry
    )
    with _lock:
        _entries[entry.pjid] = entry
    return entry.pjid


def entries() -> list[dict[str, Any]]:
    """The registered entries, as registered (``cron``, ``class``, ``args``, ``queue``...)."""
    with _lock:
        return [e.entry for e in _entries.values()]


def native_entries() -> list[_core.Periodic]:
    """The registered entries, for a worker."""
    with _lock:
        return list(_entries.values())


def clear() -> None:
    """Forgets every registered entry (for tests)."""
    with _lock:
        _entries.clear()
