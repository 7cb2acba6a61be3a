"""The same no-op job for every system under test. A handler only writes a
line to the harness's FIFO (BENCH_FIFO): "d" when a job is done, or, for a
latency probe, how long the job waited to be picked up. A write of a few
bytes costs about a microsecond and no Redis command, so the figures are
the systems' own cost, not the bookkeeping's.

Which system is loaded is chosen by BENCH_SYSTEM; BENCH_REDIS_URL is the
private server.
"""

from __future__ import annotations

import os
import threading
import time

SYSTEM = os.environ.get("BENCH_SYSTEM", "")
URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
_lock = threading.Lock()
_fd: list[int] = []


def _write(line: str) -> None:
    if not _fd:
        with _lock:
            if not _fd:
                _fd.append(os.open(os.environ["BENCH_FIFO"], os.O_WRONLY))
    os.write(_fd[0], line.encode())  # atomic: far below PIPE_BUF


def done() -> None:
    _write("d\n")


def probe(pushed_at: float) -> None:
    _write(f"l {(time.time() - pushed_at) * 1000:.3f}\n")


def burn(rounds: int) -> int:
    """Pure-Python CPU work that holds the GIL throughout."""
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


if SYSTEM == "cogworker":
    import cogworker

    @cogworker.job(name="bench.burn")
    def cog_burn(rounds: int) -> None:
        burn(rounds)
        done()

    @cogworker.job(name="bench.noop")
    def cog_noop() -> None:
        done()

    @cogworker.job(name="bench.probe")
    def cog_probe(pushed_at: float) -> None:
        probe(pushed_at)

elif SYSTEM == "dramatiq":
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    dramatiq.set_broker(RedisBroker(url=URL))

    @dramatiq.actor(max_retries=0)
    def dq_noop() -> None:
        done()

    @dramatiq.actor(max_retries=0)
    def dq_probe(pushed_at: float) -> None:
        probe(pushed_at)

elif SYSTEM == "celery":
    from celery import Celery

    app = Celery("apps", broker=URL)
    app.conf.worker_hijack_root_logger = False

    @app.task(name="bench.noop", ignore_result=True)
    def celery_noop() -> None:
        done()

    @app.task(name="bench.probe", ignore_result=True)
    def celery_probe(pushed_at: float) -> None:
        probe(pushed_at)

elif SYSTEM == "arq":
    from arq.connections import RedisSettings

    async def arq_noop(ctx: dict) -> None:
        done()

    async def arq_probe(ctx: dict, pushed_at: float) -> None:
        probe(pushed_at)

    class WorkerSettings:
        functions = [arq_noop, arq_probe]
        redis_settings = RedisSettings.from_dsn(URL)
        max_jobs = 10
        keep_result = 0


elif SYSTEM == "cogworker-async":
    import asyncio

    import cogworker

    cogworker.configure(async_concurrency=int(os.environ["BENCH_AT_ONCE"]))

    @cogworker.job(name="bench.nap")
    async def cog_nap(seconds: float) -> None:
        if seconds:
            await asyncio.sleep(seconds)
        done()

elif SYSTEM == "arq-async":
    import asyncio

    from arq.connections import RedisSettings

    async def arq_nap(ctx: dict, seconds: float) -> None:
        if seconds:
            await asyncio.sleep(seconds)
        done()

    class AsyncWorkerSettings:
        functions = [arq_nap]
        redis_settings = RedisSettings.from_dsn(URL)
        max_jobs = int(os.environ["BENCH_AT_ONCE"])
        keep_result = 0


def rq_noop() -> None:
    done()


def rq_probe(pushed_at: float) -> None:
    probe(pushed_at)
