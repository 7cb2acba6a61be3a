"""A Redis master, one replica and three sentinels on loopback, and the
failover the soak repeats: the replica falls behind (frozen with SIGSTOP,
as a pause or a slow link leaves a replica), the master is killed with
`kill -9`, the replica resumes and the sentinels promote it; the old
master is started again (empty: no persistence) once every sentinel names
the new one, and the sentinels make it the new master's replica.

Run inside a namespace with small TCP buffers (netns.Namespace), what the
frozen replica has not read stays in the master's output buffer and dies
with it, as over a real link; on the root namespace's loopback the kernel
would buffer megabytes for the frozen replica and deliver them after.

Every server is stopped by pid; the data directories are removed on close.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

import redis
from netns import Namespace

from cogworker.testing import free_port

SERVICE = "mymaster"


def wait_for(what: str, condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.05)


class Server:
    """One redis-server (no persistence) on a fixed port, restartable; in
    `ns` when given (reached from here at its address); `extra` arguments
    at every start."""

    def __init__(
        self,
        root: str,
        ns: Namespace | None,
        replica_of: int | None = None,
        extra: tuple[str, ...] = (),
        port: int | None = None,
    ) -> None:
        self.ns = ns
        self.extra = extra
        self.host = ns.ip if ns else "127.0.0.1"
        self.port = port or free_port()
        self.dir = os.path.join(root, f"server-{self.port}")
        os.makedirs(self.dir)
        self.proc: subprocess.Popen[bytes] | None = None
        self.start(replica_of)

    def start(self, replica_of: int | None = None) -> None:
        """Starts (again), as the replica of `replica_of` if given: an empty
        server must never come back as a master, nor be promoted before it
        has synced (priority 0 until `promotable`)."""
        log = open(os.path.join(self.dir, "log"), "ab")
        follow = (
            ["--replicaof", "127.0.0.1", str(replica_of), "--replica-priority", "0"] if replica_of else []
        )
        prefix = self.ns.prefix if self.ns else []
        self.proc = subprocess.Popen(
            [*prefix, "redis-server", "--port", str(self.port), "--bind", *{"127.0.0.1", self.host}]
            + ["--dir", self.dir, "--save", "", "--appendonly", "no", "--protected-mode", "no"]
            + ["--repl-diskless-sync-delay", "0", *self.extra, *follow],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        wait_for(f"redis-server on {self.port}", self.client().ping, 20)

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=30)

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def freeze(self) -> None:
        assert self.proc
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc
        self.proc.send_signal(signal.SIGCONT)

    def has_online_replica(self, port: int | None = None) -> bool:
        """Does this master list a replica (the one on `port`, if given) as
        online? A WAIT counts it from then on."""
        info = self.client().info("replication")
        return any(
            isinstance(v, dict) and v.get("state") == "online" and port in (None, v.get("port"))
            for k, v in info.items()
            if k.startswith("slave")
        )

    def promotable(self) -> None:
        self.client().config_set("replica-priority", 100)

    def role(self) -> str:
        return self.client().info("replication")["role"]


def stop_servers(servers: list[Server], root: str) -> None:
    """kill -9 (a frozen one thawed first), then their directories gone
    (kept with KEEP_FAULT_DIRS=1, to read their logs)."""
    for server in servers:
        if server.proc and server.proc.poll() is None:
            server.thaw()
        server.kill9()
    if not os.environ.get("KEEP_FAULT_DIRS"):
        shutil.rmtree(root, ignore_errors=True)


class Sentinels:
    """The master, its replica and three sentinels (quorum 2), in `ns` when
    given."""

    def __init__(self, ns: Namespace | None = None) -> None:
        self.ns = ns
        self.host = ns.ip if ns else "127.0.0.1"
        self.root = tempfile.mkdtemp(prefix="cw-sentinels-")
        self.servers: list[Server] = []
        self.sentinels: list[subprocess.Popen[bytes]] = []
        self.sentinel_ports: list[int] = []
        try:
            master = Server(self.root, ns)
            self.servers.append(master)
            replica = Server(self.root, ns, replica_of=master.port)
            self.servers.append(replica)
            self._await_linked(master, replica)
            replica.promotable()
            for _ in range(3):
                self._start_sentinel(master.port)
            wait_for(
                "the sentinels see the replica",
                lambda: all(self._sees_replica(p) for p in self.sentinel_ports),
            )
        except BaseException:
            self.close()
            raise

    def _start_sentinel(self, master_port: int) -> None:
        port = free_port()
        conf = os.path.join(self.root, f"sentinel-{port}.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write(
                f"port {port}\nbind {' '.join({'127.0.0.1', self.host})}\nprotected-mode no\n"
                f"dir {self.root}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 2000\n"
                f"sentinel failover-timeout {SERVICE} 5000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
        log = open(os.path.join(self.root, f"sentinel-{port}.log"), "ab")
        self.sentinels.append(
            subprocess.Popen(
                [*(self.ns.prefix if self.ns else []), "redis-server", conf, "--sentinel"],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        )
        self.sentinel_ports.append(port)

    def _ask(self, port: int, *args: str):
        return redis.Redis(host=self.host, port=port, socket_timeout=5).execute_command("SENTINEL", *args)

    def _sees_replica(self, port: int) -> bool:
        # redis-py parses each replica into a dict, its flags into booleans.
        replicas = self._ask(port, "replicas", SERVICE)
        return any(not r.get("is_sdown") and not r.get("is_disconnected") for r in replicas)

    def named_master(self, port: int) -> int:
        return int(self._ask(port, "get-master-addr-by-name", SERVICE)[1])

    @property
    def url(self) -> str:
        """For clients beside the servers (inside the namespace, if any)."""
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    @property
    def harness_url(self) -> str:
        """For cogworker clients in the harness, outside the namespace: the
        master the sentinels name now, at its address there (the sentinels
        answer with 127.0.0.1, which is the namespace's own)."""
        return f"redis://{self.host}:{self.master().port}/0"

    def client(self) -> redis.Redis:
        """A connection to the master the sentinels name now."""
        return self.master().client()

    def master(self) -> Server:
        port = self.named_master(self.sentinel_ports[0])
        return next(s for s in self.servers if s.port == port)

    def replica(self) -> Server:
        master = self.master()
        return next(s for s in self.servers if s is not master)

    @staticmethod
    def _await_linked(master: Server, replica: Server) -> None:
        def linked() -> bool:
            info = replica.client().info("replication")
            return (
                info["role"] == "slave"
                and info.get("master_port") == master.port
                and info.get("master_link_status") == "up"
                and master.has_online_replica(replica.port)
            )

        wait_for(f"replica {replica.port} linked to {master.port}", linked)

    def fail_over(self, behind_s: float) -> None:
        """The replica falls `behind_s` behind, the master is killed with
        -9, the replica resumes and is promoted; then the old master
        starts again, empty, and becomes the new master's replica."""
        old, new = self.master(), self.replica()
        new.freeze()
        time.sleep(behind_s)
        old.kill9()
        new.thaw()
        wait_for(
            f"every sentinel names {new.port}",
            lambda: all(self.named_master(p) == new.port for p in self.sentinel_ports),
        )
        wait_for(f"{new.port} promoted", lambda: new.role() == "master")
        old.start(replica_of=new.port)
        self._await_linked(new, old)
        old.promotable()
        wait_for(
            "the sentinels see the replica", lambda: all(self._sees_replica(p) for p in self.sentinel_ports)
        )

    def close(self) -> None:
        for proc in self.sentinels:
            proc.kill()
            proc.wait()
        stop_servers(self.servers, self.root)

    def __enter__(self) -> Sentinels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
