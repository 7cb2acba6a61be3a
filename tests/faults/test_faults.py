"""The fault suite: numbered jobs worked by Rust, Python and Ruby worker
processes while things break, then every job accounted for. Pass: none
lost; a job runs more than once only if its process was killed while
holding it (counted beside that bound).

Small versions run in `scripts/test`; `scripts/soak` runs the long ones
(FAULT_SOAK=1: 100,000 jobs) and writes the figures for
docs/reliability.md.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest
import redis
from harness import (
    DRAIN_LIMIT,
    JOBS,
    NS,
    ROOT,
    SOAK,
    BlackholeProxy,
    Fleet,
    Redis,
    account,
    chaos,
    kill_until_drained,
    pending,
    push_jobs,
    push_mixed_jobs,
    report,
    three_languages,
    wait_drained,
    wait_registered,
)

import cogworker

pytestmark = pytest.mark.timeout(4 * 3600 if SOAK else 600)


@pytest.fixture
def paths(tmp_path):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    return str(tmp_path / "results.txt"), str(logdir)


def fleet_with_jobs(
    server: Redis, paths: tuple[str, str], threshold: str, millis: int, url: str | None = None
) -> tuple[redis.Redis, Fleet, list[str]]:
    """One worker per language (orphan_threshold `threshold` s) against
    `url` (default: the server itself), and the jobs pushed."""
    results, logdir = paths
    r = server.client()
    fleet = Fleet(url or server.url, results, logdir, env={"TEST_ORPHAN_THRESHOLD": threshold})
    three_languages(fleet, r)
    return r, fleet, push_jobs(server.url, JOBS, millis=millis)


def finish(fleet: Fleet, r: redis.Redis, tokens: list[str], results: str, name: str, **extra) -> tuple:
    drained = wait_drained(r, DRAIN_LIMIT)
    # A replacement still booting has no TERM handler yet: let it register.
    wait_registered(r, fleet)
    codes = fleet.stop_all()
    acc = account(r, tokens, results)
    report(name, acc, drained=drained, **extra)
    assert drained, fleet.logs()[-20000:]
    assert acc.lost == [], f"lost {len(acc.lost)}: {acc.lost[:20]}"
    assert all(code == 0 for code in codes), codes
    return acc, codes


def test_kill_9_chaos_across_three_languages(paths):
    results = paths[0]
    with Redis() as server:
        r, fleet, tokens = fleet_with_jobs(server, paths, "3", millis=5 if SOAK else 20)
        kills, bound = 0, 0
        rng = random.Random(7)
        deadline = time.monotonic() + DRAIN_LIMIT
        # Kill until the queue is empty (each round: one kill every 2 s, 10 s).
        while r.llen(f"{NS}:queue:default") > 0 and time.monotonic() < deadline:
            k, b = chaos(fleet, r, seconds=10, every=2, rng=rng)
            kills, bound = kills + k, bound + b
        acc, _ = finish(fleet, r, tokens, results, "kill -9 chaos", kills=kills, duplicate_bound=bound)
        assert kills >= 3
        assert acc.extra_runs <= bound, (acc.extra_runs, bound)


def test_kill_9_chaos_sharded_by_queue_with_retries_and_schedule(paths, tmp_path):
    """The chaos above with `shard_by_queue`, and jobs that cross between
    the queue's slot and the namespace's while processes die: a fifth fail
    their first attempt (filed into retry from the queue's slot, then handed
    back through the outbox), a seventh are scheduled (handed over from the
    schedule). Nothing lost; duplicates within the killed processes' bound."""
    results, logdir = paths
    fail_dir = tmp_path / "failed"
    fail_dir.mkdir()
    with Redis() as server:
        r = server.client()
        env = {"TEST_ORPHAN_THRESHOLD": "3", "TEST_SHARD_BY_QUEUE": "1", "TEST_FAIL_DIR": str(fail_dir)}
        fleet = Fleet(server.url, results, logdir, env=env)
        three_languages(fleet, r)
        # Pushed while the processes are killed, so kills meet every path.
        pushed: list[list[str]] = []
        pusher = threading.Thread(
            target=lambda: pushed.append(push_mixed_jobs(server.url, JOBS, millis=5 if SOAK else 50))
        )
        pusher.start()
        kills, bound = 0, 0
        rng = random.Random(11)
        deadline = time.monotonic() + DRAIN_LIMIT
        while (pusher.is_alive() or pending(r) > 0) and time.monotonic() < deadline:
            k, b = chaos(fleet, r, seconds=10, every=2, rng=rng)
            kills, bound = kills + k, bound + b
        pusher.join()
        tokens = pushed[0]
        name = "kill -9 chaos, shard_by_queue, retries + schedule"
        acc, _ = finish(fleet, r, tokens, results, name, kills=kills, duplicate_bound=bound)
        assert kills >= 3
        assert acc.dead == 0
        assert acc.extra_runs <= bound, (acc.extra_runs, bound)
        assert len(list(fail_dir.iterdir())) == len(range(0, JOBS, 5)), "every fail_once job failed once"


