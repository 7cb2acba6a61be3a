"""Real network faults for the fault suite: Redis in one network namespace,
worker processes in another, joined by a veth pair the test can cut, make
lossy or cut one way; the harness reaches Redis over a second pair that is
never touched.

    root namespace (the harness, a watcher worker)
        ctl0 10.213.N.1 ──── ctl1 10.213.N.2      namespace cw-redis-<pid>
                                                  (redis-server, bound to both)
                             link0 10.213.N.5 ──── link1 10.213.N.6
                                                  namespace cw-work-<pid>
                                                  (the workers)

Faults are `tc` queueing disciplines on the link's ends. This kernel has no
`netem` (nor `prio`, classifiers or actions), so a fault is a token bucket
(`tbf`): one whose bucket is smaller than any packet passes nothing and
drops silently (a cut, as a partition does: no reset, no unreachable
error); on one end only, the link is cut one way (half-open); a slow rate
with a short queue drops what overflows it (congestion loss, real TCP
retransmission) and queues the rest (latency). A fixed delay, which
only `netem` makes, comes from a relay instead (`delayed`,
delay_proxy.py): the workers then reach Redis through a process in its
namespace that holds every byte a fixed time each way.

Traffic goes only to the addresses assigned here, on interfaces created
here; `close` removes both namespaces (and with them the link) and the
control pair, whatever state the test left.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import redis

# A token bucket of one byte: every packet is larger, so each is dropped.
DROP = ("tbf", "rate", "8bit", "burst", "1", "limit", "1")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@functools.cache
def unavailable() -> str | None:
    """Why namespaces cannot be used here (None: they can); probed once."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "iproute2 (ip, tc) is not installed"
    name = f"cw-probe-{os.getpid()}"
    made = _ip("netns", "add", name, check=False)
    if made.returncode != 0:
        return f"`ip netns add` refused: {made.stderr.strip()}"
    try:
        _ip("-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
        tbf = subprocess.run(
            ["tc", "-n", name, "qdisc", "add", "dev", "p0", "root", *DROP], capture_output=True, text=True
        )
        if tbf.returncode != 0:
            return f"tc's tbf is not available: {tbf.stderr.strip()}"
    finally:
        _ip("netns", "del", name, check=False)
    return None


class Namespace:
    """One network namespace joined to the root one by a control pair
    (10.<subnet>.N.1 outside, `ip` = 10.<subnet>.N.2 inside). With
    `tcp_buffer`, every socket inside has TCP buffers of that many bytes
    (the kernel's defaults let a stalled reader's peer write megabytes into
    its buffers; small ones keep unsent data in the writing process, as a
    slow or long link does). Servers inside listen on 127.0.0.1 for each
    other and on `ip` for the harness."""

    def __init__(self, tcp_buffer: int | None = None, name: str = "ns", subnet: int = 214) -> None:
        pid = os.getpid()
        self.name = f"cw-{name}-{pid}"
        self._ctl = f"cw{name[:2]}{pid % 100000}"
        third = 1 + pid % 250
        self._host_ip, self.ip = f"10.{subnet}.{third}.1", f"10.{subnet}.{third}.2"
        try:
            _ip("netns", "add", self.name)
            _ip("link", "add", self._ctl, "type", "veth", "peer", "name", "ctl1", "netns", self.name)
            _ip("addr", "add", f"{self._host_ip}/30", "dev", self._ctl)
            _ip("-n", self.name, "addr", "add", f"{self.ip}/30", "dev", "ctl1")
            _ip("link", "set", self._ctl, "up")
            for dev in ("ctl1", "lo"):
                _ip("-n", self.name, "link", "set", dev, "up")
            if tcp_buffer is not None:
                sizes = f"{tcp_buffer} {tcp_buffer} {tcp_buffer}"
                subprocess.run(
                    [
                        *self.prefix,
                        "sysctl",
                        "-q",
                        "-w",
                        f"net.ipv4.tcp_rmem={sizes}",
                        f"net.ipv4.tcp_wmem={sizes}",
                    ],
                    check=True,
                )
        except BaseException:
            self.close()
            raise

    @property
    def prefix(self) -> list[str]:
        """What runs a command inside."""
        return ["ip", "netns", "exec", self.name]

    def close(self) -> None:
        _end_namespace(self.name)
        _ip("link", "del", self._ctl, check=False)

    def __enter__(self) -> Namespace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _end_namespace(name: str) -> None:
    """Kills what still runs in namespace `name` (it would keep it alive),
    then removes it."""
    for pid in _ip("netns", "pids", name, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("netns", "del", name, check=False)


class Network:
    """The two namespaces, the link between them, and Redis inside."""

    PORT = 6379

    def __init__(self) -> None:
        third = 1 + os.getpid() % 250
        self.dir = tempfile.mkdtemp(prefix="cw-netns-redis-")
        self._redis: subprocess.Popen[bytes] | None = None
        self._relay: subprocess.Popen[bytes] | None = None
        self._faulted: list[tuple[str, str]] = []
        self._redis_side: Namespace | None = None
        self.work_ns = f"cw-work-{os.getpid()}"
        self.link_ip = f"10.213.{third}.5"
        self._worker_ip = f"10.213.{third}.6"
        try:
            # Redis's namespace, which the harness reaches over its control
            # pair; then the workers', and the link between the two.
            self._redis_side = Namespace(name="redis", subnet=213)
            self.redis_ns, self.control_ip = self._redis_side.name, self._redis_side.ip
            r, w = self.redis_ns, self.work_ns
            _ip("netns", "add", w)
            _ip("-n", r, "link", "add", "link0", "type", "veth", "peer", "name", "link1", "netns", w)
            _ip("-n", r, "addr", "add", f"{self.link_ip}/30", "dev", "link0")
            _ip("-n", w, "addr", "add", f"{self._worker_ip}/30", "dev", "link1")
            for ns, dev in ((r, "link0"), (w, "link1"), (w, "lo")):
                _ip("-n", ns, "link", "set", dev, "up")
        except BaseException:
            self.close()
            raise

    # Redis ------------------------------------------------------------

    def start_redis(self) -> None:
        """redis-server inside its namespace, on both of its addresses, AOF
        fsynced on every write (as the other fault tests run it)."""
        log = open(os.path.join(self.dir, "redis.log"), "ab")
        self._redis = subprocess.Popen(
            [
                "ip", "netns", "exec", self.redis_ns, "redis-server",
                "--bind", self.control_ip, self.link_ip, "--port", str(self.PORT),
                "--dir", self.dir, "--appendonly", "yes", "--appendfsync", "always",
                "--save", "", "--protected-mode", "no",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.client().ping():
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline or self._redis.poll() is not None:
                raise RuntimeError(f"redis-server did not start in {self.redis_ns}")
            time.sleep(0.05)

    def client(self) -> redis.Redis:
        """The harness's connection, over the control pair (never faulted)."""
        return redis.Redis(host=self.control_ip, port=self.PORT, socket_timeout=30)

    @property
    def control_url(self) -> str:
        return f"redis://{self.control_ip}:{self.PORT}/0"

    @property
    def link_url(self) -> str:
        """What the workers in the work namespace connect to."""
        return f"redis://{self.link_ip}:{self.PORT}/0"

    @property
    def in_work_ns(self) -> list[str]:
        """The prefix that runs a command in the workers' namespace."""
        return ["ip", "netns", "exec", self.work_ns]

    # Faults -----------------------------------------------------------

    def _qdisc(self, ns: str, dev: str, *spec: str) -> None:
        subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *spec], check=True)
        if (ns, dev) not in self._faulted:
            self._faulted.append((ns, dev))

    def _drop(self, ns: str, dev: str) -> None:
        self._qdisc(ns, dev, *DROP)

    def cut(self) -> None:
        """Nothing crosses the link, either way (a silent partition)."""
        self._drop(self.redis_ns, "link0")
        self._drop(self.work_ns, "link1")

    def cut_replies(self) -> None:
        """Redis's replies are dropped; the workers' commands still arrive."""
        self._drop(self.redis_ns, "link0")

    def cut_requests(self) -> None:
        """The workers' commands are dropped; nothing is sent back."""
        self._drop(self.work_ns, "link1")

    def slow(self, rate: str, latency: str) -> None:
        """Both ways: `rate` (as tc says it, "2mbit") with a queue of at most
        `latency`; packets that would wait longer are dropped."""
        for ns, dev in ((self.redis_ns, "link0"), (self.work_ns, "link1")):
            self._qdisc(ns, dev, "tbf", "rate", rate, "burst", "4kb", "latency", latency)

    def delayed(self, one_way_ms: int) -> str:
        """The URL of Redis through a relay in its namespace that delays
        every byte `one_way_ms` each way (a round trip 2 x `one_way_ms`
        longer), for the workers' side of the link; started and ready."""
        port = self.PORT + 1
        relay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delay_proxy.py")
        self._relay = subprocess.Popen(
            [
                "ip", "netns", "exec", self.redis_ns, sys.executable, relay,
                "0.0.0.0", str(port), self.link_ip, str(self.PORT), str(one_way_ms),
            ],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection((self.control_ip, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and self._relay.poll() is None, "the relay did not start"
                time.sleep(0.05)
        return f"redis://{self.link_ip}:{port}/0"

    def heal(self) -> None:
        for ns, dev in self._faulted:
            subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
        self._faulted.clear()

    # Teardown ---------------------------------------------------------

    def close(self) -> None:
        for proc in (self._redis, self._relay):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        _end_namespace(self.work_ns)
        if self._redis_side is not None:
            self._redis_side.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
