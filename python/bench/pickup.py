"""Pickup latency the way issue #33's shared harness measures it: a worker
process started by its own command (Python ``cogworker worker``, Ruby's
``cogworker``, the Rust example worker), concurrency 10, per-job logging
off (``COGWORKER_LOG=warn``), left idle; another process (this one, Python)
pushes 200 jobs one at a time, GAP ms apart, each carrying its push time
(``time.time()`` taken before the push); the handler notes ``now - pushed``.
Hosts alternate, ROUNDS rounds; p50 / p99 / max per run.

Which side a slow probe lost its time on: the pusher also notes when each
push returned. Pushes 20 ms apart finish in the order they were made, so
the n-th pickup is the n-th push. For each probe slower than SLOW_MS (2),
the table says how much of its latency was the push's own round trip
(pusher and Redis) and how much came after, on the worker's side.

The floor: in each round the same process also sends PROBES bare
``PING``s on a plain socket, GAP ms apart, to the same Redis. A pickup is
about three such round trips between idle processes (the push, the wake-up
message, the worker's fetch) and the hand-over to the handler; a machine
that stalls a bare round trip now and then stalls pickups as often.

Sidekiq, when Debian's ruby-sidekiq is installed, in the same rounds: its
worker by its own command (``sidekiq -r probe.rb -c 10``, its log at WARN as
ours is), its jobs pushed as its client pushes them (SADD and LPUSH in one
MULTI) from this process; its idle processors wait in ``BRPOP``, so a
push reaches one with no wake-up message and no second round trip.

Run with ``scripts/bench-pickup`` (release builds). Env: BENCH_GAP_MS (20),
BENCH_ROUNDS (3), BENCH_PROBES (200), BENCH_HOSTS (Rust,Ruby,Python, and
Sidekiq when installed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cogworker
from cogworker.testing import RedisServer

ROOT = Path(__file__).resolve().parents[2]
GAP = float(os.environ.get("BENCH_GAP_MS", "20")) / 1000
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PROBES = int(os.environ.get("BENCH_PROBES", "200"))
SLOW = float(os.environ.get("SLOW_MS", "2")) / 1000

PYTHON_JOBS = """
import os, time, cogworker

@cogworker.job(name="Probe")
def probe(pushed):
    picked_up = time.time()
    with open(os.environ["PICKUPS"], "a") as f:
        f.write(f"{picked_up - pushed}\\n")
"""

# One Ruby probe, in the job class of cogworker and of Sidekiq alike.
RUBY_PROBE = """
class Probe
  include %s
  def perform(pushed)
    picked_up = Time.now.to_f
    File.open(ENV.fetch('PICKUPS'), 'a') { |f| f.puts(picked_up - pushed) }
  end
