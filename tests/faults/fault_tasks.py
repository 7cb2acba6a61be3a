"""The Python worker of the fault suite: `Account(token, millis, fail_once)`
sleeps, then appends `token` to TEST_RESULTS_FILE (one line per execution);
with `fail_once`, the first attempt anywhere (the one that creates the
token's file in TEST_FAIL_DIR) fails instead, retried in 0.2 s."""

from __future__ import annotations

import os
import time

import cogworker

cogworker.configure(
    orphan_threshold=float(os.environ.get("TEST_ORPHAN_THRESHOLD", "300")),
    orphan_check_interval=float(os.environ.get("TEST_ORPHAN_CHECK", "0.5")),
    heartbeat_interval=float(os.environ.get("TEST_HEARTBEAT", "0.5")),
    scheduler_poll_interval=0.2,
    fetch_idle_max_interval=0.5,
    shutdown_timeout=5.0,
    shard_by_queue=os.environ.get("TEST_SHARD_BY_QUEUE") == "1",
    namespace=os.environ.get("TEST_NAMESPACE", "cogworker"),
    # TEST_LAYOUT=sidekiq: on Sidekiq 6's keys (tests/sidekiq).
    layout=os.environ.get("TEST_LAYOUT", "cogworker"),
    sidekiq_version=6,
)


def _first_attempt(token: str) -> bool:
    fail_dir = os.environ.get("TEST_FAIL_DIR")
    if not fail_dir:
        return False
    try:
        os.close(os.open(os.path.join(fail_dir, token), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _line(line: str) -> None:
    with open(os.environ["TEST_RESULTS_FILE"], "a", encoding="utf-8") as f:
        f.write(line + "\n")


@cogworker.job(name="Span", retry_in=lambda count, error: 0.2)
def span(token: str, millis: int, fail_once: bool = False) -> None:
    """`start`/`end` lines around a sleep: how many ran at once, and where.
    With `fail_once`, the first attempt anywhere fails after its sleep
    (no `end` line)."""
    _line(f"start {token} {time.time():.6f} {os.getpid()}")
    time.sleep(millis / 1000)
    if fail_once and _first_attempt(token):
        raise RuntimeError("the first attempt fails")
    _line(f"end {token} {time.time():.6f} {os.getpid()}")


@cogworker.job(name="Account", retry_in=lambda count, error: 0.2)
def account(token: str, millis: int = 0, fail_once: bool = False) -> None:
    time.sleep(millis / 1000)
    if fail_once and _first_attempt(token):
        raise RuntimeError("the first attempt fails")
    with open(os.environ["TEST_RESULTS_FILE"], "a", encoding="utf-8") as f:
        f.write(f"{token}\n")
    _run_line(token)


def _run_line(token: str) -> None:
    """With TEST_RUNS_FILE: which delivery ran (`token jid language pid
    time`), to tell a job delivered twice from one pushed twice."""
    path = os.environ.get("TEST_RUNS_FILE")
    if path:
        job = cogworker.current_job()
        jid = job.jid if job else "?"
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{token} {jid} python {os.getpid()} {time.time():.6f}\n")


@cogworker.job(name="Import")
def import_items(total: int, micros: int = 0) -> None:
    """A long job (docs/long-jobs.md) over items ``0..total`` from its
    cursor: per item, ``item <i> <pid>`` in TEST_RESULTS_FILE, a spin of
    ``micros``, then a checkpoint of ``i + 1``; once stopping, ``stopped
    <cursor> <pid>``, then it interrupts itself and returns."""
    job = cogworker.current_job()
    assert job is not None
    pid = os.getpid()
    position = job.cursor or 0
    with open(os.environ["TEST_RESULTS_FILE"], "a", buffering=1, encoding="utf-8") as out:
        while position < total:
            if job.stopping:
                out.write(f"stopped {position} {pid}\n")
                job.interrupt()
                return
            out.write(f"item {position} {pid}\n")
            spin_until = time.perf_counter() + micros / 1e6
            while time.perf_counter() < spin_until:
                pass
            position += 1
            job.checkpoint(position)
