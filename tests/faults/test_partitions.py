"""Network partitions, not just restarts: Redis in one network namespace,
Rust, Python and Ruby workers in another, and the link between them cut,
cut one way, made slow and lossy by `tc`, or far (a relay that delays
every byte, see netns.py). A watcher
worker in the root namespace reaches Redis over a link that is never cut,
so recovery runs throughout, as the rest of a fleet would.

Small versions run in `scripts/test`; `scripts/soak` (FAULT_SOAK=1) cuts
for 60 s. Skipped, with the reason, where namespaces cannot be made.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from datetime import datetime

import pytest
import redis
from harness import (
    DRAIN_LIMIT,
    JOBS,
    NS,
    SOAK,
    Account,
    Fleet,
    account,
    identity_of,
    pending,
    push_jobs,
    report,
    three_languages,
    wait_drained,
    wait_registered,
)
from netns import Network, unavailable

CUT_S = 60 if SOAK else 10

pytestmark = [
    pytest.mark.timeout(4 * 3600 if SOAK else 600),
    pytest.mark.skipif(bool(unavailable()), reason=f"network namespaces: {unavailable()}"),
]


class Partitioned:
    """A namespaced Redis, one worker per language behind the link, and a
    Rust watcher on the Redis side, all with `threshold` as
    orphan_threshold. The workers reach Redis at `url` (the link's address
    unless given: a relay's, delayed)."""

    def __init__(
        self, net: Network, tmp_path, threshold: float, watcher_slots: int = 2, url: str | None = None
    ) -> None:
        self.net = net
        self.results = str(tmp_path / "results.txt")
        net.start_redis()
        self.r = net.client()
        env = {"TEST_ORPHAN_THRESHOLD": str(threshold)}
        logs = tmp_path / "logs"
        watcher_logs = tmp_path / "watcher-logs"
        logs.mkdir(parents=True)
        watcher_logs.mkdir()
        self.fleet = Fleet(url or net.link_url, self.results, str(logs), env=env, prefix=net.in_work_ns)
        self.watcher = Fleet(
            net.control_url, self.results, str(watcher_logs), concurrency=watcher_slots, env=env
        )
        try:
            three_languages(self.fleet, self.r)
            self.watcher.start("rust")
            wait_registered(self.r, self.watcher)
        except BaseException:
            self.__exit__()
            raise
        self.tokens: list[str] = []

    def push(self, millis: int) -> None:
        """JOBS jobs of `millis` each."""
        self.tokens = push_jobs(self.net.control_url, JOBS, millis=millis)

    def ran(self) -> int:
        """Runs so far (none before the first job's line)."""
        try:
            with open(self.results, encoding="utf-8", errors="replace") as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def await_ran(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.ran() < count:
            assert time.monotonic() < deadline, f"{self.ran()} of {count} jobs ran in {timeout}s"
            time.sleep(0.05)

    def held(self) -> int:
        """Jobs the cut-off processes hold in progress."""
        ids = [identity_of(self.r, w.proc.pid) for w in self.fleet.workers]
        return sum(self.r.hlen(f"{NS}:in_progress:{i}") for i in ids if i)

    def logs(self) -> str:
        return self.fleet.logs() + self.watcher.logs()

    def __enter__(self) -> Partitioned:
        return self

    def __exit__(self, *exc: object) -> None:
        # Whatever happened, no worker outlives the test: one left running
        # would take the next test's jobs (its Redis has the same address).
        for fleet in (self.fleet, self.watcher):
            for worker in list(fleet.workers):
                fleet.kill9(worker)

    def finish(self, name: str, **extra) -> tuple[Account, str]:
        drained = wait_drained(self.r, DRAIN_LIMIT)
        wait_registered(self.r, self.fleet)
        codes = self.fleet.stop_all() + self.watcher.stop_all()
        acc = account(self.r, self.tokens, self.results)
        report(name, acc, drained=drained, **extra)
        logs = self.logs()
        assert drained, f"{pending(self.r)} pending\n{logs[-20000:]}"
        assert acc.lost == [], f"lost {len(acc.lost)}: {acc.lost[:20]}"
        assert all(code == 0 for code in codes), (codes, logs[-20000:])
        return acc, logs


def commands(r: redis.Redis) -> int:
    """Commands Redis has run so far (all clients)."""
    return int(r.info("stats")["total_commands_processed"])


def test_a_partition_shorter_than_orphan_threshold_re_runs_nothing(tmp_path):
    """The link is cut (silently, both ways) for CUT_S during a drain. The
    cut-off workers keep their jobs: the watcher, which sees them stop
    beating, declares none dead before orphan_threshold (CUT_S + 30 s);
    healed, they settle what they hold and drain the rest with the watcher.
    Every job runs exactly once."""
    with Network() as net, Partitioned(net, tmp_path, threshold=CUT_S + 30) as p:
        p.push(millis=5 if SOAK else 20)
        p.await_ran(JOBS // 10)
        net.cut()
        time.sleep(1)
        held_at_cut, ran_at_cut = p.held(), p.ran()
        time.sleep(CUT_S - 1)
        held_at_heal = p.held()
        ran_during = p.ran()
        net.heal()
        acc, logs = p.finish(f"link cut {CUT_S} s (namespaces)", outage_s=CUT_S)
        assert "recovering its jobs" not in logs, "a live process was declared dead"
        assert held_at_cut > 0 and held_at_heal == held_at_cut, (held_at_cut, held_at_heal)
        assert acc.extra_runs == 0
        # The watcher, on the Redis side, worked on while the others were cut off.
        assert ran_during > ran_at_cut, (ran_at_cut, ran_during)


def _recoveries(logs: str) -> dict[str, float]:
    """When the watcher first logged recovering each process's jobs (epoch
    seconds, by identity)."""
    found: dict[str, float] = {}
    for line in logs.splitlines():
        hit = re.match(r"(\S+Z) .*process (\S+) has not beaten for", line)
        if hit:
            at = datetime.fromisoformat(hit.group(1).replace("Z", "+00:00")).timestamp()
            found.setdefault(hit.group(2), at)
    return found


def test_a_partition_longer_than_orphan_threshold_recovers_no_sooner(tmp_path):
    """The link is cut for three times orphan_threshold. The watcher
    recovers the cut-off processes' jobs, but not before they have gone
    orphan_threshold without a beat; healed, the cut-off processes carry
    on (their late acknowledgements change nothing). Nothing is lost; the
    jobs run twice are at most those the cut-off processes held."""
    threshold = 20.0 if SOAK else 4.0
    with Network() as net, Partitioned(net, tmp_path, threshold=threshold) as p:
        p.push(millis=5 if SOAK else 20)
        p.await_ran(JOBS // 10)
        net.cut()
        time.sleep(0.5)
        # What they hold now (their in-flight fetches were answered before
        # the cut, or never arrive), plus one fetch of every slot's worth;
        # and their last beats before the cut (Redis's clock).
        bound = p.held() + p.fleet.concurrency * len(p.fleet.workers)
        ids = [identity_of(p.r, w.proc.pid) for w in p.fleet.workers]
        last_beats = {i: float(p.r.hget(f"{NS}:last_beat", i)) for i in ids if i}
        time.sleep(3 * threshold)
        net.heal()
        acc, logs = p.finish(
            f"link cut {3 * threshold:.0f} s, orphan_threshold {threshold:.0f} s (namespaces)",
            outage_s=3 * threshold,
            duplicate_bound=bound,
        )
        recovered = _recoveries(p.watcher.logs())
        assert set(recovered) == set(last_beats), (recovered, last_beats)
        # Not one was recovered before it had gone orphan_threshold without
        # a beat (the log's clock is in milliseconds).
        waited = {i: at - last_beats[i] for i, at in recovered.items()}
        early = {i: s for i, s in waited.items() if s < threshold - 0.001}
        assert not early, f"recovered sooner than {threshold}s after the last beat: {early}"
        assert acc.duplicated <= bound, (acc.duplicated, bound)


# The faulted runs of the slow-link test: a name, the link's rate and
# queue (tbf), and the one-way delay of a relay in front of Redis (ms).
LINKS = {
    "slow": ("link at 2 Mbit/s, 200 ms queue (namespaces)", ("2mbit", "200ms"), 0),
    "far": ("link 200 ms round trip, at 2 Mbit/s, 200 ms queue (namespaces)", ("2mbit", "200ms"), 100),
}


def round_trip(net: Network, url: str) -> float:
    """The shortest of three PINGs from the workers' namespace to `url`,
    in seconds."""
    probe = (
        "import redis, sys, time\n"
        "r = redis.Redis.from_url(sys.argv[1]); r.ping(); times = []\n"
        "for _ in range(3):\n"
        "    t = time.monotonic(); r.ping(); times.append(time.monotonic() - t)\n"
        "print(min(times))"
    )
    out = subprocess.run([*net.in_work_ns, sys.executable, "-c", probe, url], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


def test_a_slow_lossy_link_degrades_throughput_without_a_retry_storm(tmp_path):
    """Both ways at 2 Mbit/s with a queue of at most 200 ms (what waits
    longer is dropped, so TCP retransmits) for the whole drain, and the same
    with 200 ms more on every round trip (a relay delays each byte 100 ms
    each way: netem's delay, which this kernel lacks): slower, nothing
    lost, nothing run twice, and Redis runs no more commands per job than
    over the healthy link (the control run, the same jobs without the
    fault) plus a margin, so the workers did not storm it."""
    rows = {}
    for name in ("healthy", *LINKS):
        with contextlib.ExitStack() as stack:
            net = stack.enter_context(Network())
            title, fault, delay = LINKS.get(name, ("link healthy (namespaces)", None, 0))
            url = net.delayed(delay) if delay else None
            p = stack.enter_context(Partitioned(net, tmp_path / name, threshold=60, url=url))
            if url:
                assert round_trip(net, url) >= 2 * delay / 1000, "the relay delays each way"
            if fault:
                net.slow(*fault)
            before, started = commands(p.r), time.monotonic()
            p.push(millis=2)
            assert wait_drained(p.r, DRAIN_LIMIT), p.logs()[-20000:]
            seconds = time.monotonic() - started
            per_job = (commands(p.r) - before) / JOBS
            net.heal()
            acc, logs = p.finish(title, jobs_per_s=round(JOBS / seconds), commands_per_job=round(per_job, 2))
            assert acc.extra_runs == 0
            assert "recovering its jobs" not in logs
            rows[name] = (JOBS / seconds, per_job)
    healthy_cost = rows["healthy"][1]
    assert all(cost <= 2 * healthy_cost + 1 for _, cost in rows.values()), rows


def test_half_open_links_during_an_ack_burst(tmp_path):
    """Short jobs acknowledged in bursts; the link drops Redis's replies
    only (the workers' acknowledgements and fetches arrive and are applied,
    their answers never come back) for 8 s, is healed, then drops the
    workers' commands only for 8 s. A reply lost after its script ran is
    reconciled: nothing lost, nothing run twice, nobody declared dead."""
    with Network() as net, Partitioned(net, tmp_path, threshold=60, watcher_slots=1) as p:
        p.push(millis=10)
        p.await_ran(JOBS // 5)
        net.cut_replies()
        time.sleep(8)
        net.heal()
        p.await_ran(JOBS // 2, timeout=120)
        net.cut_requests()
        time.sleep(8)
        net.heal()
        acc, logs = p.finish("half-open link, 8 s each way (namespaces)", outage_s=16)
        assert "recovering its jobs" not in logs, "a live process was declared dead"
        assert acc.extra_runs == 0
