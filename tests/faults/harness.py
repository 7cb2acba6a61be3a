"""The fault harness: a private Redis (AOF on, as production runs it), an
optional TCP proxy that can blackhole traffic, worker processes of all three
languages, numbered jobs, and the accounting that says what became of each.

Every job is `Account(token, millis)`; each worker appends the token to a
shared results file when it runs one. Afterwards every token is one of:
ran once, ran more than once, still queued / scheduled / retrying / in
progress, dead, or lost (run nowhere and held nowhere).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

import cogworker
from cogworker.testing import RedisServer, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NS = "cogworker"
LANGUAGES = ("rust", "python", "ruby")
# The long versions (scripts/soak) or the small ones (scripts/test).
SOAK = os.environ.get("FAULT_SOAK") == "1"
JOBS = int(os.environ.get("FAULT_JOBS", "100000" if SOAK else "3000"))
DRAIN_LIMIT = 3600 if SOAK else 180


class Redis(RedisServer):
    """The private server, with AOF fsynced on every write."""

    def __init__(self, *extra: str) -> None:
        super().__init__("--appendonly", "yes", "--appendfsync", "always", *extra)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=30)

    def restart(self) -> None:
        """kill -9, then start again on the same port and data directory."""
        self.stop()
        self.start()


class BlackholeProxy:
    """A TCP proxy in front of Redis. While blackholed it accepts and reads
    but forwards nothing either way, so connections hang half-open (no
    reset, no close) as in a network partition; healed, it delivers what it
    held and carries on."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._open = threading.Event()
        self._open.set()
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started,), daemon=True, name="blackhole-proxy"
        )
        self._thread.start()
        started.wait(10)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def blackhole(self) -> None:
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        started.set()
        self._loop.run_until_complete(server.serve_forever())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not self._open.is_set():
            await asyncio.sleep(0.05)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                while not self._open.is_set():
                    await asyncio.sleep(0.05)
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()


@dataclass
class Worker:
    language: str
    proc: subprocess.Popen[bytes]
    log: str


@dataclass
class Fleet:
    """Worker processes of the given languages, against `url`."""

    url: str
    results: str
    logdir: str
    concurrency: int = 4
    env: dict[str, str] = field(default_factory=dict)
    # Put before each worker's command (running it in a network namespace).
    prefix: list[str] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)
    started: int = 0

    def start(self, language: str) -> Worker:
        self.started += 1
        log = os.path.join(self.logdir, f"{language}-{self.started}.log")
        env = {
            **os.environ,
            "COGWORKER_REDIS_URL": self.url,
            "TEST_NAMESPACE": NS,
            "TEST_RESULTS_FILE": self.results,
            "TEST_CONCURRENCY": str(self.concurrency),
            "PYTHONPATH": HERE,
            **self.env,
        }
        c = str(self.concurrency)
        command = {
            "rust": [os.path.join(ROOT, "target/debug/examples/test_worker")],
            "python": [sys.executable, "-m", "cogworker", "worker", "fault_tasks", "-c", c],
            "ruby": [
                "ruby",
                "-I",
                os.path.join(ROOT, "ruby/lib"),
                os.path.join(ROOT, "ruby/exe/cogworker"),
                "-r",
                os.path.join(HERE, "fault_jobs.rb"),
                "-c",
                c,
            ],
        }[language]
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                self.prefix + command, env=env, cwd=HERE, stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )
        worker = Worker(language, proc, log)
        self.workers.append(worker)
        return worker

    def kill9(self, worker: Worker) -> None:
        worker.proc.kill()
        worker.proc.wait()
        self.workers.remove(worker)

    def stop_all(self, timeout: float = 30) -> list[int]:
        for w in self.workers:
            w.proc.send_signal(signal.SIGTERM)
        codes = []
        for w in self.workers:
            try:
                codes.append(w.proc.wait(timeout))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                codes.append(w.proc.wait())
        self.workers.clear()
        return codes

    def logs(self) -> str:
        text = []
        for name in sorted(os.listdir(self.logdir)):
            with open(os.path.join(self.logdir, name), encoding="utf-8", errors="replace") as f:
                text.append(f"--- {name}\n{f.read()}")
        return "\n".join(text)


