"""Async handlers side by side with arq: N jobs that each
``await asyncio.sleep(1)`` (1,000 and 10,000), one worker process allowed
N coroutines at once (cogworker ``async_concurrency``, arq ``max_jobs``;
cogworker keeps its 10 threads), then 10,000 no-op async jobs at 100 at
once. Printed per system and run: wall time from starting the worker
process to the last job done (startup included), jobs/s over that time,
and peak RSS. All jobs are pushed before the worker starts.

Run with ``scripts/bench-python`` (after the thread benchmark) or alone:
``.venv-bench/bin/python python/bench/sleepers.py``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time

from bench import Fifo, Server, rss_mb

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = [("sleep 1 s", 1.0, 1_000, 1_000), ("sleep 1 s", 1.0, 10_000, 10_000), ("no-op", 0.0, 10_000, 100)]


def push(system: str, url: str, jobs: int, seconds: float) -> None:
    if system == "cogworker":
        import cogworker

        cogworker.Client(redis_url=url).enqueue_many("bench.nap", [[seconds] for _ in range(jobs)])
        return
    from arq import create_pool
    from arq.connections import RedisSettings

    async def enqueue() -> None:
        pool = await create_pool(RedisSettings.from_dsn(url))
        for start in range(0, jobs, 50):
            await asyncio.gather(
                *(pool.enqueue_job("arq_nap", seconds) for _ in range(start, min(jobs, start + 50)))
            )
        await pool.aclose()

    asyncio.run(enqueue())


def run(system: str, seconds: float, jobs: int, at_once: int) -> tuple[float | None, str, float]:
    server = Server()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Fifo(os.path.join(tmp, "fifo"))
        env = {
            **os.environ,
            "BENCH_SYSTEM": f"{system}-async",
            "BENCH_REDIS_URL": server.url,
            "BENCH_FIFO": fifo.path,
            "BENCH_AT_ONCE": str(at_once),
            "COGWORKER_REDIS_URL": server.url,
            "PYTHONPATH": HERE,
        }
        push(system, server.url, jobs, seconds)
        bin_dir = os.path.dirname(sys.executable)
        command = {
            "cogworker": [os.path.join(bin_dir, "cogworker"), "worker", "apps", "-c", "10"],
            "arq": [os.path.join(bin_dir, "arq"), "apps.AsyncWorkerSettings"],
        }[system]
        started = time.monotonic()
        proc = subprocess.Popen(
            command, env=env, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        peak = 0.0
        progress = (0, started)
        try:
            while fifo.done < jobs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{system} worker exited with {proc.returncode}")
                now = time.monotonic()
                if fifo.done != progress[0]:
                    progress = (fifo.done, now)
                elif now - progress[1] > 30:
                    return None, f"stalled: {fifo.done:,} of {jobs:,} done, none for 30 s", peak
                peak = max(peak, rss_mb(proc.pid))
                time.sleep(0.01)
            wall = time.monotonic() - started
        finally:
            proc.terminate()
            proc.wait(30)
            fifo.close()
            server.stop()
    return wall, "", peak


def main() -> int:
    systems = [s for s in os.environ.get("BENCH_ASYNC_SYSTEMS", "cogworker,arq").split(",") if s]
    print(f"{'run':<36} {'system':<10} {'wall s':>8} {'jobs/s':>9} {'RSS MB':>7}")
    for label, seconds, jobs, at_once in RUNS:
        for system in systems:
            wall, problem, peak = run(system, seconds, jobs, at_once)
            name = f"{jobs:,} × {label}, {at_once:,} at once"
            if wall is None:
                print(f"{name:<36} {system:<10} {problem}", flush=True)
            else:
                print(f"{name:<36} {system:<10} {wall:>8.2f} {jobs / wall:>9,.0f} {peak:>7.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
