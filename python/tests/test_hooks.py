"""Apps plug into a worker: server middleware in order around every job
(seeing every payload field, able to change args, skip a job or swallow its
failure), error handlers (one that raises changes nothing), death handlers
the startup/quiet/shutdown/heartbeat hooks, and sentry-sdk reporting a
failure to a local receiver through an error handler."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import wait_for

import cogworker
from cogworker import _hooks

SEEN: list[Any] = []


class Trouble(Exception):
    pass


@cogworker.job(name="Hooks.Record", retry=2, retry_in=lambda count, error: 3600)
def record(value: Any) -> str:
    if value == "raise":
        raise Trouble("handler failed")
    SEEN.append(("handler", value))
    return f"did {value}"


@cogworker.job(name="Hooks.Dies", retry=0)
def dies() -> None:
    raise Trouble("no retries left")


@pytest.fixture(autouse=True)
def clean_hooks() -> Iterator[None]:
    _hooks.reset()
    SEEN.clear()
    yield
    _hooks.reset()


def test_server_middleware_runs_in_order_and_sees_every_payload_field(worker_factory) -> None:
    def outer(job: cogworker.RunningJob, call_next: Any) -> Any:
        SEEN.append(("outer-before", job.class_name, job.queue, job.get("tenant"), job.retry_count))
        value = call_next()
        SEEN.append(("outer-after", value))
        return value

    class Inner:
        def __call__(self, job: cogworker.RunningJob, call_next: Any) -> Any:
            SEEN.append(("inner-before", list(job.args), job.jid, job.created_at is not None))
            job.args = [f"{job.args[0]}!"]
            return call_next()

    cogworker.server_middleware.add(outer)
    cogworker.configure(server_middleware=[outer, Inner()])  # replaces: still two
    assert len(cogworker.server_middleware) == 2
    jid = cogworker.Client().push({"class": "Hooks.Record", "args": ["x"], "tenant": "acme"})
    worker_factory()
    wait_for("the job ran", lambda: ("outer-after", "did x!") in SEEN)
    assert SEEN == [
        ("outer-before", "Hooks.Record", "default", "acme", 0),
        ("inner-before", ["x"], jid, True),
        ("handler", "x!"),
        ("outer-after", "did x!"),
    ]


def test_middleware_can_skip_a_job_or_swallow_its_failure(worker_factory) -> None:
    def gate(job: cogworker.RunningJob, call_next: Any) -> Any:
        if job.args == ["skip"]:
            SEEN.append(("skipped", job.jid))
            return None
        try:
            return call_next()
        except Trouble:
            SEEN.append(("swallowed", job.jid))
            return None

    cogworker.server_middleware.add(gate)
    skipped = record.enqueue("skip")
    swallowed = record.enqueue("raise")
    worker_factory()
    wait_for("both settled", lambda: len(SEEN) == 2 and cogworker.Api().stats()["processed"] == 2)
    assert sorted(SEEN) == sorted([("skipped", skipped), ("swallowed", swallowed)])
    api = cogworker.Api()
    assert api.set_size("retry") == 0 and api.stats()["failed"] == 0


def test_error_handlers_see_every_failure_and_one_that_raises_changes_nothing(worker_factory) -> None:
    @cogworker.on_error
    def broken(error: BaseException, job: cogworker.RunningJob) -> None:
        raise RuntimeError("the reporter is down")

    @cogworker.on_error
    def reporter(error: BaseException, job: cogworker.RunningJob) -> None:
        SEEN.append((type(error).__name__, str(error), job.jid, job.class_name, job.get("queue")))

    jid = record.enqueue("raise")
    worker_factory()
    api = cogworker.Api()
    entry = wait_for("filed for retry", lambda: api.find("retry", jid))
    assert entry["job"]["error_class"] == "test_hooks.Trouble"
    assert SEEN == [("Trouble", "handler failed", jid, "Hooks.Record", "default")]


def test_death_and_lifecycle_hooks_run_in_the_worker(
    worker_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    for event in ("startup", "quiet", "shutdown", "heartbeat"):
        cogworker.on(event)(lambda event=event: SEEN.append(event))

    @cogworker.on_death
    def buried(job: dict[str, Any], error: cogworker.JobDied) -> None:
        SEEN.append(("death", job["jid"], error.error_class, error.error_message))

    @cogworker.on_death
    def broken(job: dict[str, Any], error: cogworker.JobDied) -> None:
        raise RuntimeError("pager is down")

    with pytest.raises(cogworker.ConfigError, match="startup"):
        cogworker.on("started")
    worker = worker_factory()
    wait_for("startup", lambda: "startup" in SEEN)
    wait_for("a heartbeat", lambda: "heartbeat" in SEEN)
    jid = dies.enqueue()
    wait_for("the death hook", lambda: ("death", jid, "test_hooks.Trouble", "no retries left") in SEEN)
    # A hook that raised is logged in the core's words, with its traceback.
    wait_for(
        "the raising hook's line",
        lambda: any(
            "death handler test_death_and_lifecycle_hooks_run_in_the_worker.<locals>.broken raised "
            "RuntimeError: pager is down; ignored" in r.getMessage()
            for r in caplog.records
        ),
    )
    assert cogworker.Api().set_size("dead") == 1
    worker.quiet()
    wait_for("quiet", lambda: "quiet" in SEEN)
    worker.stop()
    assert worker.wait(15) and worker.join(5)
    assert "shutdown" in SEEN
    assert SEEN.index("startup") < SEEN.index("quiet") < SEEN.index("shutdown")


def test_a_death_handler_gets_the_jobs_own_exception_class_where_it_is_loaded() -> None:
    """Issue #44, item 19: an exception of the recorded class (built
    without its ``__init__``), a builtin's too; a class not loaded here, a
    module never imported (nothing is imported for a payload's name) or a
    name that is not an exception class gives a ``JobDied``."""

    class NeedsArgs(Exception):
        def __init__(self, a: int, b: int) -> None:
            super().__init__(a, b)

    globals()["NeedsArgs"] = NeedsArgs
    try:
        record = {"jid": "j1", "error_class": "test_hooks.NeedsArgs", "error_message": "bad"}
        error = _hooks.died_of(record)
        assert isinstance(error, NeedsArgs) and str(error) == "bad"
        fields = (error.jid, error.error_class, error.error_message, error.job)
        assert fields == ("j1", "test_hooks.NeedsArgs", "bad", record)
    finally:
        del globals()["NeedsArgs"]
    assert isinstance(_hooks.died_of({"error_class": "ValueError", "error_message": "v"}), ValueError)
    names = ("test_hooks.NeedsArgs", "never_imported_module.Error", "os.path", "Billing::Charge", "")
    for name in names:
        error = _hooks.died_of({"jid": "j2", "error_class": name, "error_message": "m"})
        assert type(error) is cogworker.JobDied, name
        assert error.jid == "j2"
    assert "never_imported_module" not in __import__("sys").modules


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Sentry's ingest, as far as the SDK can tell: keeps each envelope."""

    envelopes: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        _Receiver.envelopes.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_real_error_reporter_gets_the_exception_and_the_jid(worker_factory) -> None:
    import sentry_sdk  # installed by scripts/setup, as a real app would

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Receiver.envelopes.clear()
    sentry_sdk.init(dsn=f"http://public@127.0.0.1:{server.server_port}/1", default_integrations=False)
    try:

        @cogworker.on_error
        def report(error: BaseException, job: cogworker.RunningJob) -> None:
            with sentry_sdk.new_scope() as scope:
                scope.set_tag("jid", job.jid)
                scope.set_tag("queue", job.queue)
                sentry_sdk.capture_exception(error)

        jid = record.enqueue("raise")
        worker_factory()
        wait_for("the failure was reported", lambda: any(jid.encode() in e for e in _Receiver.envelopes), 30)
    finally:
        sentry_sdk.flush(5)
        sentry_sdk.get_client().close()
        server.shutdown()
        server.server_close()
    event = next(
        json.loads(line)
        for envelope in _Receiver.envelopes
        for line in envelope.splitlines()
        if b'"exception"' in line and jid.encode() in line
    )
    assert event["tags"]["jid"] == jid and event["tags"]["queue"] == "default"
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "Trouble" and exception["value"] == "handler failed"


@cogworker.job(name="Hooks.Flaky", retry=3, retry_in=lambda count, error: 0)
def flaky_once(key: str) -> None:
    SEEN.append(("run", key))
    if SEEN.count(("run", key)) == 1:
        raise Trouble("first run fails")


def test_client_middleware_adds_fields_that_survive_a_retry_or_stops_a_push(worker_factory) -> None:
    def tenant(job: dict[str, Any]) -> dict[str, Any] | None:
        if job["args"] == ["stop"]:
            return None
        return {**job, "tenant": "acme"}

    def seen_by_handlers(job: cogworker.RunningJob, call_next: Any) -> Any:
        SEEN.append(("tenant", job.args[0], job.get("tenant"), job.retry_count))
        return call_next()

    cogworker.configure(client_middleware=[tenant], server_middleware=[seen_by_handlers])
    assert flaky_once.enqueue("stop") is None
    assert cogworker.Client().enqueue_many("Hooks.Flaky", [["a"], ["stop"], ["b"]])[1] is None
    assert cogworker.Client().push({"class": "Hooks.Flaky", "args": ["stop"]}) is None
    later = cogworker.Client().enqueue("Hooks.Flaky", "c", at=time.time() + 3600)
    assert cogworker.Api().find("scheduled", later)["job"]["tenant"] == "acme"
    worker_factory()
    wait_for("a and b ran twice", lambda: SEEN.count(("run", "a")) == 2 and SEEN.count(("run", "b")) == 2)
    assert sorted(s for s in SEEN if s[0] == "tenant") == [
        ("tenant", "a", "acme", 0),
        ("tenant", "a", "acme", 1),
        ("tenant", "b", "acme", 0),
        ("tenant", "b", "acme", 1),
    ]
    assert cogworker.Api().queue("default")["size"] == 0, "the stopped pushes wrote nothing"


def test_client_middleware_also_stamps_the_periodic_jobs_a_worker_pushes(worker_factory) -> None:
    from cogworker import _periodic

    cogworker.configure(client_middleware=[lambda job: {**job, "tenant": "acme"}])
    cogworker.periodic("* * * * * *", "Hooks.Tick", queue="ticks")  # a queue this worker does not take
    try:
        worker_factory()
        api = cogworker.Api()
        entries = wait_for("a periodic job", lambda: api.queue_jobs("ticks", 0, 10))
    finally:
        _periodic.clear()
    assert entries[0]["class"] == "Hooks.Tick" and entries[0]["tenant"] == "acme", entries


def test_a_slow_death_hook_holds_up_no_periodic_push(worker_factory) -> None:
    """The periodic ticker's request to the client middleware never waits
    behind an app's hook: while a death handler takes its time, every
    second's job is pushed with the middleware's fields, no slot skipped."""
    from cogworker import _periodic

    entered, release = threading.Event(), threading.Event()

    @cogworker.on_death
    def slow_pager(job: dict[str, Any], error: cogworker.JobDied) -> None:
        entered.set()
        release.wait(30)

    cogworker.configure(client_middleware=[lambda job: {**job, "tenant": "acme"}])
    cogworker.periodic("* * * * * *", "Hooks.Tick", queue="ticks")  # a queue this worker does not take
    api = cogworker.Api()
    try:
        worker_factory()
        dies.enqueue()
        assert entered.wait(15), "the death hook runs"
        before = len(api.queue_jobs("ticks", 0, 1000))
        # Eight seconds' slots while the hook still runs (the ticker waits
        # at most 5 s for an answer: behind the hook, these were pushed
        # without the middleware's fields, and slots were skipped).
        entries = wait_for(
            "8 more ticks", lambda: (e := api.queue_jobs("ticks", 0, 1000)) and len(e) >= before + 8 and e
        )
        assert not release.is_set()
    finally:
        release.set()
        _periodic.clear()
    assert all(entry.get("tenant") == "acme" for entry in entries), entries
    slots = sorted(entry["periodic_slot"] for entry in entries)
    assert slots == list(range(slots[0], slots[0] + len(slots))), f"a slot skipped: {slots}"
