"""What a failure records of a Python exception, read so that reading it
cannot fail: its class as ``module.Qualified``, its message as valid
Unicode, its traceback without this package's own frames. The worker's
failures, its span's failure and a raising hook's line all read it so."""

from __future__ import annotations

import os
import traceback
from typing import Callable, TypeVar

T = TypeVar("T")


def qualified_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def safe(compute: Callable[[], T]) -> T | None:
    """``compute()``, or None if it raises (an exception's ``__str__`` may)."""
    try:
        return compute()
    except BaseException:  # noqa: BLE001 - reading the failure must not fail
        return None


def valid_text(text: str) -> str:
    """``text`` as valid Unicode (a lone surrogate becomes "?")."""
    return text.encode("utf-8", "replace").decode("utf-8")


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def app_traceback(error: BaseException) -> list[str]:
    """The traceback of ``error`` as ``traceback.format_exception`` writes
    it, without the worker's own frames (this package's: the slot loop,
    middleware chain, handle), which say nothing about the failure. All of
    them are kept when nothing else is left."""
    summary = traceback.TracebackException.from_exception(error)
    frames = [frame for frame in summary.stack if not frame.filename.startswith(_PACKAGE)]
    if frames:
        summary.stack = traceback.StackSummary.from_list(frames)
    return list(summary.format())


def describe_error(error: BaseException) -> tuple[str | None, str | None]:
    """``(error_class, error_message)`` as a failure records them (None:
    reading it raised; the core says so)."""
    return safe(lambda: qualified_name(type(error))), safe(lambda: valid_text(str(error)))
