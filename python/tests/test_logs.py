"""One log format per process: `cogworker worker --json-logs` writes every
line as JSON (the engine's and Python's records alike), a line per job's
end (and, at debug, its start), a failure once with its backtrace, and the
running job's jid and class on what a handler logs; without the flag, every
line is in the engine's text format (no second Python format)."""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys

import tasks
from conftest import HERE, RedisServer, wait_for, worker_env

import cogworker


def run_worker(server: RedisServer, *flags: str, **env: str) -> list[str]:
    """Runs a worker on the logged jobs until they are done; its stderr lines."""
    cogworker.configure(redis_url=server.url)
    from logged_tasks import breaks, charge

    jids = [charge.enqueue(42), breaks.enqueue()]
    worker = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "worker", "logged_tasks", "-c", "2", *flags],
        env=worker_env(server, **env),
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    api = cogworker.Api(server.url)
    wait_for("both jobs settled", lambda: api.stats()["processed"] == 1 and api.stats()["failed"] == 1)
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err
    return [*jids, *err.splitlines()]


def test_json_logs_are_json_with_job_fields_and_one_line_per_failure(redis_server: RedisServer) -> None:
    # At debug, a job's start is logged too (at info, its end only).
    charge_jid, breaks_jid, *lines = run_worker(redis_server, "--json-logs", COGWORKER_LOG="debug")
    entries = [json.loads(line) for line in lines]  # every line parses
    for entry in entries:
        assert {"time", "level", "pid", "thread", "message"} <= entry.keys(), entry
    by_jid = lambda jid: [e for e in entries if e.get("jid") == jid]  # noqa: E731
    charge = by_jid(charge_jid)
    assert [e["message"].rsplit(" ", 1)[-1] for e in charge if e.get("logger") is None] == ["start", "done"]
    done = next(e for e in charge if e["message"].endswith("done"))
    assert done["class"] == "Logged.Charge" and done["queue"] == "default" and done["outcome"] == "ok"
    assert float(done["duration_ms"]) >= 0
    handler_line = next(e for e in charge if e.get("logger") == "app.billing")
    assert handler_line["message"] == "charging 42" and handler_line["class"] == "Logged.Charge"
    failed = [e for e in by_jid(breaks_jid) if "failed" in e["message"]]
    assert len(failed) == 1, f"a failure is logged once: {failed}"
    assert failed[0]["outcome"] == "discard" and "ValueError: card declined" in failed[0]["message"]
    assert "raise ValueError" in failed[0]["backtrace"], failed[0]


CORE_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO|WARN|ERROR|DEBUG) +pid=\d+ ")


def test_text_logs_are_one_format(redis_server: RedisServer) -> None:
    _, breaks_jid, *lines = run_worker(redis_server)
    shown = "\n".join(lines)
    assert all(CORE_LINE.match(line) for line in lines), f"every line in the engine's format:\n{shown}"
    assert [line for line in lines if " done jid=" in line], "one line per job at info"
    assert not [line for line in lines if " start jid=" in line], "starts are logged at debug"
    assert len([line for line in lines if breaks_jid in line and "failed" in line]) == 1, lines
    handler = [line for line in lines if "charging 42" in line]
    assert len(handler) == 1 and "logger=app.billing" in handler[0] and "jid=" in handler[0], lines


def test_an_embedded_worker_logs_through_pythons_logging(worker_factory, caplog) -> None:
    """A worker started in the application's process (a test, a Django
    process, a notebook) hands the engine's lines to ``logging`` (issue
    #44: they went to file descriptor 2, and the ``cogworker`` logger got
    no record), as records of ``cogworker.*`` loggers with the job's
    ``jid`` and ``job_class``."""
    caplog.set_level(logging.INFO, logger="cogworker")
    jid = tasks.echo.enqueue("logged")
    worker_factory(concurrency=1)

    def done() -> list[logging.LogRecord]:
        return [r for r in caplog.records if getattr(r, "jid", None) == jid and r.getMessage() == "done"]

    [record] = wait_for("the job's done record", done)
    assert record.name.startswith("cogworker"), record.name
    assert record.levelno == logging.INFO
    assert record.job_class == "tasks.echo"
    assert record.queue == "default"
