"""The Python layer on a Redis Cluster: only the settings change (a
`redis+cluster://` URL and a hash-tagged namespace)."""

from __future__ import annotations

import random
import socket
import subprocess
import time

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


def test_push_and_run_on_a_cluster(cluster):
    _settings.reset()
    try:
        with pytest.raises(cogworker.ConfigError, match="hash tag"):
            cogworker.Client(redis_url=cluster, namespace="cogworker").enqueue("X")
        cogworker.configure(redis_url=cluster, namespace="{cogworker}", **FAST)
        RAN.clear()
        for i in range(20):
            assert record.enqueue(i) is not None
        worker = cogworker.Worker()
        worker.start()
        try:
            wait_for("all twenty ran", lambda: sorted(RAN) == list(range(20)))
            wait_for("all acknowledged", lambda: cogworker.Api().stats()["processed"] == 20)
        finally:
            worker.stop()
            assert worker.wait(15)
            worker.join()
    finally:
        _settings.reset()
