"""``@cogworker.iterate``: a long job written as a generator
(docs/long-jobs.md). The handler takes its arguments and a keyword-only
``cursor`` (None on a first run) and yields, after each item, the cursor
to resume from after it::

    @cogworker.job
    @cogworker.iterate(max_runtime=300)
    def import_rows(path: str, *, cursor: int | None = None):
        rows = load(path)
        for i in range(cursor or 0, len(rows)):
            save(rows[i])
            yield i + 1

After each yield the engine saves the cursor (coalesced) and decides, once
for every language, whether to go on: between items the job stops when its
worker shuts down, its time limit is near, it was cancelled, or this run
has lasted ``max_runtime`` seconds; it then goes back on its queue with
its cursor (not a failure). An ``async def`` generator works the same way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any, Callable, TypeVar

from ._hooks import current_job

F = TypeVar("F", bound=Callable[..., Any])


def iterate(max_runtime: float | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Makes a generator function (``def`` or ``async def`` with ``yield``)
    a handler that resumes from its cursor; see the module's text."""

    def wrap(generator: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isasyncgenfunction(generator):

            @functools.wraps(generator)
            async def run_async(*args: Any, **kwargs: Any) -> None:
                job = current_job()
                items: AsyncIterator[Any] = generator(*args, cursor=_cursor(job), **kwargs)
                try:
                    async for cursor in items:
                        if job is not None and not job.iterated(cursor, max_runtime):
                            return
                finally:
                    await items.aclose()  # type: ignore[attr-defined]

            return run_async
        if inspect.isgeneratorfunction(generator):

            @functools.wraps(generator)
            def run(*args: Any, **kwargs: Any) -> None:
                job = current_job()
                items: Iterator[Any] = generator(*args, cursor=_cursor(job), **kwargs)
                try:
                    for cursor in items:
                        if job is not None and not job.iterated(cursor, max_runtime):
                            return
                finally:
                    items.close()  # type: ignore[attr-defined]

            return run
        raise TypeError(f"@iterate takes a generator function (one that yields cursors), not {generator!r}")

    return wrap


def _cursor(job: Any) -> Any:
    return None if job is None else job.cursor
