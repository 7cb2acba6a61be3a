"""A Redis Cluster of three masters, each with one replica, and the
failover the soak repeats on the master that owns the namespace's slot:
its replica falls behind (frozen with SIGSTOP), the master is killed with
`kill -9`, the replica resumes and the cluster promotes it; the old master
starts again, empty but with its `nodes.conf`, and rejoins as the new
master's replica. Run in a namespace with small TCP buffers (see
sentinels.py for why). Every server is stopped by pid.
"""

from __future__ import annotations

import subprocess
import tempfile
import time

import redis
import redis.cluster
from netns import Namespace
from sentinels import Server, stop_servers, wait_for

CLUSTER = (
    "--cluster-enabled",
    "yes",
    "--cluster-node-timeout",
    "1000",
    "--cluster-config-file",
    "nodes.conf",
)


class ReplicatedCluster:
    """Six nodes: three masters and a replica of each."""

    def __init__(self, ns: Namespace, namespace: str) -> None:
        self.ns = ns
        self.root = tempfile.mkdtemp(prefix="cw-cluster-")
        self.servers: list[Server] = []
        try:
            # Ports of the namespace's own (a cluster bus is the port + 10000).
            # Each announces the namespace's address: reachable from inside
            # (it is local there) and from the harness outside.
            announce = ("--cluster-announce-ip", ns.ip)
            self.servers = [Server(self.root, ns, extra=CLUSTER + announce, port=7000 + i) for i in range(6)]
            # Per kill: the writes the killed master, started again, ran
            # while it still took itself for a master (see fail_over).
            self.stale_writes: list[int] = []
            # Per kill: how far the replica was behind before it was frozen.
            self.behind_at_kill: list[int] = []
            # Per kill: when (wall clock), and when the replica served the slot.
            self.killed_at: list[float] = []
            self.promoted_at: list[float] = []
            # Per failover or switch-over: what each node of the slot held
            # (see _state), before and after.
            self.states: list[dict[str, object]] = []
            self.namespace = namespace
            # Per kill: from when the replica may have missed the master's
            # writes (it was last read in step, just before its freeze) to
            # its promotion; see lag_windows.
            self.lag_from: list[float] = []
            subprocess.run(
                [*ns.prefix, "redis-cli", "--cluster", "create"]
                + [f"127.0.0.1:{s.port}" for s in self.servers]
                + ["--cluster-replicas", "1", "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            self.slot = self.slot_of(namespace)
            wait_for("every node ok", self._all_ok)
            wait_for("every replica online", self._replicas_online)
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """For clients inside the namespace or outside it."""
        return "redis+cluster://" + ",".join(f"{self.ns.ip}:{s.port}" for s in self.servers)

    @property
    def harness_url(self) -> str:
        """For cogworker clients in the harness (every node announces an
        address reachable from outside the namespace too)."""
        return self.url

    def client(self) -> redis.cluster.RedisCluster:
        """The harness's cluster client."""
        return redis.cluster.RedisCluster(host=self.ns.ip, port=self.servers[0].port, socket_timeout=30)

    def slot_of(self, key: str) -> int:
        return int(self.servers[0].client().execute_command("CLUSTER", "KEYSLOT", key))

    def _nodes(self) -> list[list[str]]:
        """CLUSTER NODES, one row per node, as seen by a live node."""
        for server in self.servers:
            try:
                text = server.client().execute_command("CLUSTER", "NODES")
            except Exception:
                continue
            if isinstance(text, bytes):
                text = text.decode()
            return [line.split() for line in text.strip().splitlines()]
        raise AssertionError("no node answers")

    def _by_port(self, row: list[str]) -> Server:
        port = int(row[1].split("@")[0].rsplit(":", 1)[1])
        return next(s for s in self.servers if s.port == port)

    def _owner(self, slot: int | None = None) -> tuple[Server, Server] | None:
        """The master of `slot` (the namespace's by default) and its live
        replica, as the cluster says now (None while it has neither)."""
        slot = self.slot if slot is None else slot
        rows = self._nodes()
        for row in rows:
            if "master" not in row[2] or "fail" in row[2]:
                continue
            for span in row[8:]:
                low, _, high = span.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    replicas = [r for r in rows if r[3] == row[0] and "fail" not in r[2]]
                    return (self._by_port(row), self._by_port(replicas[0])) if replicas else None
        return None

    def owner(self, slot: int | None = None) -> tuple[Server, Server]:
        """The master of `slot` (the namespace's by default), and its replica."""
        found = self._owner(slot)
        assert found, f"no master with a replica serves slot {slot}"
        return found

    def master_client(self):
        """A plain connection to the master of the namespace's slot."""
        return self.owner()[0].client()

    def _serves(self, server: Server, slot: int) -> bool:
        found = self._owner(slot)
        if found:
            return found[0] is server
        rows = self._nodes()
        return any(self._by_port(r) is server and "master" in r[2] and len(r) > 8 for r in rows)

    def _all_ok(self) -> bool:
        live = [s for s in self.servers if s.proc and s.proc.poll() is None]
        return all(b"cluster_state:ok" in s.client().execute_command("CLUSTER", "INFO") for s in live)

    def _masters(self) -> list[Server]:
        """The live masters that serve slots."""
        rows = self._nodes()
        return [self._by_port(r) for r in rows if "master" in r[2] and "fail" not in r[2] and len(r) > 8]

    def _replicas_online(self) -> bool:
        masters = self._masters()
        return len(masters) == 3 and all(m.has_online_replica() for m in masters)

    def fail_over(self, behind_s: float, slot: int | None = None) -> None:
        """The replica of `slot`'s master (the namespace's by default) falls
        `behind_s` behind, the master is killed with -9, the replica
        resumes and takes over; the old master starts again and rejoins as
        its replica."""
        slot = self.slot if slot is None else slot
        old, new = self.owner(slot)
        self.behind_at_kill.append(self._bytes_behind(old))
        # Slack for the lag the replica had before (`behind`: bytes, some ms).
        self.lag_from.append(time.time() - 0.1)
        before = {"master": self._state(old), "replica": self._state(new)}
        new.freeze()
        time.sleep(behind_s)
        old.kill9()
        self.killed_at.append(time.time())
        new.thaw()
        wait_for(f"{new.port} takes over", lambda: self._serves(new, slot) and self._all_ok())
        self.promoted_at.append(time.time())
        self.states.append({"kill": len(self.killed_at) - 1, **before, "promoted": self._state(new)})
        old.start()
        self.stale_writes.append(self._writes_while_master(old))
        wait_for("every replica online", self._replicas_online)
        wait_for(f"{old.port} is {new.port}'s replica", lambda: self._owner(slot) == (new, old))

    def lag_windows(self) -> list[tuple[float, float]]:
        """Per kill, when what the killed master did may be missing from
        its promoted replica: from the replica's last read in step (before
        it was frozen behind) to its promotion. Fetches and
        acknowledgements the master made then are lost with it, so the
        jobs they took or settled run again; nothing else does."""
        return list(zip(self.lag_from, self.promoted_at))

    def _state(self, server: Server) -> dict[str, object]:
        """What `server` holds of the namespace now: its role and
        replication offset, whom it replicates and how, the default
        queue's length and the jobs held in progress (read on one
        connection, READONLY on a replica)."""
        client = redis.Redis(
            host=server.host, port=server.port, socket_timeout=5, single_connection_client=True
        )
        try:
            info = client.info("replication")
            if info.get("role") == "slave":
                client.execute_command("READONLY")
            held = sum(client.hlen(k) for k in client.scan_iter(f"{self.namespace}:in_progress:*"))
            at = f"{time.time():.3f}"
            return {
                "port": server.port,
                "role": info.get("role"),
                "offset": info.get("master_repl_offset"),
                "link": info.get("master_link_status"),
                "of": info.get("master_port"),
                "replicas": info.get("connected_slaves"),
                "queued": client.llen(f"{self.namespace}:queue:default"),
                "held": held,
                "at": at,
            }
        except redis.exceptions.RedisError as e:
            return {"port": server.port, "error": str(e)}
        finally:
            client.close()

    @staticmethod
    def _bytes_behind(master: Server) -> int:
        """How far (bytes of the replication stream) `master`'s replica is
        behind it now."""
        info = master.client().info("replication")
        replica = info.get("slave0", {})
        return int(info.get("master_repl_offset", 0)) - int(replica.get("offset", 0))

    @staticmethod
    def _writes_while_master(server: Server, limit: float = 30.0) -> int:
        """How many scripts and hash, list and key writes `server`, just
        started again with its `nodes.conf`, ran while it still took itself
        for a master (before gossip made it a replica, which drops its
        data): writes clients sent to a stale master are lost."""
        written = 0
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                client = server.client()
                stats = client.info("commandstats")
                role = client.info("replication").get("role")
            except redis.exceptions.ConnectionError:
                time.sleep(0.01)
                continue
            if role != "master":
                return written
            names = ("evalsha", "eval", "hset", "hdel", "lpush", "rpush", "del", "incrby")
            written = sum(stats.get(f"cmdstat_{n}", {}).get("calls", 0) for n in names)
            time.sleep(0.01)
        return written

    def switch_over(self, slot: int) -> None:
        """`CLUSTER FAILOVER` on the replica of `slot`'s master: the two
        swap roles without a loss (the master stops writes until its
        replica has caught up)."""
        old, new = self.owner(slot)
        before = {"master": self._state(old), "replica": self._state(new)}
        new.client().execute_command("CLUSTER", "FAILOVER")
        wait_for(f"{new.port} takes over", lambda: self._owner(slot) == (new, old) and self._all_ok())
        wait_for("every replica online", self._replicas_online)
        after = {"new master": self._state(new), "new replica": self._state(old)}
        self.states.append({"switch_over_at": round(time.time(), 3), **before, **after})

    def _id(self, server: Server) -> str:
        value = server.client().execute_command("CLUSTER", "MYID")
        return value.decode() if isinstance(value, bytes) else value

    def move_slot(self, slot: int, batch: int = 1, pause: float = 0.05) -> int:
        """Migrates `slot` from its master to another master while clients
        use it, as `redis-cli --cluster reshard` does: the target imports,
        the source migrates (keys it no longer has answer with ASK, scripts
        whose keys are split answer TRYAGAIN), keys move `batch` at a time
        with MIGRATE, `pause` apart (so that traffic meets a half-moved
        slot), then every master is told the slot's new owner. Returns how
        many keys moved."""
        source, _ = self.owner(slot)
        masters = self._masters()
        target = next(m for m in masters if m is not source)
        source_id, target_id = self._id(source), self._id(target)
        target.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        source.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        moved = 0
        while keys := source.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
            source.client().execute_command("MIGRATE", self.ns.ip, target.port, "", 0, 5000, "KEYS", *keys)
            moved += len(keys)
            time.sleep(pause)
        for master in masters:
            master.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        wait_for(f"slot {slot} on {target.port}", lambda: self._serves(target, slot) and self._all_ok())
        return moved

    def close(self) -> None:
        stop_servers(self.servers, self.root)

    def __enter__(self) -> ReplicatedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
