"""Pushing jobs to handlers in any language, by class name."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Sequence
from typing import Any, Union

from . import _core, testing
from ._settings import make_config

When = Union[float, int, _dt.datetime]
Delay = Union[float, int, _dt.timedelta]
RetryOption = Union[bool, int]


def epoch(when: When) -> float:
    """Epoch seconds from a datetime (naive = local time) or a number."""
    if isinstance(when, _dt.datetime):
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return float(when)
    raise TypeError(f"expected a datetime or epoch seconds, got {when!r}")


def seconds(delay: Delay) -> float:
    if isinstance(delay, _dt.timedelta):
        return delay.total_seconds()
    if isinstance(delay, (int, float)) and not isinstance(delay, bool):
        return float(delay)
    raise TypeError(f"expected seconds or a timedelta, got {delay!r}")


def build_payload(
    class_name: str,
    args: Sequence[Any],
    *,
    queue: str | None = None,
    retry: RetryOption | None = None,
    at: When | None = None,
    unique_for: Delay | None = None,
    **fields: Any,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"class": class_name, "args": list(args), "queue": queue or "default"}
    if retry is not None:
        payload["retry"] = retry
    if at is not None:
        payload["at"] = epoch(at)
    if unique_for is not None:
        payload["unique_for"] = seconds(unique_for)
    payload.update(fields)
    return payload


def encode(payload: dict[str, Any]) -> str:
    try:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _core.InvalidJob(
            f"invalid job: args of {payload.get('class')!r} must be JSON data "
            f"(str, int, float, bool, None, list, dict): {e}"
        ) from None


class Client:
    """Pushes jobs. ``Client()`` uses ``cogworker.configure`` settings (and
    COGWORKER_REDIS_URL / REDIS_URL); arguments override them."""

    def __init__(self, redis_url: str | None = None, namespace: str | None = None) -> None:
        self._native = _core.Client(make_config(redis_url=redis_url, namespace=namespace))

    def enqueue(
        self,
        class_name: str,
        *args: Any,
        queue: str | None = None,
        at: When | None = None,
        retry: RetryOption | None = None,
        unique_for: Delay | None = None,
    ) -> str | None:
        """Pushes one job for handler ``class_name``; returns its jid.

        ``unique_for`` (seconds): while a job with the same class, queue and
        args is queued, scheduled, running or retrying (at most that long),
        the push is refused and returns None.
        """
        payload = build_payload(class_name, args, queue=queue, retry=retry, at=at, unique_for=unique_for)
        return self.push(payload)

    def enqueue_in(self, delay: Delay, class_name: str, *args: Any, **options: Any) -> str | None:
        return self.enqueue(class_name, *args, at=_now() + seconds(delay), **options)

    def enqueue_many(
        self,
        class_name: str,
        args_list: Iterable[Sequence[Any]],
        *,
        queue: str | None = None,
        at: When | None = None,
        retry: RetryOption | None = None,
        unique_for: Delay | None = None,
    ) -> list[str | None]:
        """Pushes one job per args tuple, all in one round trip (None for a
        unique job refused as a duplicate)."""
        payloads = [
            build_payload(class_name, args, queue=queue, retry=retry, at=at, unique_for=unique_for)
            for args in args_list
        ]
        return self.push_bulk(payloads)

    def push(self, payload: dict[str, Any]) -> str | None:
        """Pushes a raw job payload (a dict with at least ``class``); returns
        its jid, or None for a unique job whose duplicate holds the lock."""
        if testing.active():
            return testing.record(payload)
        return self._native.push(encode(payload))

    def push_bulk(self, payloads: Sequence[dict[str, Any]]) -> list[str | None]:
        if testing.active():
            return [testing.record(p) for p in payloads]
        return self._native.push_bulk([encode(p) for p in payloads])


def _now() -> float:
    import time

    return time.time()
