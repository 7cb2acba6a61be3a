"""What one push costs from Python, one by one, each awaited, on a private
redis-server: ``Client.enqueue``, a handle's ``enqueue``, the native push
alone and a status read (one round trip, no job built), ROUNDS times
alternating. Run with ``scripts/bench-push`` (release build). Env:
BENCH_JOBS (20000)."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import cogworker
from cogworker import _settings
from cogworker.testing import RedisServer

JOBS = int(os.environ.get("BENCH_JOBS", "20000"))
ROUNDS = 3


@cogworker.job
def push_bench_noop() -> None:
    pass


def timed(label: str, call: Callable[[], Any]) -> None:
    started = time.monotonic()
    for _ in range(JOBS):
        call()
    seconds = time.monotonic() - started
    print(f"python {label:18} {JOBS / seconds:8.0f} calls/s {seconds / JOBS * 1e6:7.1f} us each")


def main() -> None:
    with RedisServer() as server:
        cogworker.configure(redis_url=server.url)
        client = cogworker.Client()
        native = _settings.shared_client()
        name = push_bench_noop.name
        for _ in range(ROUNDS):
            timed("Client.enqueue", lambda: client.enqueue(name))
            timed("handle.enqueue", push_bench_noop.enqueue)
            timed("native push", lambda: native.push_many(name, [[]]))
            timed("status", lambda: native.status("none"))


if __name__ == "__main__":
    main()
