"""Side by side, in one invocation: cogworker's Python worker against
Dramatiq, Celery, arq and RQ. Each system gets its own private redis-server,
the same no-op job (it writes a line to a FIFO the harness reads: no Redis
command, about a microsecond) and one worker
process with 10 threads (arq: 10 concurrent jobs; RQ: one job at a time, as
it works). Printed per system: enqueue jobs/s (one by one), drain jobs/s,
pickup latency p50/p99 on an idle worker (200 single pushes), peak RSS of
the worker (summed over its processes), and the ratio of cogworker's drain
to each.

Per-job logging is equal on both sides, in two settings
(``BENCH_LOGGING``, both by default, each its own rows): ``off`` — no line
per job from any system (cogworker ``COGWORKER_LOG=warn``, Celery ``-l
warning``, RQ ``-q``; Dramatiq logs no line per job at its default; arq's
command always logs one) — and ``default`` — each at its command's default
(cogworker and Celery at INFO: a line per job; RQ's lines). Systems
alternate for ``BENCH_ROUNDS`` rounds (1); a ratio compares runs of the
same round and setting.

Run with `scripts/bench-python` (it makes the benchmark's own venv).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = 10


@dataclass
class Result:
    system: str
    enqueue: float
    drain: float
    drained: int
    p50: float
    p99: float
    rss_mb: float
    startup: float


class Server:
    """A private redis-server (cogworker.testing.RedisServer)."""

    def __init__(self) -> None:
        from cogworker.testing import RedisServer

        self._server = RedisServer()
        self.dir = self._server.dir
        self.url = self._server.url

    def stop(self) -> None:
        self._server.close()


def rss_mb(pid: int) -> float:
    """Peak RSS of a process and its children (VmHWM), in MB."""
    total = 0.0
    pids = [pid]
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        pids += [int(p) for p in out]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


class Fifo:
    """Counts the lines handlers write: "d" (done) and "l <ms>" (latency)."""

    def __init__(self, path: str) -> None:
        import threading

        os.mkfifo(path)
        self.path = path
        # Read-write: never blocks on open, never sees EOF between writers.
        self.fd = os.open(path, os.O_RDWR)
        self.done = 0
        self.latencies: list[float] = []
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        pending = b""
        while not self._closed:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if line == b"d":
                    self.done += 1
                elif line.startswith(b"l "):
                    self.latencies.append(float(line[2:]))

    def close(self) -> None:
        self._closed = True
        os.close(self.fd)


def worker_command(system: str, logging: str) -> list[str]:
    bin_dir = os.path.dirname(sys.executable)
    quiet = logging == "off"
    return {
        "cogworker": [os.path.join(bin_dir, "cogworker"), "worker", "apps", "-c", str(THREADS)],
        "dramatiq": [
            os.path.join(bin_dir, "dramatiq"),
            "apps",
            "--processes",
            "1",
            "--threads",
            str(THREADS),
        ],
        "celery": [
            os.path.join(bin_dir, "celery"),
            "-A",
            "apps",
            "worker",
            "-P",
            "threads",
            "-c",
            str(THREADS),
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            "-l",
            "warning" if quiet else "info",
        ],
        "arq": [os.path.join(bin_dir, "arq"), "apps.WorkerSettings"],
        "rq": [os.path.join(bin_dir, "rq"), "worker", *(["-q"] if quiet else [])],
    }[system]


def make_pusher(system: str, url: str):  # noqa: ANN201 - returns (push_noop, push_probe, close)
    if system == "cogworker":
        import cogworker

        client = cogworker.Client(redis_url=url)
        return (
            lambda: client.enqueue("bench.noop"),
            lambda t: client.enqueue("bench.probe", t),
            lambda: None,
        )
    if system == "dramatiq":
        import apps

        return (lambda: apps.dq_noop.send(), lambda t: apps.dq_probe.send(t), lambda: None)
    if system == "celery":
        import apps

        return (lambda: apps.celery_noop.delay(), lambda t: apps.celery_probe.delay(t), lambda: None)
    if system == "rq":
        import apps
        import redis
        from rq import Queue

        q = Queue(connection=redis.Redis.from_url(url))
        return (lambda: q.enqueue(apps.rq_noop), lambda t: q.enqueue(apps.rq_probe, t), lambda: None)
    if system == "arq":
        from arq import create_pool
        from arq.connections import RedisSettings

        loop = asyncio.new_event_loop()
        pool = loop.run_until_complete(create_pool(RedisSettings.from_dsn(url)))
        return (
            lambda: loop.run_until_complete(pool.enqueue_job("arq_noop")),
            lambda t: loop.run_until_complete(pool.enqueue_job("arq_probe", t)),
            lambda: loop.run_until_complete(pool.aclose()),
        )
    raise ValueError(system)


def run_system(system: str, jobs: int, logging: str) -> Result:
    server = Server()
    fifo = Fifo(os.path.join(server.dir, "bench.fifo"))
    env = {
        **os.environ,
        **({"COGWORKER_LOG": "warn"} if logging == "off" else {}),
        "BENCH_FIFO": fifo.path,
        "BENCH_SYSTEM": system,
        "BENCH_REDIS_URL": server.url,
        "COGWORKER_REDIS_URL": server.url,
        "RQ_REDIS_URL": server.url,
        "PYTHONPATH": HERE,
    }
    os.environ.update({k: env[k] for k in ("BENCH_SYSTEM", "BENCH_REDIS_URL", "COGWORKER_REDIS_URL")})
    sys.modules.pop("apps", None)
    push_noop, push_probe, close = make_pusher(system, server.url)
    worker = None
    try:
        started = time.monotonic()
        for _ in range(jobs):
            push_noop()
        enqueue_rate = jobs / (time.monotonic() - started)

        args = worker_command(system, logging)
        if system == "rq":
            args += ["--url", server.url]
        spawned = time.monotonic()
        worker = subprocess.Popen(
            args, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # Drain: from the worker's first completed job to the last.
        while fifo.done == 0:
            if worker.poll() is not None:
                raise RuntimeError(f"{system} worker exited with {worker.returncode}")
            time.sleep(0.002)
        first = time.monotonic()
        startup = first - spawned
        deadline = first + 600
        while fifo.done < jobs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{system}: drain timed out")
            time.sleep(0.001)
        drain_rate = (jobs - 1) / max(time.monotonic() - first, 1e-9)

        for i in range(200):
            push_probe(time.time())
            time.sleep(0.01 + (i % 7) * 0.002)
        deadline = time.monotonic() + 120
        while len(fifo.latencies) < 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{system}: probes timed out")
            time.sleep(0.01)
        latencies = sorted(fifo.latencies)
        peak = rss_mb(worker.pid)
        return Result(
            system,
            enqueue_rate,
            drain_rate,
            jobs,
            statistics.median(latencies),
            latencies[int(len(latencies) * 0.99) - 1],
            peak,
            startup,
        )
    finally:
        close()
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
        server.stop()
        fifo.close()


def main() -> int:
    jobs = int(os.environ.get("BENCH_JOBS", "20000"))
    # The slowest peers work one job at a time: fewer jobs keep the run short.
    sizes = {
        "cogworker": jobs,
        "dramatiq": jobs,
        "celery": jobs,
        "arq": min(jobs, 2000),
        "rq": min(jobs, 600),
    }
    systems = [s for s in os.environ.get("BENCH_SYSTEMS", "cogworker,dramatiq,celery,arq,rq").split(",") if s]
    settings = [s for s in os.environ.get("BENCH_LOGGING", "off,default").split(",") if s]
    rounds = int(os.environ.get("BENCH_ROUNDS", "1"))
    runs: list[tuple[int, str, Result]] = []
    for round_ in range(1, rounds + 1):
        for logging in settings:
            for system in systems:
                print(
                    f"bench: round {round_}, logging {logging}: {system} ({sizes[system]} jobs)...",
                    file=sys.stderr,
                    flush=True,
                )
                runs.append((round_, logging, run_system(system, sizes[system], logging)))
    print(
        "| round | per-job logging | system | enqueue 1-by-1 jobs/s | drain jobs/s | cogworker drain ratio | "
        "pickup p50 ms | pickup p99 ms | worker peak RSS MB | first job after start s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for round_, logging, r in runs:
        ours = next((o for n, g, o in runs if (n, g, o.system) == (round_, logging, "cogworker")), None)
        ratio = f"{ours.drain / r.drain:.2f}x" if ours else "-"
        print(
            f"| {round_} | {logging} | {r.system} ({r.drained} jobs) | {r.enqueue:,.0f} | {r.drain:,.0f} "
            f"| {ratio} | {r.p50:.1f} | {r.p99:.1f} | {r.rss_mb:.0f} | {r.startup:.2f} |"
        )
    results = [r for _, _, r in runs]
    print(json.dumps([r.__dict__ for r in results]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