def test_redis_restarted_twice_with_aof(paths):
    results = paths[0]
    with Redis() as server:
        r, fleet, tokens = fleet_with_jobs(server, paths, "60", millis=2 if SOAK else 5)
        restarts = 0
        for pause in (2, 3):
            time.sleep(pause * (10 if SOAK else 1))
            server.restart()
            restarts += 1
        r = server.client()
        acc, _ = finish(fleet, r, tokens, results, "Redis kill -9 + restart (AOF) x2", restarts=restarts)
        assert acc.extra_runs == 0


def test_redis_unreachable_for_20s_half_open(paths):
    """A proxy blackholes all traffic for 20 s (connections hang, nothing is
    closed). With orphan_threshold longer than the outage nobody is declared
    dead; afterwards every worker reconnects and drains the backlog."""
    results = paths[0]
    with Redis() as server:
        proxy = BlackholeProxy(server.port)
        r, fleet, tokens = fleet_with_jobs(server, paths, "60", millis=5 if SOAK else 20, url=proxy.url)
        time.sleep(2)
        proxy.blackhole()
        time.sleep(20)
        proxy.heal()
        acc, _ = finish(fleet, r, tokens, results, "Redis unreachable 20 s (half-open)", outage_s=20)
        logs = fleet.logs()
        assert "recovering its jobs" not in logs, "a live process was declared dead"
        assert acc.extra_runs == 0


def test_script_flush_and_client_kill_mid_run(paths):
    results = paths[0]
    with Redis() as server:
        r, fleet, tokens = fleet_with_jobs(server, paths, "60", millis=2 if SOAK else 5)
        flushes = kills = 0
        deadline = time.monotonic() + (120 if SOAK else 6)
        while time.monotonic() < deadline and r.llen(f"{NS}:queue:default") > 0:
            admin = server.client()
            admin.script_flush()
            flushes += 1
            time.sleep(0.1)
            admin.execute_command("CLIENT", "KILL", "TYPE", "normal")
            kills += 1
            time.sleep(0.2)
        r = server.client()
        acc, _ = finish(
            fleet,
            r,
            tokens,
            results,
            "SCRIPT FLUSH + CLIENT KILL TYPE normal",
            flushes=flushes,
            client_kills=kills,
        )
        assert flushes >= 3
        assert acc.extra_runs == 0


# Batches under chaos (issue #31): this many batches of this many jobs, and
# this many 3-step workflows (FAULT_SOAK: the 100 x 1,000).
BATCHES, BATCH_JOBS = (100, 1000) if SOAK else (10, 300)
WORKFLOWS = 100 if SOAK else 20


