"""Periodic (cron) jobs.

``cogworker.periodic("*/5 * * * *", send_digest)`` registers an entry; every
worker process that registered it ticks for it, and each slot runs once
across the whole fleet (no leader; see ``docs/internals.md``). Register
entries in the modules the worker imports, next to the handlers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from . import _core
from .client import RetryOption
from .job import JobHandle

_lock = threading.Lock()
_entries: dict[str, dict[str, Any]] = {}


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
    if isinstance(job, JobHandle):
        class_name = job.name
        queue = job.queue if queue is None else queue
        retry = job.retry if retry is None else retry
    elif isinstance(job, str):
        class_name = job
    else:
        raise TypeError(f"job must be a @cogworker.job handle or a class name, got {job!r}")
    entry: dict[str, Any] = {
        "cron": cron,
        "class": class_name,
        "args": list(args),
        "queue": "default" if queue is None else queue,
    }
    if unique is not None:
        entry["unique"] = unique
    if tz is not None:
        entry["tz"] = tz
    if retry is not None and retry is not True:
        entry["retry"] = retry
    try:
        text = json.dumps(entry, allow_nan=False)
    except (TypeError, ValueError) as e:
        message = f"invalid config periodic.args = {list(args)!r}: must be JSON data: {e}"
        raise _core.ConfigError(message) from None
    pjid = _core.periodic_id(text)
    with _lock:
        _entries[pjid] = entry
    return pjid


def entries() -> list[dict[str, Any]]:
    """The registered entries (copies)."""
    with _lock:
        return [dict(e) for e in _entries.values()]


def clear() -> None:
    """Forgets every registered entry (for tests)."""
    with _lock:
        _entries.clear()
