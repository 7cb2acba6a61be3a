"""Durable push through Sentinel and Cluster failovers: Rust, Python and
Ruby producers push one job at a time through `redis+sentinel://` (or
`redis+cluster://`, clusters.py), each language twice,
without and with `min_replicas_acked = 1`, while the master is killed with
`kill -9` again and again (sentinels.py: each time the replica has fallen
behind first). Servers, sentinels and producers share a network namespace
whose TCP buffers are small (16 KB), so what the lagging replica has not
read is still in the master when it dies, as across a real link.
Afterwards, every push that returned is looked for on the last master:
with the setting, none is missing; without it, the count missing is
reported beside it (asynchronous replication's window).

Small versions (3 failovers each) in `scripts/test`; `scripts/soak` runs 20.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from clusters import ReplicatedCluster
from harness import HERE, LANGUAGES, NS, ROOT, SOAK, report
from netns import Namespace, unavailable
from sentinels import Sentinels

FAILOVERS = 20 if SOAK else 3
# How far the replica falls behind before each kill.
BEHIND_S = 0.3

pytestmark = [
    pytest.mark.timeout(3600 if SOAK else 600),
    pytest.mark.skipif(bool(unavailable()), reason=f"network namespaces: {unavailable()}"),
]


def producer(language: str, prefix: str, path: str) -> list[str]:
    return {
        "rust": [os.path.join(ROOT, "target/debug/examples/push_stream"), prefix, path],
        "python": [sys.executable, os.path.join(HERE, "push_stream.py"), prefix, path],
        "ruby": [
            "ruby",
            "-I",
            os.path.join(ROOT, "ruby/lib"),
            os.path.join(HERE, "push_stream.rb"),
            prefix,
            path,
        ],
    }[language]


def lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def producers_through_failovers(
    tmp_path, ns: Namespace, url: str, namespace: str, fail_over, master, name: str
) -> dict[tuple[str, int], int]:
    """The six producers against `url` (keys under `namespace`) while
    `fail_over()` runs FAILOVERS times; then each producer's acknowledged
    pushes looked for on `master()`. Reports a row per producer and
    returns how many each lost."""
    producers = []
    for language in LANGUAGES:
        for durable in (0, 1):
            path = str(tmp_path / f"{language}-{durable}.txt")
            log = open(tmp_path / f"{language}-{durable}.log", "ab")
            env = {
                **os.environ,
                "COGWORKER_REDIS_URL": url,
                "STREAM_NAMESPACE": namespace,
                "STREAM_MIN_REPLICAS_ACKED": str(durable),
            }
            proc = subprocess.Popen(
                ns.prefix + producer(language, f"{language}{durable}-", path),
                env=env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
            producers.append((language, durable, proc, path))
    deadline = time.monotonic() + 60
    while not all(os.path.exists(p) and lines(p) for *_, p in producers):
        assert time.monotonic() < deadline, "a producer pushed nothing in 60 s"
        time.sleep(0.1)
    for _ in range(FAILOVERS):
        time.sleep(1)
        fail_over(BEHIND_S)
    time.sleep(1)
    for *_, proc, _ in producers:
        proc.send_signal(signal.SIGTERM)
    codes = [proc.wait(30) for *_, proc, _ in producers]
    queued = {
        raw.split(b'"args":["', 1)[1].split(b'"', 1)[0].decode()
        for raw in master().lrange(f"{namespace}:queue:default", 0, -1)
    }
    lost = {}
    for language, durable, _, path in producers:
        acknowledged = lines(path)
        missing = [t for t in acknowledged if t not in queued]
        lost[(language, durable)] = len(missing)
        report(
            f"{FAILOVERS} {name} failovers, {language} pushes, min_replicas_acked={durable}",
            _Row(len(acknowledged), len(missing)),
            failovers=FAILOVERS,
            behind_s=BEHIND_S,
        )
    assert codes == [0] * len(producers), (codes, (tmp_path / "rust-0.log").read_text()[-3000:])
    return lost


def test_durable_pushes_survive_sentinel_failovers(tmp_path):
    with Namespace(tcp_buffer=16384) as ns, Sentinels(ns) as sentinels:
        lost = producers_through_failovers(
            tmp_path,
            ns,
            sentinels.url,
            NS,
            sentinels.fail_over,
            lambda: sentinels.master().client(),
            "Sentinel",
        )
        assert all(lost[(language, 1)] == 0 for language in LANGUAGES), lost


def test_durable_pushes_survive_cluster_failovers(tmp_path):
    """The same on a Redis Cluster (three masters with a replica each):
    the master owning the namespace's slot killed each time."""
    namespace = "{cogworker}"
    with Namespace(tcp_buffer=16384) as ns, ReplicatedCluster(ns, namespace) as cluster:
        lost = producers_through_failovers(
            tmp_path, ns, cluster.url, namespace, cluster.fail_over, cluster.master_client, "Cluster"
        )
        assert all(lost[(language, 1)] == 0 for language in LANGUAGES), lost


class _Row:
    """What `report` prints for a producer: pushes that returned, and how
    many of them the last master does not have."""

    def __init__(self, acknowledged: int, lost: int) -> None:
        self.acknowledged, self.lost = acknowledged, lost

    def row(self) -> dict[str, int]:
        return {"total": self.acknowledged, "lost": self.lost}