def test_batches_and_workflows_under_kill_9_a_redis_restart_and_a_script_flush(paths, tmp_path):
    """Batches of Account jobs (every fifth failing its first attempt) and
    3-step workflows, worked by Rust, Python and Ruby processes while they
    are killed with -9, Redis is restarted (AOF) and its scripts flushed.
    Every batch and workflow succeeds; each callback (complete and success
    of each batch, success of each workflow) was pushed exactly once (onto
    a queue no worker takes, to count them there: a run after a kill may
    repeat a job, a push may not); each batch counted each of its jobs
    once; no job lost."""
    results, logdir = paths
    fail_dir = tmp_path / "failed"
    fail_dir.mkdir()
    with Redis() as server:
        r = server.client()
        env = {"TEST_ORPHAN_THRESHOLD": "3", "TEST_FAIL_DIR": str(fail_dir)}
        fleet = Fleet(server.url, results, logdir, env=env)
        three_languages(fleet, r)
        api = cogworker.Api(server.url)
        client = cogworker.Client(redis_url=server.url)
        tokens: list[str] = []
        bids: list[str] = []
        millis = 5 if SOAK else 20
        for b in range(BATCHES):
            batch = cogworker.Batch(f"chaos {b}", api=api)
            batch.on("complete", "BatchCallback", queue="callbacks")
            batch.on("success", "BatchCallback", queue="callbacks")
            jobs = [f"b{b:03d}-{i:04d}" for i in range(BATCH_JOBS)]
            with batch:
                client.enqueue_many("Account", [(t, millis, i % 5 == 0) for i, t in enumerate(jobs)])
            tokens += jobs
            bids.append(str(batch.bid))
        workflows = []
        for w in range(WORKFLOWS):
            steps = [f"w{w:03d}-{n}" for n in range(3)]
            flow = cogworker.Workflow(
                *(cogworker.step("Account", t, millis) for t in steps), description=f"chain {w}", api=api
            ).on("success", "BatchCallback", queue="callbacks")
            workflows.append(flow.push().id)
            tokens += steps
        kills, bound, rng = 0, 0, random.Random(31)
        k, b = chaos(fleet, r, seconds=4, every=1, rng=rng)
        kills, bound = kills + k, bound + b
        r.script_flush()
        k, b = chaos(fleet, r, seconds=2, every=1, rng=rng)
        kills, bound = kills + k, bound + b
        # A replacement still booting would find Redis gone and exit.
        wait_registered(r, fleet)
        server.restart()
        r = server.client()
        # The old connection broke with the restart: its next call would fail once.
        api = cogworker.Api(server.url)
        deadline = time.monotonic() + DRAIN_LIMIT
        while pending(r) > 0 and time.monotonic() < deadline:
            k, b = chaos(fleet, r, seconds=4, every=2, rng=rng)
            kills, bound = kills + k, bound + b

        def states() -> list[str]:
            return [(api.batch(bid) or {}).get("state", "gone") for bid in bids + workflows]

        limit = time.monotonic() + 60
        while any(state != "success" for state in states()) and time.monotonic() < limit:
            time.sleep(0.2)
        time.sleep(1)  # a callback handed over twice would be queued by now
        acc, _ = finish(
            fleet,
            r,
            tokens,
            results,
            "batches + workflows: kill -9, Redis restart, SCRIPT FLUSH",
            kills=kills,
            restarts=1,
            flushes=1,
            duplicate_bound=bound,
        )
        assert states() == ["success"] * len(bids + workflows), fleet.logs()[-20000:]
        pushed = {(event, bid): 0 for bid in bids for event in ("complete", "success")}
        pushed.update({("success", bid): 0 for bid in workflows})
        for raw in r.lrange(f"{NS}:queue:callbacks", 0, -1):
            status = json.loads(raw)["args"][0]
            key = (status["event"], status["bid"])
            pushed[key] = pushed.get(key, 0) + 1
        assert [key for key, n in pushed.items() if n != 1] == [], "each callback pushed exactly once"
        for bid in bids:
            status = api.batch(bid)
            assert (status["total"], status["pending"], status["failures"]) == (BATCH_JOBS, 0, [])
        assert kills >= 3
        assert acc.dead == 0
        assert acc.extra_runs <= bound, (acc.extra_runs, bound)


