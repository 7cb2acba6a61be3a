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

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from clusters import ReplicatedCluster
from harness import HERE, JOBS, LANGUAGES, NS, ROOT, SOAK, Fleet, push_jobs, report, three_languages
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


Producer = tuple[str, str, subprocess.Popen[bytes], str]

# How a producer pushes: without durability, with the client's setting
# min_replicas_acked = 1, or with each push's own option of that name.
MODES = {
    "plain": {"STREAM_MIN_REPLICAS_ACKED": "0"},
    "client": {"STREAM_MIN_REPLICAS_ACKED": "1", "STREAM_DURABLE_BY": "client"},
    "push": {"STREAM_MIN_REPLICAS_ACKED": "1", "STREAM_DURABLE_BY": "push"},
}
DURABLE = ("client", "push")


def start_producers(tmp_path, ns: Namespace, url: str, namespace: str, modes=tuple(MODES)) -> list[Producer]:
    """A producer per language and per mode of `MODES` in `modes`,
    pushing to `url` (keys under `namespace`), once each has pushed."""
    producers = []
    for language in LANGUAGES:
        for mode in modes:
            path = str(tmp_path / f"{language}-{mode}.txt")
            log = open(tmp_path / f"{language}-{mode}.log", "ab")
            env = {**os.environ, "COGWORKER_REDIS_URL": url, "STREAM_NAMESPACE": namespace, **MODES[mode]}
            proc = subprocess.Popen(
                ns.prefix + producer(language, f"{language}-{mode}-", path),
                env=env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
            producers.append((language, mode, proc, path))
    deadline = time.monotonic() + 60
    while not all(os.path.exists(p) and lines(p) for *_, p in producers):
        assert time.monotonic() < deadline, "a producer pushed nothing in 60 s"
        time.sleep(0.1)
    return producers


def stop_producers(tmp_path, producers: list[Producer]) -> None:
    for *_, proc, _ in producers:
        proc.send_signal(signal.SIGTERM)
    codes = [proc.wait(30) for *_, proc, _ in producers]
    first_log = tmp_path / f"{producers[0][0]}-{producers[0][1]}.log"
    assert codes == [0] * len(producers), (codes, first_log.read_text()[-3000:])


def producers_through_failovers(
    tmp_path, ns: Namespace, url: str, namespace: str, fail_over, master, name: str
) -> dict[tuple[str, str], int]:
    """The nine producers (three languages, three modes) against `url` (keys under `namespace`) while
    `fail_over()` runs FAILOVERS times; then each producer's acknowledged
    pushes looked for on `master()`. Reports a row per producer and
    returns how many each lost."""
    producers = start_producers(tmp_path, ns, url, namespace)
    for _ in range(FAILOVERS):
        time.sleep(1)
        fail_over(BEHIND_S)
    time.sleep(1)
    stop_producers(tmp_path, producers)
    queued = {
        raw.split(b'"args":["', 1)[1].split(b'"', 1)[0].decode()
        for raw in master().lrange(f"{namespace}:queue:default", 0, -1)
    }
    lost = {}
    for language, mode, _, path in producers:
        acknowledged = lines(path)
        missing = [t for t in acknowledged if t not in queued]
        lost[(language, mode)] = len(missing)
        report(
            f"{FAILOVERS} {name} failovers, {language} pushes, {mode}",
            _Row(len(acknowledged), len(missing)),
            failovers=FAILOVERS,
            behind_s=BEHIND_S,
        )
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
        assert all(lost[(language, mode)] == 0 for language in LANGUAGES for mode in DURABLE), lost


def test_durable_pushes_survive_cluster_failovers(tmp_path):
    """The same on a Redis Cluster (three masters with a replica each):
    the master owning the namespace's slot killed each time."""
    namespace = "{cogworker}"
    with Namespace(tcp_buffer=16384) as ns, ReplicatedCluster(ns, namespace) as cluster:
        lost = producers_through_failovers(
            tmp_path, ns, cluster.url, namespace, cluster.fail_over, cluster.master_client, "Cluster"
        )
        assert all(lost[(language, mode)] == 0 for language in LANGUAGES for mode in DURABLE), lost


class _Row:
    """What `report` prints for a producer: pushes that returned, and how
    many of them the last master does not have."""

    def __init__(self, acknowledged: int, lost: int) -> None:
        self.acknowledged, self.lost = acknowledged, lost

    def row(self) -> dict[str, int]:
        return {"total": self.acknowledged, "lost": self.lost}


def workers_and_producers_through(tmp_path, name: str, disturb, kills_of, sentinel: bool = False) -> None:
    """Rust, Python and Ruby workers drain a backlog and what durable
    producers of the three languages push, on a replicated cluster (or,
    `sentinel`, a master and replica behind three sentinels), while
    `disturb(topology, round)` runs FAILOVERS times; no process is
    restarted. Every acknowledged push runs, nothing is left queued or
    held, and the jobs run twice are at most what `kills_of(rounds)` kills
    of the master can lose (None: counted, not bounded)."""
    namespace = NS if sentinel else "{cogworker}"
    results, logdir = str(tmp_path / "results.txt"), tmp_path / "logs"
    logdir.mkdir()
    with contextlib.ExitStack() as stack:
        ns = stack.enter_context(Namespace(tcp_buffer=16384))
        cluster = stack.enter_context(Sentinels(ns) if sentinel else ReplicatedCluster(ns, namespace))
        r = cluster.client()
        runs_file = str(tmp_path / "runs.txt")
        env = {"TEST_NAMESPACE": namespace, "TEST_ORPHAN_THRESHOLD": "5", "TEST_RUNS_FILE": runs_file}
        fleet = Fleet(cluster.url, results, str(logdir), env=env, prefix=ns.prefix)
        three_languages(fleet, r, ns=namespace)
        # A backlog, so that fetches and acknowledgements are under way at
        # every disturbance; then the producers.
        millis = 5 if SOAK else 20
        backlog = push_jobs(cluster.harness_url, JOBS, millis, namespace=namespace, min_replicas_acked=1)
        producers = start_producers(tmp_path, ns, cluster.url, namespace, modes=("client",))
        for round in range(FAILOVERS):
            time.sleep(1)
            disturb(cluster, round)
        time.sleep(1)
        stop_producers(tmp_path, producers)
        acknowledged = backlog + [t for *_, path in producers for t in lines(path)]
        r = cluster.client()  # the master now (a sentinel's may have moved)

        def runs() -> Counter[str]:
            with open(results, encoding="utf-8") as f:
                return Counter(line.strip() for line in f if line.strip())

        deadline = time.monotonic() + 120
        while (ran := runs()) and any(ran[t] == 0 for t in acknowledged) and time.monotonic() < deadline:
            time.sleep(0.2)
        ran = runs()
        lost = [t for t in acknowledged if ran[t] == 0]
        # Nothing left queued or held: an acknowledgement the dead master
        # had not replicated leaves its job in the live worker's record on
        # the new master, which the worker must not keep holding.
        held = lambda: sum(r.hlen(k) for k in r.scan_iter(f"{namespace}:in_progress:*"))  # noqa: E731
        queued = lambda: r.llen(f"{namespace}:queue:default")  # noqa: E731
        deadline = time.monotonic() + 60
        while (held() or queued()) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = (queued(), held())
        twice = sum(1 for t in acknowledged if ran[t] > 1)
        assert fleet.started == len(LANGUAGES), "no worker was restarted"
        codes = fleet.stop_all()
        # A kill loses what the master did while its replica lagged: the
        # fetches (their jobs are queued again) and the acknowledgements
        # (their jobs are requeued from the record) of BEHIND_S, at most
        # every slot's jobs of that long, each way.
        slots = fleet.concurrency * len(LANGUAGES)
        kills = kills_of(FAILOVERS)
        bound = None if kills is None else kills * 2 * slots * (int(BEHIND_S * 1000 / millis) + 1)
        # The cluster's probes (see docs/reliability.md).
        probes = {}
        if not sentinel:
            probes = {"stale_master_writes": cluster.stale_writes, "behind": cluster.behind_at_kill}
            probes["twice"] = twice_by_delivery(runs_file, cluster.killed_at, cluster.lag_windows())
            probes["states"] = cluster.states
        report(
            name,
            _Row(len(acknowledged), len(lost)),
            ran_twice=twice,
            duplicate_bound=bound,
            rounds=FAILOVERS,
            **probes,
        )
        assert lost == [], f"lost {len(lost)}: {lost[:20]}\n{fleet.logs()[-5000:]}"
        assert left == (0, 0), f"queued, held after the drain: {left}"
        assert bound is None or twice <= bound, (twice, bound)
        # On a cluster, every job run twice ran first in a kill's lag
        # window: what the killed master did that its replica had not.
        outside = probes.get("twice", {}).get("first_outside_lag_windows", 0)
        assert outside == 0, probes["twice"]
        assert codes == [0] * len(LANGUAGES), (codes, fleet.logs()[-5000:])


def twice_by_delivery(
    runs_file: str, killed_at: list[float], windows: list[tuple[float, float]]
) -> dict[str, object]:
    """Of the jobs run twice: how many were one delivery run twice (one
    jid) and how many were pushed twice (two jids); when each copy ran, in
    seconds from the kill before it; and how many first copies ran outside
    every kill's lag window (see ReplicatedCluster.lag_windows), which
    nothing explains."""
    copies: dict[str, list[tuple[float, str]]] = {}
    with open(runs_file, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5:
                token, jid, _language, _pid, at = parts
                copies.setdefault(token, []).append((float(at), jid))
    twice = [sorted(runs) for runs in copies.values() if len(runs) > 1]

    def since_kill(at: float) -> str:
        before = [k for k in killed_at if k <= at]
        if not before:
            return "before the first kill"
        k = max(before)
        return f"kill {killed_at.index(k)} +{int(at - k)}s"

    first, second = Counter(), Counter()
    for runs in twice:
        first[since_kill(runs[0][0])] += 1
        second[since_kill(runs[1][0])] += 1
    explained = lambda at: any(start <= at <= end for start, end in windows)  # noqa: E731
    return {
        "one_jid": sum(1 for runs in twice if len({jid for _, jid in runs}) == 1),
        "two_jids": sum(1 for runs in twice if len({jid for _, jid in runs}) > 1),
        "first_copy": dict(first.most_common(8)),
        "second_copy": dict(second.most_common(8)),
        "first_outside_lag_windows": sum(1 for runs in twice if not explained(runs[0][0])),
        "ran_in_lag_windows": sum(1 for runs in copies.values() if explained(runs[0][0])),
        "lag_windows_s": [float(f"{end - start:.2f}") for start, end in windows],
    }


def test_workers_and_producers_follow_cluster_failovers_and_switch_overs(tmp_path):
    """The master of the namespace's slot killed with -9 (its replica
    behind) and, in turn, handed over by `CLUSTER FAILOVER` on its
    replica (which loses nothing)."""

    def disturb(cluster: ReplicatedCluster, round: int) -> None:
        if round % 2 == 0:
            cluster.fail_over(BEHIND_S)
        else:
            cluster.switch_over(cluster.slot)

    kills = (FAILOVERS + 1) // 2
    name = f"{FAILOVERS} Cluster failovers ({kills} kill -9, {FAILOVERS - kills} CLUSTER FAILOVER) under load"
    # The jobs run twice are bounded by when they first ran, not by a
    # count: every one in a kill's lag window (the producers' jobs take
    # 0 ms, so a backlog drains at thousands a second, and a window of
    # 0.4 s loses a thousand fetches; docs/reliability.md, "Workers
    # through Cluster and Sentinel failovers").
    workers_and_producers_through(tmp_path, name, disturb, lambda rounds: None)


def test_workers_and_producers_follow_the_namespace_slot_moving_between_masters(tmp_path):
    """The namespace's slot, with every key of the backlog, the in-progress
    records and the statistics, migrated from master to master while the
    fleet works (ASK and TRYAGAIN followed, scripts retried): nothing lost,
    nothing left held, no job run twice (no master dies)."""
    moved: list[int] = []
    name = f"the namespace's slot moved {FAILOVERS} times between masters under load"
    workers_and_producers_through(
        tmp_path, name, lambda cluster, _: moved.append(cluster.move_slot(cluster.slot)), lambda rounds: 0
    )
    # Each move carried the queue, the records and the statistics, a key at
    # a time, while the fleet worked.
    print(f"keys moved, each move: {moved}", file=sys.stderr)
    assert len(moved) == FAILOVERS and min(moved) >= 5, moved


def test_workers_and_producers_follow_sentinel_failovers(tmp_path):
    """The same behind Sentinel: the master killed with -9 (its replica
    behind) FAILOVERS times, the workers and producers following the
    sentinels to each new master."""
    name = f"{FAILOVERS} Sentinel failovers (kill -9) under load"
    workers_and_producers_through(
        tmp_path,
        name,
        lambda sentinels, _: sentinels.fail_over(BEHIND_S),
        lambda rounds: rounds,
        sentinel=True,
    )
