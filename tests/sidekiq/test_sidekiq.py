"""cogworker on a Sidekiq Redis (`layout = "sidekiq"`, docs/sidekiq.md),
against real Sidekiq 6.4 from Debian's ruby-sidekiq: its client, server,
API and Web UI, beside cogworker workers in Rust, Python and Ruby (the
fault suite's workers, tests/faults, with TEST_LAYOUT=sidekiq). The Ruby
side of Sidekiq is core/tests/sidekiq/: `accounts.rb` (the job classes a
`sidekiq` process runs), `client.rb` (its client and API), `web.rb` (its
Web UI), and tests/web/sidekiq_pages.mjs renders the Web UI's pages in
headless Chromium.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "faults"))

from harness import Fleet  # noqa: E402

import cogworker  # noqa: E402
from cogworker.testing import RedisServer, free_port  # noqa: E402

SIDEKIQ = os.path.join(ROOT, "core", "tests", "sidekiq")
LANGUAGES = ("rust", "python", "ruby")


class Setup:
    """A private Redis, a results file, and what runs against them."""

    def __init__(self, tmp: str) -> None:
        self.redis = RedisServer()
        self.tmp = tmp
        self.results = os.path.join(tmp, "results.txt")
        self.fail_dir = os.path.join(tmp, "failed")
        os.makedirs(self.fail_dir)
        open(self.results, "w").close()
        self.env = {
            **os.environ,
            "REDIS_URL": self.redis.url,
            "TEST_RESULTS_FILE": self.results,
            "TEST_FAIL_DIR": self.fail_dir,
        }
        self.fleet = Fleet(
            self.redis.url,
            self.results,
            tmp,
            env={"TEST_LAYOUT": "sidekiq", "TEST_FAIL_DIR": self.fail_dir, "TEST_ORPHAN_THRESHOLD": "2"},
        )
        self.processes: list[subprocess.Popen[bytes]] = []
        self.r = redis.Redis(port=self.redis.port)

    def api(self, *args: str) -> Any:
        """Sidekiq's client or API (client.rb): its line of JSON."""
        out = subprocess.run(
            ["ruby", os.path.join(SIDEKIQ, "client.rb"), *args],
            env=self.env,
            capture_output=True,
            check=True,
            timeout=60,
        )
        return json.loads(out.stdout)

    def push_accounts(self, jobs: list[list[Any]]) -> None:
        """Sidekiq's client pushes Account jobs: [token, millis, fail_once, delay]."""
        path = os.path.join(self.tmp, f"jobs-{time.monotonic_ns()}.json")
        with open(path, "w") as f:
            json.dump(jobs, f)
        assert self.api("accounts", path) == len(jobs)

    def start_sidekiq(self) -> subprocess.Popen[bytes]:
        log = open(os.path.join(self.tmp, f"sidekiq-{len(self.processes)}.log"), "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            ["sidekiq", "-r", os.path.join(SIDEKIQ, "accounts.rb"), "-c", "5", "-t", "8", "-q", "default"],
            env=self.env,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        self.processes.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> int:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(30)

    def ran(self) -> Counter[str]:
        """Runs per token (a last line still being written waits for the next read)."""
        with open(self.results) as f:
            return Counter(line.strip() for line in f if line.endswith("\n") and line.strip())

    def client(self) -> cogworker.Client:
        cogworker.configure(layout="sidekiq", sidekiq_version=6)
        try:
            return cogworker.Client(redis_url=self.redis.url)
        finally:
            cogworker.configure(layout="cogworker")

    def close(self) -> None:
        self.fleet.stop_all(10)
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.redis.stop()


@pytest.fixture
def setup(tmp_path: Any) -> Iterator[Setup]:
    s = Setup(str(tmp_path))
    try:
        yield s
    finally:
        s.close()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.1)


def accounts(prefix: str, count: int, millis: int) -> list[list[Any]]:
    """`count` Account jobs: every fifth fails its first run, every seventh
    waits 0.5 to 2 s."""
    return [
        [f"{prefix}{i:05d}", millis, i % 5 == 0, 0.5 + (i % 4) / 2 if i % 7 == 0 else 0] for i in range(count)
    ]