def identity_of(r: redis.Redis, pid: int, ns: str = NS) -> str | None:
    for member in r.smembers(f"{ns}:processes"):
        identity = member.decode()
        if identity.split(":")[-2] == str(pid):
            return identity
    return None


# What `_client` puts back after making a client with other settings.
_DEFAULTS = {"shard_by_queue": False, "namespace": NS, "min_replicas_acked": 0}


def _client(url: str, **settings: Any) -> cogworker.Client:
    """A client of `url` with `settings` (of `_DEFAULTS`), which it keeps;
    the process's settings are the defaults again afterwards."""
    cogworker.configure(**settings)
    try:
        return cogworker.Client(redis_url=url)
    finally:
        cogworker.configure(**{name: _DEFAULTS[name] for name in settings})


def push_jobs(url: str, count: int, millis: int, batch: int = 1000, **settings: Any) -> list[str]:
    """`count` jobs with unique tokens, pushed in bulk by a client with
    `settings` (`shard_by_queue`, `namespace`, `min_replicas_acked`: then
    each bulk push returned only once replicated)."""
    client = _client(url, **settings)
    tokens = [f"t{i:07d}" for i in range(count)]
    for start in range(0, count, batch):
        client.enqueue_many("Account", [(t, millis) for t in tokens[start : start + batch]])
    return tokens


def push_mixed_jobs(url: str, count: int, millis: int) -> list[str]:
    """`count` jobs sharded by queue: every fifth fails its first attempt
    (retried in 0.2 s: a failure filed from a queue's slot, then a hand-over
    back), every seventh is scheduled 0.5-3 s ahead (a hand-over from the
    schedule), the rest plain; pushed one by one, so the workers run them
    while they arrive."""
    client = _client(url, shard_by_queue=True)
    tokens = [f"t{i:07d}" for i in range(count)]
    for i, token in enumerate(tokens):
        fail_once = i % 5 == 0
        if i % 7 == 0:
            client.enqueue_in(0.5 + (i % 11) / 4, "Account", token, millis, fail_once)
        else:
            client.enqueue("Account", token, millis, fail_once)
    return tokens


# Where jobs wait, in both key layouts (sharded by queue, the queue and its
# in-progress hashes carry the tag {NS:<queue>}; hand-overs in the outbox).
QUEUE_KEYS = (f"{NS}:queue:default", f"{{{NS}:default}}:queue")
IN_PROGRESS_PATTERNS = (f"{NS}:in_progress:*", f"{{{NS}:*}}:in_progress:*")


def in_progress_keys(r: redis.Redis) -> list[bytes]:
    return [key for pattern in IN_PROGRESS_PATTERNS for key in r.scan_iter(pattern)]


def pending(r: redis.Redis) -> int:
    """Jobs queued (also on groups' lists), scheduled, retrying, handed
    over or in progress."""
    lists = [*QUEUE_KEYS, *r.scan_iter(f"{NS}:group:*"), *r.scan_iter(f"{NS}:group@*")]
    waiting = sum(r.llen(k) for k in lists) + r.zcard(f"{NS}:schedule") + r.zcard(f"{NS}:retry")
    return waiting + sum(r.hlen(k) for k in in_progress_keys(r)) + r.hlen(f"{NS}:outbox")


