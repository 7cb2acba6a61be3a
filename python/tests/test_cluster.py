"""The Python layer on a Redis Cluster: only the settings change (a
`redis+cluster://` URL and a hash-tagged namespace)."""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from conftest import FAST, RedisServer, wait_for

import cogworker
from cogworker import _settings

RAN: list[int] = []


@cogworker.job(name="Cluster.Record")
def record(value: int) -> None:
    RAN.append(value)


def cluster_port() -> int:
    """A free port at most 55535 whose cluster bus port (+10000) is free too."""
    while True:
        port = random.randint(20000, 50000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue


@pytest.fixture
def cluster():
    nodes = [
        RedisServer("--cluster-enabled", "yes", "--cluster-node-timeout", "2000", port=cluster_port())
        for _ in range(3)
    ]
    try:
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *[f"127.0.0.1:{n.port}" for n in nodes],
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 30
        while not all("cluster_state:ok" in n.cli_raw("CLUSTER", "INFO") for n in nodes):
            assert time.monotonic() < deadline, "the cluster did not become ok"
            time.sleep(0.1)
        yield "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in nodes)
    finally:
        for n in nodes:
            n.close()


@contextlib.contextmanager
def running_worker() -> Iterator[cogworker.Worker]:
    """A worker with the configured settings, stopped on the way out."""
    worker = cogworker.Worker()
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        assert worker.wait(15)
        worker.join()


def test_push_and_run_on_a_cluster(cluster):
    _settings.reset()
    try:
        with pytest.raises(cogworker.ConfigError, match="hash tag"):
            cogworker.Client(redis_url=cluster, namespace="cogworker").enqueue("X")
        cogworker.configure(redis_url=cluster, namespace="{cogworker}", **FAST)
        RAN.clear()
        for i in range(20):
            assert record.enqueue(i) is not None
        with running_worker():
            wait_for("all twenty ran", lambda: sorted(RAN) == list(range(20)))
            wait_for("all acknowledged", lambda: cogworker.Api().stats()["processed"] == 20)
    finally:
        _settings.reset()


FLAKY: list[int] = []


@cogworker.job(name="Cluster.FailsOnce", retry_in=lambda count, error: 0.2)
def fails_once(value: int) -> None:
    FLAKY.append(value)
    if FLAKY.count(value) == 1:
        raise RuntimeError("the first attempt fails")


def test_shard_by_queue_spreads_queues_and_runs_their_jobs(cluster):
    """With ``shard_by_queue`` each queue's keys carry their own hash tag:
    jobs on two queues run, a scheduled one and a retried one cross from the
    namespace's slot to their queue's."""
    _settings.reset()
    try:
        settings = {"shard_by_queue": True, "queues": ["mail", "billing"], **FAST}
        cogworker.configure(redis_url=cluster, namespace="{cogworker}", **settings)
        RAN.clear()
        FLAKY.clear()
        for i in range(10):
            assert record.options(queue="mail" if i % 2 else "billing").enqueue(i) is not None
        assert record.options(queue="mail").enqueue_in(0.3, 10) is not None
        assert fails_once.options(queue="billing").enqueue(1) is not None
        with running_worker():
            wait_for("all eleven ran", lambda: sorted(RAN) == list(range(11)))
            wait_for("the failed job ran again", lambda: FLAKY == [1, 1])
            wait_for("all acknowledged", lambda: cogworker.Api().stats()["processed"] == 12)
            queues = {q["name"] for q in cogworker.Api().queues()}
            assert {"mail", "billing"} <= queues
    finally:
        _settings.reset()
