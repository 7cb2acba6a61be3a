"""Pushing from async code, on a private redis-server: sync ``enqueue``
one by one, ``aenqueue`` one by one, and ``aenqueue`` from 100 coroutines
at once (3 rounds). Run with ``scripts/bench-push`` (release build)."""

from __future__ import annotations

import asyncio
import time

import cogworker
from cogworker.testing import RedisServer

JOBS = 20000


@cogworker.job
def aenqueue_bench_noop() -> None:
    pass


async def main() -> None:
    with RedisServer() as server:
        cogworker.configure(redis_url=server.url)
        for _ in range(3):
            started = time.monotonic()
            for _ in range(JOBS // 4):
                aenqueue_bench_noop.enqueue()
            sync = (JOBS // 4) / (time.monotonic() - started)
            started = time.monotonic()
            for _ in range(JOBS // 4):
                await aenqueue_bench_noop.aenqueue()
            one = (JOBS // 4) / (time.monotonic() - started)

            async def pusher(count: int) -> None:
                for _ in range(count):
                    await aenqueue_bench_noop.aenqueue()

            started = time.monotonic()
            await asyncio.gather(*(pusher(JOBS // 100) for _ in range(100)))
            many = JOBS / (time.monotonic() - started)
            print(
                f"python enqueue {sync:7.0f}/s  aenqueue 1-by-1 {one:7.0f}/s  "
                f"aenqueue x100 {many:7.0f}/s ({many / one:.1f}x 1-by-1)"
            )


if __name__ == "__main__":
    asyncio.run(main())