end
"""
RUBY_JOBS = RUBY_PROBE % "Cogworker::Job"


# Sidekiq (Debian's ruby-sidekiq, when installed), its per-job log lines
# off as ours are; its job is pushed as Sidekiq's client pushes one (SADD
# and LPUSH in one MULTI), from this process, with redis-py.
SIDEKIQ_JOBS = "Sidekiq.logger.level = Logger::WARN\n" + RUBY_PROBE % "Sidekiq::Worker"


def sidekiq_installed() -> bool:
    return shutil.which("sidekiq") is not None


class SidekiqClient:
    def __init__(self, url: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url)

    def enqueue(self, pushed: float) -> None:
        job = {
            "class": "Probe",
            "args": [pushed],
            "queue": "default",
            "retry": True,
            "jid": os.urandom(12).hex(),
            "created_at": pushed,
            "enqueued_at": time.time(),
        }
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.sadd("queues", "default").lpush("queue:default", json.dumps(job)).execute()


def worker_command(host: str, work: Path, url: str) -> list[str]:
    if host == "Sidekiq":
        return ["sidekiq", "-r", str(work / "probe_sidekiq.rb"), "-c", "10"]
    if host == "Python":
        return [sys.executable, "-m", "cogworker", "worker", "pickup_jobs", "-c", "10", "--redis-url", url]
    if host == "Ruby":
        return [
            "ruby",
            "-I",
            str(ROOT / "ruby/lib"),
            str(ROOT / "ruby/exe/cogworker"),
            "-r",
            str(work / "probe.rb"),
            "-c",
            "10",
        ]
    # The Rust example worker: concurrency 10; its Probe notes the same
    # difference and prints the list when stopped.
    return [str(ROOT / "target/release/examples/bench"), "--worker", url]


def run(host: str, url: str, work: Path) -> tuple[list[float], list[float]]:
    pickups = work / f"pickups-{host}.txt"
    pickups.unlink(missing_ok=True)
    env = {**os.environ, "COGWORKER_LOG": "warn", "COGWORKER_REDIS_URL": url, "PICKUPS": str(pickups)}
    env["REDIS_URL"] = url
    env["PYTHONPATH"] = str(work)
    worker = subprocess.Popen(
        worker_command(host, work, url),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        api = cogworker.Api(redis_url=url)
        if host == "Sidekiq":
            sidekiq = SidekiqClient(url)
            enqueue = sidekiq.enqueue
        else:
            client = cogworker.Client(redis_url=url)

            def enqueue(pushed: float) -> None:
                client.enqueue("Probe", pushed)

        before = api.stats()["processed"]

        def ran() -> int:
            # The Rust worker keeps its pickups until it stops.
            if host == "Rust":
                return api.stats()["processed"] - before
            return len(pickups.read_text().split()) if pickups.exists() else 0

        # A first job: once it ran, the worker is up; then it idles.
        enqueue(time.time())
        deadline = time.monotonic() + 30
        while ran() < 1:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {host} worker ran nothing within 30 s")
            time.sleep(0.01)
        time.sleep(1.0)
        pushes = []
        for _ in range(PROBES):
            pushed = time.time()
            enqueue(pushed)
            pushes.append(time.time() - pushed)
            time.sleep(GAP)
        while ran() < PROBES + 1:
            if time.monotonic() > deadline + 60:
                raise RuntimeError(f"the {host} worker did not run every probe")
            time.sleep(0.01)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=40)
    if host == "Rust":
        line = next(line for line in out.splitlines() if line.startswith("LATENCIES "))
        values = [float(v) for v in line.split(" ", 1)[1].strip("[]").split(",") if v]
    else:
        values = [float(v) for v in pickups.read_text().split()]
    return values[1:], pushes  # the first probe met a worker still starting


def floor(url: str) -> list[float]:
    """PROBES bare PING round trips, GAP apart, on a plain socket."""
    host, port = url.removeprefix("redis://").split("/")[0].split(":")
    trips = []
    with socket.create_connection((host, int(port))) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(PROBES):
            started = time.perf_counter()
            conn.sendall(b"PING\r\n")
            reply = b""
            while not reply.endswith(b"\r\n"):
                reply += conn.recv(64)
            trips.append(time.perf_counter() - started)
            time.sleep(GAP)
    return trips


def row(round_: int, what: str, latencies: list[float], slow: str) -> str:
    values = sorted(v * 1000 for v in latencies)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return (
        f"| {round_} | {what} | {statistics.median(values):.2f} | {p99:.2f}"
        f" | {values[-1]:.2f} | {len(values)} | {slow or '-'} |"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, RedisServer() as server:
        work = Path(tmp)
        (work / "pickup_jobs.py").write_text(PYTHON_JOBS)
        (work / "probe.rb").write_text(RUBY_JOBS)
        (work / "probe_sidekiq.rb").write_text(SIDEKIQ_JOBS)
        print(f"pickup: {PROBES} pushes {GAP * 1000:.0f} ms apart from another process, idle worker, -c 10")
        print(
            "| round | host | p50 ms | p99 ms | max ms | probes"
            " | slow probes: latency = push + after, ms (floor: PINGs over 1 ms) |"
        )
        print("|---|---|---|---|---|---|---|")
        default_hosts = "Rust,Ruby,Python" + (",Sidekiq" if sidekiq_installed() else "")
        hosts = os.environ.get("BENCH_HOSTS", default_hosts).split(",")
        for round_ in range(1, ROUNDS + 1):
            for host in hosts:
                latencies, pushes = run(host, server.url, work)
                slow = [
                    f"{lat * 1000:.2f} = {push * 1000:.2f} + {(lat - push) * 1000:.2f}"
                    for lat, push in zip(latencies, pushes)
                    if lat > SLOW
                ]
                print(row(round_, host, latencies, "; ".join(slow)), flush=True)
            trips = floor(server.url)
            over = sum(t > 0.001 for t in trips)
            print(row(round_, "floor: bare PING", trips, f"{over} over 1 ms"), flush=True)


if __name__ == "__main__":
    main()
