"""Pushes numbered jobs one by one until SIGTERM (or the deadline), and
appends each token whose push returned to a file: the Python producer of
the failover soak. `python push_stream.py PREFIX FILE`, Redis from
COGWORKER_REDIS_URL, STREAM_MIN_REPLICAS_ACKED, STREAM_DURABLE_BY, STREAM_NAMESPACE,
STREAM_PAUSE_MS and STREAM_SECONDS as core/examples/push_stream.rs reads
them. A failed push
is not retried: its token is not written."""

from __future__ import annotations

import os
import signal
import sys
import time

import cogworker


def main(prefix: str, path: str) -> None:
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    replicas = int(os.environ.get("STREAM_MIN_REPLICAS_ACKED", "0"))
    # Each push asks for its replicas itself, or the client's setting does.
    per_push = {"min_replicas_acked": replicas} if os.environ.get("STREAM_DURABLE_BY") == "push" else {}
    if not per_push:
        cogworker.configure(min_replicas_acked=replicas)
    if "STREAM_NAMESPACE" in os.environ:
        cogworker.configure(namespace=os.environ["STREAM_NAMESPACE"])
    client = cogworker.Client()
    pause = int(os.environ.get("STREAM_PAUSE_MS", "2")) / 1000
    deadline = time.monotonic() + int(os.environ.get("STREAM_SECONDS", "600"))
    pushed = failed = n = 0
    with open(path, "a", encoding="utf-8") as out:
        while not stopping and time.monotonic() < deadline:
            token = f"{prefix}{n:08d}"
            n += 1
            try:
                client.enqueue("Account", token, 0, **per_push)
            except cogworker.RedisError:
                failed += 1
            else:
                out.write(token + "\n")
                pushed += 1
            time.sleep(pause)
    print(f"pushed {pushed}, failed {failed}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