def wait_drained(r: redis.Redis, timeout: float) -> bool:
    """True once no job is queued, scheduled, retrying or in progress."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pending(r) == 0:
                return True
        except redis.RedisError:
            pass
        time.sleep(0.2)
    return False


@dataclass
class Account:
    """What became of each token."""

    total: int
    once: int
    duplicated: int
    extra_runs: int
    queued: int
    scheduled: int
    retrying: int
    in_progress: int
    dead: int
    lost: list[str]

    def row(self) -> dict[str, Any]:
        return {k: (len(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()}


def account(r: redis.Redis, tokens: Iterable[str], results: str) -> Account:
    tokens = list(tokens)
    with open(results, encoding="utf-8", errors="replace") as f:
        runs = Counter(line.strip() for line in f if line.strip())

    def held(keys: list[bytes]) -> set[str]:
        found: set[str] = set()
        for raw in keys:
            try:
                args = json.loads(raw).get("args") or []
            except ValueError:
                continue
            if args and isinstance(args[0], str):
                found.add(args[0])
        return found

    queued = set().union(*(held(r.lrange(k, 0, -1)) for k in QUEUE_KEYS))
    # A hand-over's value is the queue's name, a newline, the payload.
    queued |= held(value.split(b"\n", 1)[-1] for value in r.hvals(f"{NS}:outbox"))
    scheduled = held(r.zrange(f"{NS}:schedule", 0, -1))
    retrying = held(r.zrange(f"{NS}:retry", 0, -1))
    dead = held(r.zrange(f"{NS}:dead", 0, -1))
    in_progress: set[str] = set()
    for key in in_progress_keys(r):
        in_progress |= held(r.hvals(key))
    lost = [
        t for t in tokens if runs[t] == 0 and not ({t} & (queued | scheduled | retrying | dead | in_progress))
    ]
    return Account(
        total=len(tokens),
        once=sum(1 for t in tokens if runs[t] == 1),
        duplicated=sum(1 for t in tokens if runs[t] > 1),
        extra_runs=sum(runs[t] - 1 for t in tokens if runs[t] > 1),
        queued=sum(1 for t in tokens if runs[t] == 0 and t in queued),
        scheduled=sum(1 for t in tokens if runs[t] == 0 and t in scheduled),
        retrying=sum(1 for t in tokens if runs[t] == 0 and t in retrying),
        in_progress=sum(1 for t in tokens if runs[t] == 0 and t in in_progress),
        dead=sum(1 for t in tokens if t in dead),
        lost=lost,
    )


def chaos(fleet: Fleet, r: redis.Redis, seconds: float, every: float, rng: random.Random) -> tuple[int, int]:
    """kill -9 a random worker every `every` seconds for `seconds`, starting
    a replacement of the same language. Returns (kills, bound): the bound on
    duplicates is the jobs the killed processes held in progress (running,
    or finished but not yet acknowledged) when they died."""
    kills, bound = 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(every)
        victim = rng.choice(fleet.workers)
        identity = identity_of(r, victim.proc.pid)
        held = (
            r.hlen(f"{NS}:in_progress:{identity}") + r.hlen(f"{{{NS}:default}}:in_progress:{identity}")
            if identity
            else fleet.concurrency
        )
        fleet.kill9(victim)
        kills += 1
        bound += max(held, 0) + 1  # +1: a job fetched in the instant between the count and the kill
        fleet.start(victim.language)
    return kills, bound


def kill_until_drained(
    fleet: Fleet, r: redis.Redis, every: float, rng: random.Random, limit: float
) -> dict[int, float]:
    """kill -9 a random worker every `every` seconds, starting a replacement
    of the same language, until no job is pending (at most `limit`
    seconds). Returns when each killed process died, by pid: a body it was
    running ended then."""
    killed: dict[int, float] = {}
    deadline = time.monotonic() + limit
    while pending(r) > 0 and time.monotonic() < deadline:
        time.sleep(every)
        victim = rng.choice(fleet.workers)
        fleet.kill9(victim)
        killed[victim.proc.pid] = time.time()
        fleet.start(victim.language)
    return killed


def wait_registered(r: redis.Redis, fleet: Fleet, timeout: float = 60, ns: str = NS) -> None:
    """Until every running worker of the fleet has beaten (so it handles TERM)."""
    deadline = time.monotonic() + timeout
    while any(identity_of(r, w.proc.pid, ns) is None for w in fleet.workers):
        if time.monotonic() > deadline:
            raise AssertionError(f"worker processes did not register in {timeout}s:\n{fleet.logs()[-5000:]}")
        time.sleep(0.1)


def three_languages(fleet: Fleet, r: redis.Redis, ns: str = NS) -> None:
    """One worker of each language, registered (in namespace `ns`)."""
    for language in LANGUAGES:
        fleet.start(language)
    wait_registered(r, fleet, ns=ns)


def report(name: str, acc: Account, **extra: Any) -> str:
    line = json.dumps({"scenario": name, **acc.row(), **extra})
    print(line, file=sys.stderr)
    path = os.environ.get("FAULT_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return line