def shape(entry: dict[str, Any]) -> dict[str, str]:
    """Each field's JSON type (a whole float is an int in JSON: numbers
    are numbers)."""
    kinds = {int: "number", float: "number"}
    return {k: kinds.get(type(v), type(v).__name__) for k, v in entry.items()}


def cogworker_identities(setup: Setup) -> dict[str, str]:
    """Language -> identity of each cogworker worker in `processes`."""
    r = setup.r
    found = {}
    for worker in setup.fleet.workers:
        for member in r.smembers("processes"):
            if member.decode().split(":")[-2] == str(worker.proc.pid):
                found[worker.language] = member.decode()
    return found


def test_sidekiq_and_cogworker_in_three_languages_share_one_redis(setup: Setup) -> None:
    # Sidekiq's client pushes; cogworker workers of three languages run them.
    jobs = accounts("s", 300, 20)
    setup.push_accounts(jobs)
    for language in LANGUAGES:
        setup.fleet.start(language)
    wait_for("three cogworker processes in Sidekiq's set", lambda: len(cogworker_identities(setup)) == 3)

    # Sidekiq's API lists them, and the jobs they run.
    def running_on_cogworker() -> dict[str, Any] | None:
        seen = setup.api("inspect")
        ours = set(cogworker_identities(setup).values())
        return seen if {r["identity"] for r in seen["running"]} & ours else None

    seen = wait_for("Sidekiq::Workers showing cogworker's running jobs", running_on_cogworker)
    listed = {p["identity"]: p for p in seen["processes"]}
    for language, identity in cogworker_identities(setup).items():
        assert identity in listed, f"Sidekiq::ProcessSet lists the {language} worker"
        assert listed[identity]["queues"] == ["default"]
    wait_for("Sidekiq's pushes all run", lambda: len(setup.ran()) == 300)

    # cogworker's client (Python) pushes; a real Sidekiq process runs its share.
    client = setup.client()
    sidekiq = setup.start_sidekiq()
    tokens = [f"c{i:05d}" for i in range(200)]
    for token in tokens:
        client.enqueue("Account", token, 20, False)
    wait_for("cogworker's pushes all run", lambda: len(setup.ran()) == 500)
    ran = setup.ran()
    assert set(ran) == {job[0] for job in jobs} | set(tokens)
    assert all(n == 1 for n in ran.values()), [t for t, n in ran.items() if n > 1]
    assert setup.stop(sidekiq) == 0
    assert setup.fleet.stop_all() == [0, 0, 0]
    stats = setup.api("inspect")
    # Each job counted once where Sidekiq counts (the fail_once ones' failures too).
    assert stats["processed"] == 560 and stats["failed"] == 60, stats


def test_failures_and_deaths_read_back_alike_from_both(setup: Setup) -> None:
    """A Fail job failed by Sidekiq and one failed by cogworker (Ruby):
    Sidekiq's RetrySet and DeadSet read the same fields, of the same
    types, and decode both backtraces."""
    sidekiq = setup.start_sidekiq()
    by_sidekiq = [setup.api("fail", "1"), setup.api("fail", "0")]
    wait_for("Sidekiq filed both", lambda: len(setup.api("sets")["dead"]) == 1 and setup.api("sets")["retry"])
    assert setup.stop(sidekiq) == 0
    setup.fleet.start("ruby")
    by_cogworker = [setup.api("fail", "1"), setup.api("fail", "0")]

    def both_filed() -> dict[str, Any] | None:
        sets = setup.api("sets")
        return sets if len(sets["retry"]) == 2 and len(sets["dead"]) == 2 else None

    sets = wait_for("cogworker filed both", both_filed)
    pairs = {"retry": (by_sidekiq[0], by_cogworker[0]), "dead": (by_sidekiq[1], by_cogworker[1])}
    for name, (their_jid, our_jid) in pairs.items():
        theirs = next(e for e in sets[name] if e["jid"] == their_jid)
        ours = next(e for e in sets[name] if e["jid"] == our_jid)
        assert shape(ours) == shape(theirs), f"{name}: Sidekiq's {theirs}\ncogworker's {ours}"
        assert ours["retry_count"] == theirs["retry_count"], name
        assert (ours["error_class"], ours["error_message"]) == (
            theirs["error_class"],
            theirs["error_message"],
        )
        assert isinstance(ours["error_backtrace"], list) and ours["error_backtrace"], ours
        assert isinstance(theirs["error_backtrace"], list) and theirs["error_backtrace"], theirs


