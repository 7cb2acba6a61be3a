"""Handlers that end in every wrong way a handler can (imported by the tests
and by worker processes)."""

from __future__ import annotations

import asyncio
import datetime
import functools
import os
import sys
import threading
import time

import cogworker

ALL_SLOTS = 4
together = threading.Barrier(ALL_SLOTS, timeout=20)
RAN: list[object] = []


class NotAnException(BaseException):
    """Derives from BaseException only: `except Exception` lets it through."""


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ itself fails")


@cogworker.job(retry=1)
def raises_base_exception() -> None:
    raise NotAnException("not an Exception")


@cogworker.job(retry=1)
def raises_bad_str() -> None:
    raise BadStr()


@cogworker.job(retry=1, retry_in=lambda count, error: datetime.timedelta(seconds=1000))
def retry_in_timedelta() -> None:
    raise ValueError("retried in a timedelta")


@cogworker.job(retry=1, retry_in=lambda count, error: "soon")
def retry_in_string() -> None:
    raise ValueError("retried in a string")


@cogworker.job(retry=1, retry_in=lambda count, error: 1 / 0)
def retry_in_raises() -> None:
    raise ValueError("the hook raises")


@cogworker.job(retry=1)
async def async_base_exception() -> None:
    await asyncio.sleep(0)
    raise NotAnException("from a coroutine")


def logged(func):  # a plain decorator over an async function
    @functools.wraps(func)
    def wrapper(*args):
        return func(*args)

    return wrapper


@cogworker.job
@logged
async def wrapped_coroutine(value: object) -> None:
    await asyncio.sleep(0)
    RAN.append(("wrapped", value))


@cogworker.job
def all_at_once(n: int) -> None:
    together.wait()
    RAN.append(("together", n))


@cogworker.job
async def async_all_at_once(n: int) -> None:
    await asyncio.to_thread(together.wait)
    RAN.append(("async together", n))


@cogworker.job(retry=1)
def exits(code: int) -> None:
    sys.exit(code)


@cogworker.job(retry=1)
def interrupted() -> None:
    raise KeyboardInterrupt


@cogworker.job(retry=1)
async def async_exits() -> None:
    raise SystemExit(4)


@cogworker.job(retry=0)
def stuck(seconds: float) -> None:
    path = os.environ.get("TEST_RESULTS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("stuck\n")
    time.sleep(seconds)
