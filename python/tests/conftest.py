"""Every test that needs Redis gets a private redis-server on a free
loopback port, stopped by pid; settings point at it with short intervals."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import cogworker
from cogworker import _settings, testing
from cogworker.testing import free_port, wait_for  # noqa: F401 - the tests import them from here

HERE = os.path.dirname(os.path.abspath(__file__))


class RedisServer(testing.RedisServer):
    """The packaged private server, plus redis-cli helpers."""

    def cli(self, *args: str) -> str:
        """One command through redis-cli (raw output, stripped)."""
        out = subprocess.run(
            ["redis-cli", "-p", str(self.port), "--no-raw", *args], check=True, capture_output=True, text=True
        )
        return out.stdout.strip().strip('"')

    def cli_raw(self, *args: str) -> str:
        out = subprocess.run(
            ["redis-cli", "-p", str(self.port), *args], check=True, capture_output=True, text=True
        )
        return out.stdout.strip()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


FAST = {
    "heartbeat_interval": 0.5,
    "scheduler_poll_interval": 0.2,
    "orphan_check_interval": 0.5,
    "fetch_idle_max_interval": 0.5,
    "shutdown_timeout": 5.0,
}


@pytest.fixture
def configured(redis_server: RedisServer) -> Iterator[RedisServer]:
    """cogworker configured for the private server, with fast intervals."""
    _settings.reset()
    cogworker.configure(redis_url=redis_server.url, **FAST)
    yield redis_server
    _settings.reset()


@pytest.fixture(autouse=True)
def no_testing_mode() -> Iterator[None]:
    with testing.disable():
        yield


def children_of(parent: int) -> list[int]:
    """Pids of ``parent``'s children that are not zombies, in order."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                state, parent_pid = f.read().rsplit(b")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(parent_pid) == parent and state != b"Z":
            found.append(int(entry))
    return sorted(found)


def _cogworker_children() -> list[int]:
    """Pids of this process's children that run the cogworker CLI."""
    found = []
    for pid in children_of(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if b"cogworker" in command:
            found.append(pid)
    return found


@pytest.fixture(autouse=True)
def no_leftover_workers() -> Iterator[None]:
    """A worker process a test started but did not stop (an assertion failed
    first) is killed, so none outlives its test."""
    yield
    for pid in _cogworker_children():
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


@pytest.fixture
def worker_factory(configured: RedisServer) -> Iterator[Callable[..., cogworker.Worker]]:
    started: list[cogworker.Worker] = []

    def make(**settings: Any) -> cogworker.Worker:
        w = cogworker.Worker(**settings)
        w.start()
        started.append(w)
        return w

    yield make
    for w in started:
        w.stop()
        assert w.wait(15), "worker did not stop"
        w.join()


def worker_env(server: RedisServer, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["COGWORKER_REDIS_URL"] = server.url
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env