def test_the_web_ui_shows_cogworker_processes_jobs_retries_and_dead(setup: Setup) -> None:
    port = free_port()
    web = subprocess.Popen(
        ["ruby", os.path.join(SIDEKIQ, "web.rb"), str(port)],
        env=setup.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    setup.processes.append(web)
    setup.fleet.start("python")
    setup.fleet.start("rust")
    failed = [setup.api("fail", "1"), setup.api("fail", "0")]
    setup.push_accounts([["slow", 20_000, False, 0]])
    wait_for("the slow job running", lambda: setup.api("inspect")["running"])
    wait_for("both failures filed", lambda: (lambda s: s["retry"] and s["dead"])(setup.api("sets")))

    def pages() -> dict[str, str]:
        out = subprocess.run(
            [
                "node",
                os.path.join(ROOT, "tests", "web", "sidekiq_pages.mjs"),
                f"http://127.0.0.1:{port}",
                "/busy",
                "/retries",
                "/morgue",
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )
        return json.loads(out.stdout)

    wait_for(
        "the Web UI up",
        lambda: (
            subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/busy"]).returncode
            == 0
        ),
        timeout=30,
    )
    shown = pages()
    for language, identity in cogworker_identities(setup).items():
        hostname, pid = identity.split(":")[0], identity.split(":")[1]
        assert f"{hostname}:{pid}" in shown["/busy"], f"Busy lists the {language} worker"
    busy = shown["/busy"]
    assert "Account" in busy and '"slow"' in busy, "Busy shows the running job and its args"
    # Whichever worker failed them (Python has no Fail: unknown there),
    # the Retries and Dead pages show each with its error.
    sets = setup.api("sets")
    for name, page in (("retry", "/retries"), ("dead", "/morgue")):
        [entry] = sets[name]
        assert entry["jid"] in failed
        assert "Fail" in shown[page] and entry["error_message"] in shown[page], (page, entry)


def test_a_sidekiq_fleet_moves_to_cogworker_with_a_worker_killed_midway(setup: Setup) -> None:
    """Issue #49's migration with kill -9: Sidekiq works a backlog with
    jobs scheduled and failing once; cogworker workers of three languages
    join; one is killed with kill -9 mid-way; Sidekiq stops; a replacement
    starts. Nothing is lost; a job runs twice only if the killed worker
    held it."""
    jobs = accounts("m", 1500, 5)
    setup.push_accounts(jobs)
    sidekiq = setup.start_sidekiq()
    wait_for("Sidekiq working", lambda: len(setup.ran()) >= 100)
    for language in LANGUAGES:
        setup.fleet.start(language)
    wait_for("cogworker registered", lambda: len(cogworker_identities(setup)) == 3)
    wait_for("a third done", lambda: len(setup.ran()) >= 500)
    victim = next(w for w in setup.fleet.workers if w.language == "python")
    # What it holds when killed: its in-progress record (cogworker's own key).
    in_progress = f"cogworker:in_progress:{cogworker_identities(setup)['python']}"
    setup.fleet.kill9(victim)
    held = setup.r.hlen(in_progress)
    assert setup.stop(sidekiq) == 0
    setup.fleet.start("python")
    wait_for("every job run", lambda: len(setup.ran()) == len(jobs), timeout=120)
    ran = setup.ran()
    assert set(ran) == {job[0] for job in jobs}, "none lost"
    repeated = sum(n - 1 for n in ran.values())
    print(f"migration: {len(jobs)} jobs, 0 lost, {repeated} run twice, the killed worker held {held}")
    assert repeated <= held, (repeated, held)
    assert setup.fleet.stop_all() == [0, 0, 0]
