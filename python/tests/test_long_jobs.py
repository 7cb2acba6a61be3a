"""Long jobs from Python (issue #48): what the conformance scenarios do
not reach: an ``async def`` handler's progress, and ``watch_async``."""

from __future__ import annotations

import asyncio
from typing import Any

import tasks

import cogworker


def test_an_async_handlers_progress_is_watched_from_asyncio(worker_factory) -> None:
    worker_factory(concurrency=2)
    jid = tasks.long_steps.enqueue(4)

    async def follow() -> list[tuple[str, Any]]:
        return [event async for event in cogworker.Api().watch_async(jid, timeout=15)]

    events = asyncio.run(follow())
    steps = [value["data"]["step"] for kind, value in events if kind == "progress"]
    assert steps == sorted(steps) and steps[-1] == 4, events
    assert events[-1][0] == "finished"
    assert events[-1][1]["status"] == "succeeded"
    assert events[-1][1]["value"] == "done"
    assert cogworker.Api().progress(jid)["message"] == "step 4"
    # Watched once it ended: its last report, then its end, at once.
    assert [kind for kind, _ in cogworker.Api().watch(jid, timeout=5)] == ["progress", "finished"]
