"""How one worker's 10 threads share the GIL: sync jobs that are short
(a write to /dev/null, which releases the GIL as any I/O does) and jobs that
wait on I/O (``time.sleep`` of 0.5 ms and 2 ms), drained by one in-process
worker at ``-c 10``. Printed per kind: jobs/s (from the worker's start to
the last job done), the process's CPU per job and its context switches per
job (the engine's threads and the slots alike), and for the sleepers the
ideal rate of 10 threads.

Run alone: ``.venv-bench/bin/python python/bench/threads.py`` (after
``scripts/bench-python`` has installed cogworker there). BENCH_THREAD_JOBS
(default 20000) sets the no-op count; the sleepers run a quarter of it.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time

import cogworker
from cogworker.testing import RedisServer

JOBS = int(os.environ.get("BENCH_THREAD_JOBS", "20000"))
THREADS = 10
_null = os.open(os.devnull, os.O_WRONLY)
_done = threading.Semaphore(0)


@cogworker.job(name="bench.threads.short")
def short() -> None:
    os.write(_null, b"d")
    _done.release()


@cogworker.job(name="bench.threads.sleep")
def sleep(seconds: float) -> None:
    time.sleep(seconds)
    _done.release()


def drain(url: str, class_name: str, args: list, jobs: int) -> tuple[float, float, float]:
    """Pushes `jobs`, then drains them: (jobs/s, CPU µs/job, switches/job)."""
    client = cogworker.Client(url)
    for start in range(0, jobs, 1000):
        client.enqueue_many(class_name, [args] * min(1000, jobs - start))
    worker = cogworker.Worker(redis_url=url, concurrency=THREADS)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    worker.start()
    for _ in range(jobs):
        if not _done.acquire(timeout=120):
            sys.exit(f"{class_name}: jobs stopped arriving")
    took = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    worker.stop()
    worker.wait(30)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return jobs / took, cpu / jobs * 1e6, switches / jobs


def main() -> None:
    runs = [("short (a write)", "bench.threads.short", [], JOBS, None)]
    for seconds in (0.0005, 0.002):
        runs.append((f"sleep {seconds * 1000:g} ms", "bench.threads.sleep", [seconds], JOBS // 4, seconds))
    print(f"| sync jobs, -c {THREADS} | jobs | jobs/s | ideal jobs/s | CPU µs/job | context switches/job |")
    print("|---|---|---|---|---|---|")
    for label, class_name, args, jobs, seconds in runs:
        server = RedisServer()
        try:
            rate, cpu, switches = drain(server.url, class_name, args, jobs)
        finally:
            server.close()
        ideal = f"{THREADS / seconds:,.0f}" if seconds else "-"
        print(f"| {label} | {jobs} | {rate:,.0f} | {ideal} | {cpu:.1f} | {switches:.2f} |", flush=True)


if __name__ == "__main__":
    main()
