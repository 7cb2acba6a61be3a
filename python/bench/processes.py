"""CPU-bound Python handlers with ``cogworker worker -p N``: N jobs that
each burn about 5 ms of pure-Python CPU (holding the GIL), drained by one
worker process (``-p 1``) and by two (``-p 2``). Printed per run: jobs/s
from the first job done to the last (start-up excluded), wall time from
starting the worker (start-up included) and peak RSS of the parent and its
children. All jobs are pushed before the worker starts.

Run alone: ``.venv-bench/bin/python python/bench/processes.py`` (after
``scripts/bench-python`` has installed cogworker there). BENCH_CPU_JOBS
(default 2000) sets N.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from apps import burn
from bench import Fifo, Server, rss_mb

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = int(os.environ.get("BENCH_CPU_JOBS", "2000"))
TARGET_SECONDS = 0.005


def calibrate() -> int:
    """The rounds of ``burn`` that take about 5 ms here."""
    rounds = 10_000
    while True:
        started = time.perf_counter()
        burn(rounds)
        took = time.perf_counter() - started
        if took > 0.05:
            return int(rounds * TARGET_SECONDS / took)
        rounds *= 2


def run(processes: int, rounds: int) -> tuple[float, float, float]:
    import cogworker

    server = Server()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Fifo(os.path.join(tmp, "fifo"))
        env = {
            **os.environ,
            "BENCH_SYSTEM": "cogworker",
            "BENCH_FIFO": fifo.path,
            "COGWORKER_REDIS_URL": server.url,
            "PYTHONPATH": HERE,
        }
        cogworker.Client(redis_url=server.url).enqueue_many("bench.burn", [[rounds] for _ in range(JOBS)])
        cli = os.path.join(os.path.dirname(sys.executable), "cogworker")
        command = [cli, "worker", "apps", "-c", "4", "-p", str(processes)]
        started = time.monotonic()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        proc = subprocess.Popen(command, env=env, cwd=HERE, **quiet)
        first = None
        peak = 0.0
        polls = 0
        try:
            # Light polling: the harness must not take CPU from the workers.
            while fifo.done < JOBS:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited with {proc.returncode}")
                if first is None and fifo.done:
                    first = (time.monotonic(), fifo.done)
                if polls % 50 == 25:
                    peak = max(peak, rss_mb(proc.pid))
                polls += 1
                time.sleep(0.01)
            finished = time.monotonic()
        finally:
            proc.terminate()
            proc.wait(30)
            fifo.close()
            server.stop()
    assert first is not None
    rate = (JOBS - first[1]) / (finished - first[0])
    return rate, finished - started, peak


def main() -> int:
    rounds = calibrate()
    print(f"{JOBS:,} jobs × ~5 ms of pure-Python CPU ({rounds:,} rounds), -c 4, {os.cpu_count()} cores")
    print(f"{'processes':<10} {'jobs/s':>8} {'wall s':>8} {'RSS MB':>7} {'speed-up':>9}")
    base = None
    for processes in (1, 2):
        rate, wall, peak = run(processes, rounds)
        base = base or rate
        print(f"-p {processes:<7} {rate:>8,.0f} {wall:>8.2f} {peak:>7.0f} {rate / base:>8.2f}×", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