@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_eviction_policy_is_warned_about_at_start(paths, policy):
    results, logdir = paths
    with Redis("--maxmemory", "256mb", "--maxmemory-policy", policy) as server:
        r = server.client()
        fleet = Fleet(server.url, results, logdir)
        three_languages(fleet, r)
        assert all(code == 0 for code in fleet.stop_all())
        for name in os.listdir(logdir):
            with open(os.path.join(logdir, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            warned = f"maxmemory-policy is {policy}" in text
            assert warned == (policy != "noeviction"), f"{name}:\n{text}"


def spans(results: str) -> list[tuple[str, str, float, int]]:
    """The `start`/`end` lines `Span` jobs wrote: (what, token, time, pid)."""
    if not os.path.exists(results):
        return []
    with open(results, encoding="utf-8") as f:
        # A last line still being written (no newline yet) waits for the next read.
        rows = [line.split() for line in f if line.endswith("\n") and line.strip()]
    return [(what, token, float(at), int(pid)) for what, token, at, pid in rows]


def most_at_once(rows: list[tuple[str, str, float, int]], killed: dict[int, float]) -> int:
    """The most `Span` bodies running at one time. A body of a process
    killed with -9 ends when the process died."""
    open_bodies: dict[tuple[str, int], float] = {}
    events: list[tuple[float, int]] = []
    for what, token, at, pid in rows:
        if what == "start":
            open_bodies[(token, pid)] = at
            events.append((at, 1))
        else:
            open_bodies.pop((token, pid), None)
            events.append((at, -1))
    for (_, pid), _started in open_bodies.items():
        assert pid in killed, f"a body of live process {pid} never ended"
        events.append((killed[pid], -1))
    running, most = 0, 0
    # At one instant an end comes before a start: the end freed the place.
    for _, change in sorted(events):
        running += change
        most = max(most, running)
    return most


def start_limited_fleet(fleet: Fleet, r: redis.Redis, limiter: str) -> None:
    """The Rust worker first (it defines `limiter`, from TEST_LIMITER), then
    the Python and Ruby workers, all registered."""
    fleet.start("rust")
    deadline = time.monotonic() + 60
    while not r.hget(f"{NS}:limiter:{limiter}", "kind"):
        assert time.monotonic() < deadline, fleet.logs()[-5000:]
        time.sleep(0.1)
    fleet.start("python")
    fleet.start("ruby")
    wait_registered(r, fleet)


def test_a_fleet_wide_concurrent_limit_holds_through_kill_9(paths):
    """A concurrent limit of 5, defined by the Rust worker, on jobs that a
    Python, a Ruby and a Rust worker (4 slots each) run: never 6 bodies at
    once, also while the Python worker is killed with -9 holding places;
    its places come back within the lease TTL (2 s), its jobs are
    recovered, none is lost, and no lease is left over."""
    results, logdir = paths
    with Redis() as server:
        r = server.client()
        env = {"TEST_ORPHAN_THRESHOLD": "3", "TEST_LIMITER": "erp:concurrent:5:2"}
        fleet = Fleet(server.url, results, logdir, env=env)
        codes: list[int] = []
        try:
            start_limited_fleet(fleet, r, "erp")
            tokens = [f"s{i:03d}" for i in range(90)]
            client = cogworker.Client(redis_url=server.url)
            client.push_bulk([{"class": "Span", "args": [t, 250], "limits": ["erp"]} for t in tokens])
            python = next(w for w in fleet.workers if w.language == "python")
            # Killed once it runs jobs (holds places).
            deadline = time.monotonic() + 30
            while not any(pid == python.proc.pid for _, _, _, pid in spans(results)):
                assert time.monotonic() < deadline, fleet.logs()[-5000:]
                time.sleep(0.02)
            fleet.kill9(python)
            killed = {python.proc.pid: time.time()}
            assert wait_drained(r, 120), fleet.logs()[-20000:]
            codes += fleet.stop_all()
            rows = spans(results)
            ended = {token for what, token, _, _ in rows if what == "end"}
            assert ended == set(tokens), f"lost: {sorted(set(tokens) - ended)}"
            assert most_at_once(rows, killed) == 5, "5 at once at most, and 5 reached"
            # Expired leases are removed by the next check; none may be live.
            seconds, micros = r.time()
            live = r.zcount(f"{NS}:limiter_state:concurrent:erp", seconds + micros / 1e6, "+inf")
            assert live == 0, "no lease left over"
            assert int(r.hget(f"{NS}:limiter:erp", "over") or 0) > 0, "the limit turned jobs away"
        finally:
            # Failed early, the processes still run: stopped, not leaked.
            codes += fleet.stop_all()
        assert all(code == 0 for code in codes), codes


# A window of this many per second, held this long (FAULT_SOAK: issue #30's 100 for 30 s).
WINDOW_RATE, WINDOW_SECONDS = (100, 30) if SOAK else (25, 4)

PUSH_PY = """
import os, sys, cogworker
client = cogworker.Client(redis_url=os.environ["COGWORKER_REDIS_URL"])
for token in sys.argv[1:]:
    client.push({"class": "Span", "args": [token, 1], "limits": ["api"]})
"""
PUSH_RB = """
require "cogworker"
ARGV.each do |t|
  Cogworker.client.push_payloads([{ "class" => "Span", "args" => [t, 1], "limits" => ["api"] }])
end
"""


def test_a_fleet_wide_window_holds_while_three_processes_push_and_work(paths):
    """A window of WINDOW_RATE jobs per second, defined by the Rust worker,
    on jobs that this process, a Python and a Ruby process push one by one
    at once, and a Rust, a Python and a Ruby worker run: no one-second span
    holds more starts than the window allows, and the limit is what paces
    them (they take as long as it says)."""
    results, logdir = paths
    with Redis() as server:
        r = server.client()
        fleet = Fleet(server.url, results, logdir, env={"TEST_LIMITER": f"api:window:{WINDOW_RATE}:1"})
        codes: list[int] = []
        try:
            start_limited_fleet(fleet, r, "api")
            tokens = [f"w{i:05d}" for i in range(WINDOW_RATE * WINDOW_SECONDS)]
            shares = [tokens[i::3] for i in range(3)]
            env = {**os.environ, "COGWORKER_REDIS_URL": server.url}
            ruby_lib = os.path.join(ROOT, "ruby/lib")
            pushers = [
                subprocess.Popen([sys.executable, "-c", PUSH_PY, *shares[0]], env=env),
                subprocess.Popen(["ruby", "-I", ruby_lib, "-e", PUSH_RB, *shares[1]], env=env),
            ]
            client = cogworker.Client(redis_url=server.url)
            for token in shares[2]:
                client.push({"class": "Span", "args": [token, 1], "limits": ["api"]})
            assert all(p.wait(60) == 0 for p in pushers)
            assert wait_drained(r, WINDOW_SECONDS * 3 + 30), fleet.logs()[-20000:]
            codes += fleet.stop_all()
            rows = spans(results)
            assert {t for what, t, _, _ in rows if what == "end"} == set(tokens)
            starts = sorted(at for what, _, at, _ in rows if what == "start")
            # A start is written a moment after its grant (tens of ms on a
            # busy 2-core machine, more for some than for others): a span
            # of 0.9 s may not hold more than the window allows.
            span = 0.9
            busiest = max(bisect.bisect_left(starts, at + span) - i for i, at in enumerate(starts))
            assert busiest <= WINDOW_RATE, f"{busiest} starts within {span} s"
            took = starts[-1] - starts[0]
            assert took >= WINDOW_SECONDS - 1.2, f"{len(starts)} jobs in {took:.1f} s: the window paced them"
            print(
                f"window {WINDOW_RATE}/s: {len(starts)} jobs in {took:.2f} s, busiest span {busiest}",
                file=sys.stderr,
            )
        finally:
            codes += fleet.stop_all()
        assert all(code == 0 for code in codes), codes


# Keyed concurrency: KEYS keys, key k with (k % 10 + 1) * KEY_SCALE jobs but
# k00, the hot key, with 40 * KEY_SCALE (the drain ends on it, alone: without
# its cap it would get every slot), each job 150 ms.
KEYS, KEY_SCALE = 50, (4 if SOAK else 1)


def keyed_jobs() -> list[dict]:
    """The Span jobs of each key, capped at 2 per key, shuffled."""
    jobs = [
        {"class": "Span", "args": [f"k{k:02d}-{n:03d}", 150], "group": f"k{k:02d}", "group_cap": 2}
        for k in range(KEYS)
        for n in range((40 if k == 0 else k % 10 + 1) * KEY_SCALE)
    ]
    random.Random(3).shuffle(jobs)
    return jobs


def test_a_keyed_concurrency_of_2_holds_over_50_keys_through_kill_9(paths):
    """Jobs whose class caps its key at 2 (`group_cap`, travelling with
    each job: no process defines anything), worked by a Rust, a Python and
    a Ruby worker while one is killed with -9 every 3 s: never more than 2
    bodies of one key at once (a killed process's bodies end when it died,
    its leases when its jobs are recovered), every job done, and no lease,
    running count or parked key left."""
    results, logdir = paths
    with Redis() as server:
        r = server.client()
        fleet = Fleet(server.url, results, logdir, env={"TEST_ORPHAN_THRESHOLD": "3"})
        codes: list[int] = []
        try:
            three_languages(fleet, r)
            jobs = keyed_jobs()
            cogworker.Client(redis_url=server.url).push_bulk(jobs)
            killed = kill_until_drained(fleet, r, every=3, rng=random.Random(11), limit=DRAIN_LIMIT)
            assert wait_drained(r, DRAIN_LIMIT), fleet.logs()[-20000:]
            wait_registered(r, fleet)
            codes += fleet.stop_all()
            rows = spans(results)
            tokens = {job["args"][0] for job in jobs}
            assert {t for what, t, _, _ in rows if what == "end"} == tokens
            most = {
                key: most_at_once([row for row in rows if row[1].startswith(key + "-")], killed)
                for key in sorted({job["group"] for job in jobs})
            }
            assert max(most.values()) == 2 and most["k00"] == 2, most
            deadline = time.monotonic() + 30
            while (left := sorted(r.scan_iter(f"{NS}:group*"))) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert left == [], left
            summary = f"keyed concurrency 2 over {KEYS} keys: {len(jobs)} jobs, {len(killed)} kills"
            print(summary, file=sys.stderr)
        finally:
            codes += fleet.stop_all()
        assert all(code == 0 for code in codes), codes


# One at a time per key, in push order: SEQUENCE_KEYS keys of SEQUENCE_EACH
# jobs each (FAULT_SOAK: the 1,000 over 10), each job 150 ms.
SEQUENCE_KEYS, SEQUENCE_EACH = 10, (100 if SOAK else 20)


def test_one_key_at_a_time_in_push_order_holds_through_kill_9(paths, tmp_path):
    """Jobs of 10 keys, each key's pushed in order as a sequence (one at a
    time per key: its group, capped at 1), one in five failing its first
    attempt (retried in 0.2 s), worked by a Rust, a Python and a Ruby worker
    while one is killed with -9 every 1.5 s: within each key no job starts
    before its predecessor's last run ended (a predecessor run again after a
    kill or a failure is allowed, an overtake is not: a failed job's retry
    holds its key), and every job is done."""
    results, logdir = paths
    fail_dir = tmp_path / "failed"
    fail_dir.mkdir()
    with Redis() as server:
        r = server.client()
        env = {"TEST_ORPHAN_THRESHOLD": "3", "TEST_FAIL_DIR": str(fail_dir)}
        fleet = Fleet(server.url, results, logdir, env=env)
        codes: list[int] = []
        try:
            three_languages(fleet, r)
            jobs = [
                {
                    "class": "Span",
                    "args": [f"q{k}-{n:04d}", 150, n % 5 == 2],
                    "key": f"q{k}",
                    "sequence": True,
                }
                for n in range(SEQUENCE_EACH)
                for k in range(SEQUENCE_KEYS)
            ]
            cogworker.Client(redis_url=server.url).push_bulk(jobs)
            kills = len(kill_until_drained(fleet, r, every=1.5, rng=random.Random(5), limit=DRAIN_LIMIT))
            assert wait_drained(r, DRAIN_LIMIT), fleet.logs()[-20000:]
            wait_registered(r, fleet)
            codes += fleet.stop_all()
            rows = spans(results)
            assert {t for what, t, _, _ in rows if what == "end"} == {job["args"][0] for job in jobs}
            last_end = {t: at for what, t, at, _ in sorted(rows, key=lambda row: row[2]) if what == "end"}
            overtakes = [
                (token, at)
                for what, token, at, _ in rows
                if what == "start"
                and int(token[-4:]) > 0
                and at < last_end[f"{token[:-4]}{int(token[-4:]) - 1:04d}"]
            ]
            assert overtakes == [], overtakes[:10]
            reruns = sum(1 for what, *_ in rows if what == "start") - len(jobs)
            failed = len(os.listdir(fail_dir))
            summary = (
                f"sequence over {SEQUENCE_KEYS} keys: {len(jobs)} jobs, {failed} failed once, "
                f"{kills} kills, {reruns} runs again"
            )
            print(summary, file=sys.stderr)
        finally:
            codes += fleet.stop_all()
        assert all(code == 0 for code in codes), codes
