"""The host conformance suite (tests/conformance/scenarios.json), run
against the Python host: the same scenarios run in Ruby
(ruby/test/test_conformance.rb) and Rust (core/tests/conformance.rs)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conformance_jobs import (
    OBJECTS,
    SCHEDULABLE,
    TRAIL,
    ConformanceError,
    server_middleware,
    tenant_middleware,
)
from conftest import FAST, HERE, RedisServer, wait_for, worker_env

import cogworker
from cogworker import _hooks, _periodic, _settings, testing

HOOK_CALLS: list[dict[str, Any]] = []
_calls_lock = threading.Lock()

SCENARIOS_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "conformance", "scenarios.json")
with open(SCENARIOS_FILE) as _f:
    SCENARIOS = [s for s in json.load(_f)["scenarios"] if "python" in s.get("hosts", ["python"])]


def _stamp_then_raise(job: dict[str, Any]) -> dict[str, Any]:
    job["stamped"] = True
    raise ConformanceError("client middleware failed")


def _record(hook: str, job: Any, error: Any, registry: str = "process") -> None:
    seen = {
        "hook": hook,
        "registry": registry,
        "jid": job.jid,
        "class": job.class_name,
        "error_class": getattr(error, "error_class", None) or type(error).__name__,
        "error_message": getattr(error, "error_message", None) or str(error),
        "raised_class": type(error).__name__,
    }
    with _calls_lock:
        HOOK_CALLS.append(seen)


def _install_hooks(names: list[str], hooks: cogworker.Hooks, registry: str) -> None:
    if "error" in names:
        hooks.on_error(lambda error, job: _record("error", job, error, registry))
    if "death" in names:
        hooks.on_death(lambda job, error: _record("death", job, error, registry))


def _last_segment(name: str | None) -> str | None:
    return None if name is None else name.replace("::", ".").rsplit(".", 1)[-1]


def _host_value(value: Any) -> Any:
    """A scenario value with ``{"$not_json": true}`` made a host object,
    and ``{"$float": "nan"}`` (``inf``, ``-inf``) the float JSON cannot hold."""
    if isinstance(value, dict):
        if value.get("$not_json"):
            return object()
        if "$float" in value:
            return float(value["$float"])
        if "$repeat" in value:
            return value["$repeat"] * value["times"]
        return {k: _host_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_host_value(v) for v in value]
    return value


class Run:
    """One scenario's state: the jids pushed by name, the worker started."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.jids: dict[str, str] = {}
        self.client = cogworker.Client()
        self.api = cogworker.Api()
        self.worker: cogworker.Worker | None = None
        self.limiters: dict[str, cogworker.Limiter] = {}
        self.leases: dict[str, Any] = {}

    def step(self, step: dict[str, Any]) -> None:
        kind = next(k for k in step if k in STEPS)
        STEPS[kind](self, step)

    def push(self, step: dict[str, Any]) -> None:
        if step.get("on_new_thread"):
            pushed: list[BaseException | None] = []

            def push_here() -> None:
                try:
                    self.push({k: v for k, v in step.items() if k != "on_new_thread"})
                    pushed.append(None)
                except BaseException as e:  # re-raised on the runner's thread
                    pushed.append(e)

            thread = threading.Thread(target=push_here)
            thread.start()
            thread.join(30)
            assert pushed, "the push's thread did not finish within 30 s"
            if pushed[0] is not None:
                raise pushed[0]
            return
        options = dict(step.get("options", {}))
        if "raises" in step:
            with pytest.raises(Exception) as raised:
                self.client.enqueue(step["push"], *step["args"], **options)
            self._expect_raised(raised.value, step)
            return
        jid = self.client.enqueue(step["push"], *step["args"], **options)
        if step.get("refused"):
            assert jid is None, "the push was refused"
            return
        assert jid is not None
        if "as" in step:
            self.jids[step["as"]] = jid

    def push_each(self, step: dict[str, Any]) -> None:
        for option, values in step["options"].items():
            for value in values:
                expected = {"raises": step["raises"], "message_has": option}
                with pytest.raises(Exception) as raised:
                    self.client.enqueue(step["push_each"], **{option: _host_value(value)})
                self._expect_raised(raised.value, expected)

    def push_raw(self, step: dict[str, Any]) -> None:
        """The payload as another client (or a person) would write it,
        straight onto its queue's list."""
        payload = {**step["push_raw"], "jid": os.urandom(12).hex()}
        queue = payload.get("queue", "default")
        self.server.cli_raw("LPUSH", f"cogworker:queue:{queue}", json.dumps(payload))
        self.jids[step["as"]] = payload["jid"]

    def await_buried(self, step: dict[str, Any]) -> None:
        """A raw payload buried in dead whole, its reason naming the field."""
        jid = self.jids[step["await_buried"]]

        def buried() -> list[dict[str, Any]]:
            entries = self.api.entries("dead", 0, 1000)
            return [e["job"] for e in entries if jid in e["job"].get("raw_payload", "")]

        [job] = wait_for(f"{jid} buried", buried)
        assert f"`{step['naming']}`" in job["error_message"], job

    def limiter(self, step: dict[str, Any]) -> None:
        kinds = {"concurrent": cogworker.Limiter.concurrent}
        self.limiters[step["limiter"]] = kinds[step["kind"]](step["limiter"], step["limit"])

    def acquire(self, step: dict[str, Any]) -> None:
        self.leases[step["as"]] = self.limiters[step["acquire"]].acquire()

    def release(self, step: dict[str, Any]) -> None:
        self.leases.pop(step["release"]).release()

    def within_limit(self, step: dict[str, Any]) -> None:
        """A block within the limiter: it runs, raises (``block_raises``:
        the error goes through), or the limiter refuses it (``raises``)."""
        limiter = self.limiters[step["within_limit"]]
        ran: list[bool] = []
        if "raises" in step:
            with pytest.raises(Exception) as raised, limiter.within_limit(wait=step["wait"]):
                ran.append(True)
            self._expect_raised(raised.value, step)
            assert not ran, "the block ran over the limit"
            return
        with pytest.raises(ConformanceError) if step.get("block_raises") else contextlib.nullcontext():
            with limiter.within_limit(wait=step["wait"]):
                ran.append(True)
                if step.get("block_raises"):
                    raise ConformanceError("in the block")
        assert ran

    def cancel(self, step: dict[str, Any]) -> None:
        assert self.client.cancel(self.jids[step["cancel"]]) == step["answers"]

    def push_later(self, step: dict[str, Any]) -> None:
        """A push for later in Python's own way: a timedelta or a datetime."""
        handle = SCHEDULABLE[step["push_later"]]
        if "in" in step:
            jid = handle.enqueue_in(datetime.timedelta(seconds=step["in"]), *step["args"])
        else:
            now = datetime.datetime.now(datetime.timezone.utc)
            jid = handle.enqueue_at(now + datetime.timedelta(seconds=step["at_from_now"]), *step["args"])
        assert jid is not None
        self.jids[step["as"]] = jid

    def await_scheduled(self, step: dict[str, Any]) -> None:
        """The job in the schedule, due within ``in_seconds`` of now (with
        ``args``: carrying those)."""
        entry = self._await_due("scheduled", step["await_scheduled"], step["in_seconds"])
        if "args" in step:
            assert entry["job"]["args"] == step["args"], entry

    def same_jid(self, step: dict[str, Any]) -> None:
        """The pushes named answered with one jid."""
        assert len({self.jids[name] for name in step["same_jid"]}) == 1, self.jids

    def await_retry(self, step: dict[str, Any]) -> None:
        """The job filed to retry, due within ``in_seconds`` of now; its backtrace."""
        entry = self._await_due("retry", step["await_retry"], step["in_seconds"])
        backtrace = "\n".join(entry["job"].get("error_backtrace", []))
        assert step.get("backtrace_has", "") in backtrace, backtrace
        if "backtrace_lacks" in step:
            assert step["backtrace_lacks"] not in backtrace, backtrace

    def _await_due(self, set_name: str, name: str, in_seconds: list[float]) -> dict[str, Any]:
        """The entry of the job ``name`` in ``set_name``, once there, due
        within ``in_seconds`` (``[low, high]``) of now."""
        jid = self.jids[name]
        entry = wait_for(f"{jid} in {set_name}", lambda: self.api.find(set_name, jid))
        assert in_seconds[0] <= entry["score"] - time.time() <= in_seconds[1], entry
        return dict(entry)

    def batch(self, step: dict[str, Any]) -> None:
        parent = self.jids[step["parent"]] if "parent" in step else None
        batch = cogworker.Batch(step["batch"], parent=parent)
        for callback in step["on"]:
            handler = OBJECTS[callback["class"]] if callback.get("object") else callback["class"]
            batch.on(callback["event"], handler, *callback["args"], **callback.get("options", {}))
            self.jids[callback["as"]] = batch.callback_jids(callback["event"])[-1]
        with pytest.raises(ConformanceError) if step.get("block_raises") else contextlib.nullcontext(), batch:
            for inner in step["jobs"]:
                self.push(inner)
            for inner_batch in step.get("inner_batches", []):
                self.batch(inner_batch)
            if step.get("block_raises"):
                raise ConformanceError("in the batch's block")
            if "reentered_jobs" in step:
                with batch:
                    for inner in step["reentered_jobs"]:
                        self.push(inner)
                assert self.api.batch(batch.open())["open"], "the inner block closed it"
        assert batch.bid is not None
        self.jids[step["as"]] = batch.bid

    def workflow(self, step: dict[str, Any]) -> None:
        def built(spec: dict[str, Any]) -> dict[str, Any]:
            takes = spec.get("takes_result", False)
            if "group" in spec:
                return cogworker.group(*map(built, spec["group"]), takes_result=takes)
            options = spec.get("options", {})
            handler = OBJECTS[spec["step"]] if spec.get("object") else spec["step"]
            return cogworker.step(handler, *spec["args"], takes_result=takes, **options)

        steps = list(map(built, step["steps"]))
        shape = step.get("shape", "workflow")
        if shape == "chain":
            workflow = cogworker.chain(*steps)
        elif shape == "chord":
            workflow = cogworker.chord(steps, built(step["callback"]))
        else:
            workflow = cogworker.Workflow(*steps, description=step["workflow"])
        for callback in step.get("on", []):
            options = callback.get("options", {})
            workflow.on(callback["event"], callback["class"], *callback["args"], **options)
            self.jids[callback["as"]] = workflow.callback_jids(callback["event"])[-1]
        pushed = workflow.push()
        if "callback" in step and "as" in step["callback"]:
            self.jids[step["callback"]["as"]] = pushed.last_jids[0]
        for index, spec in enumerate(step["steps"]):
            if "as" in spec:
                self.jids[spec["as"]] = pushed.steps[index][1][0]
        self.jids[step["as"]] = pushed.id

    def workflow_refused(self, step: dict[str, Any]) -> None:
        """A workflow whose parts are refused, as they are made or pushed."""
        with pytest.raises(Exception) as raised:
            self.workflow({"workflow": None, "as": "refused", "steps": step["workflow_refused"]})
        self._expect_raised(raised.value, step)

    def batch_on_refused(self, step: dict[str, Any]) -> None:
        """A callback for an event no batch has, refused as it is added."""
        with pytest.raises(Exception) as raised:
            cogworker.Batch("refused").on(step["batch_on_refused"], "ConformanceEcho")
        self._expect_raised(raised.value, step)

    def batch_status(self, step: dict[str, Any]) -> None:
        status = self.api.batch(self.jids[step["batch_status"]])
        assert {k: status[k] for k in step["has"]} == step["has"], status
        if "parent" in step:
            assert status["parent"] == self.jids[step["parent"]], status

    def await_batch(self, step: dict[str, Any]) -> None:
        bid = self.jids[step["await_batch"]]
        reached = lambda: self.api.batch(bid)["state"] == step["state"]  # noqa: E731
        wait_for(f"batch {step['await_batch']} {step['state']}", reached)

    def callback_result(self, step: dict[str, Any]) -> None:
        status, *args = self.client.result(self.jids[step["callback_result"]])
        assert {k: status[k] for k in step["status_has"]} == step["status_has"], status
        assert args == step["args"]

    def start_worker(self, step: dict[str, Any]) -> None:
        given = step["start_worker"] if isinstance(step["start_worker"], dict) else {}
        hooks = None
        if "hooks" in given or "client_middleware" in given:
            hooks = cogworker.Hooks()
            _install_hooks(given.get("hooks", []), hooks, "own")
        if given.get("client_middleware") == "stamp_then_raise":
            assert hooks is not None
            hooks.client_middleware.add(_stamp_then_raise)
        if "periodic" in given:
            entry = given["periodic"]
            cogworker.periodic(entry["cron"], entry["class"], entry["args"], queue=entry["queue"])
        self.worker = cogworker.Worker(concurrency=2, hooks=hooks)
        self.worker.start()

    def on_event(self, step: dict[str, Any]) -> None:
        hooks = cogworker.Hooks()
        if "error" not in step:
            hooks.on(step["on_event"])(lambda: None)
            return
        with pytest.raises(cogworker.Error) as raised:
            hooks.on(step["on_event"])
        self._expect_error(raised.value, step["error"])

    def await_worker_stopped(self, step: dict[str, Any]) -> None:
        assert self.worker is not None
        assert self.worker.wait(step["await_worker_stopped"]), "the worker did not stop"

    def await_queued(self, step: dict[str, Any]) -> None:
        def queued() -> list[dict[str, Any]]:
            return [
                job
                for job in self.api.queue_jobs(step["await_queued"])
                if job["class"] == step["class"] and job["args"] == step["args"]
            ]

        for job in wait_for(f"a {step['class']} job on {step['await_queued']}", queued):
            if "lacks" in step:
                assert step["lacks"] not in job, job
            assert {k: job.get(k) for k in step.get("has", {})} == step.get("has", {}), job

    def await_queue_size(self, step: dict[str, Any]) -> None:
        queue = step["await_queue_size"]
        wait_for(f"{step['is']} jobs on {queue}", lambda: self.api.queue(queue)["size"] == step["is"])

    def expect_no_hooks(self, step: dict[str, Any]) -> None:
        with _calls_lock:
            calls = [c for c in HOOK_CALLS if c["registry"] == step["expect_no_hooks"]["registry"]]
        assert calls == [], calls

    def await_status(self, step: dict[str, Any]) -> None:
        jid = self.jids[step["await_status"]]
        wait_for(f"{jid} {step['is']}", lambda: self.client.status(jid) == step["is"])

    def progress(self, step: dict[str, Any]) -> None:
        jid = self.jids[step["progress"]]

        def reported() -> bool:
            report = self.api.progress(jid) or {}
            return all(report.get(field) == wanted for field, wanted in step["has"].items())

        # Written at most 250 ms after it was made.
        wait_for(f"{jid}'s report", reported)

    def watch(self, step: dict[str, Any]) -> None:
        events = list(self.api.watch(self.jids[step["watch"]], timeout=step["seconds"]))
        percents = [value["percent"] for kind, value in events if kind == "progress"]
        assert percents == sorted(percents) and percents[-1] == step["last_percent"], events
        kind, end = events[-1]
        assert kind == "finished", events
        for field, wanted in step["finished_has"].items():
            assert end[field] == wanted, (field, end)

    def _client(self, step: dict[str, Any]) -> cogworker.Client:
        return cogworker.Client() if step.get("new_client") else self.client

    def status(self, step: dict[str, Any]) -> None:
        assert self._client(step).status(self.jids[step["status"]]) == step["is"]

    def api_call(self, step: dict[str, Any]) -> None:
        api = cogworker.Api() if step.get("new_api") else self.api
        args = step.get("args", [])
        if "raises" in step:
            with pytest.raises(Exception) as raised:
                getattr(api, step["api_call"])(*args)
            self._expect_raised(raised.value, step)
            return
        answer = getattr(api, step["api_call"])(*args)
        if "is" in step:
            assert answer == step["is"], answer
            return
        assert answer is not None
        assert {k: answer[k] for k in step.get("has", {})} == step.get("has", {}), answer

    @staticmethod
    def _expect_raised(error: BaseException, step: dict[str, Any]) -> None:
        assert _last_segment(type(error).__name__) == step["raises"], repr(error)
        assert step.get("message_has", "") in str(error), str(error)

    def result(self, step: dict[str, Any]) -> None:
        jid = self.jids[step["result"]]
        if "failed" in step:
            with pytest.raises(cogworker.JobFailed) as failed:
                self.client.result(jid)
            expected = step["failed"]
            assert failed.value.jid == jid
            assert failed.value.status == expected["status"]
            assert _last_segment(failed.value.error_class) == expected["error_class"]
            assert failed.value.error_message == expected["error_message"]
            for text in expected.get("message_has", []):
                assert text in str(failed.value), str(failed.value)
            return
        started = time.monotonic()
        outcome = self._client(step).result(jid, wait=step.get("wait"))
        assert time.monotonic() - started < step.get("within", 600), "answered late"
        if "pending" in step:
            assert outcome == cogworker.Pending(jid, step["pending"])
        else:
            assert outcome == step["value"]

    def await_hooks(self, step: dict[str, Any]) -> None:
        for expected in step["await_hooks"]:
            wanted = {**expected, "jid": self.jids[expected["jid"]]}

            def seen(wanted: dict[str, Any] = wanted) -> bool:
                with _calls_lock:
                    calls = list(HOOK_CALLS)
                return any(
                    all(
                        (_last_segment(c.get(k)) if k in ("error_class", "raised_class") else c.get(k)) == v
                        for k, v in wanted.items()
                    )
                    for c in calls
                )

            wait_for(f"hook call {wanted} (seen: {HOOK_CALLS})", seen)

    def expect_trail(self, step: dict[str, Any]) -> None:
        # Awaited: a handler may still be writing its last entry.
        try:
            wait_for("the trail", lambda: step["expect_trail"] == TRAIL)
        except AssertionError:
            pass
        assert step["expect_trail"] == TRAIL

    def expect_connections(self, step: dict[str, Any]) -> None:
        spec = step["expect_connections"]
        before = self._connections_received()
        for inner in spec["during"]:
            self.step(inner)
        # The redis-cli asking counts itself once.
        opened = self._connections_received() - before - 1
        assert opened <= spec["at_most"], f"{opened} connections opened"

    def _connections_received(self) -> int:
        stats = self.server.cli_raw("INFO", "stats")
        line = next(x for x in stats.splitlines() if x.startswith("total_connections_received:"))
        return int(line.split(":")[1])

    def configure(self, step: dict[str, Any]) -> None:
        with pytest.raises(cogworker.Error) as raised:
            cogworker.configure(**_host_value(step["configure"]))
        self._expect_error(raised.value, step["error"])

    def periodic(self, step: dict[str, Any]) -> None:
        entry = _host_value(step["periodic"])
        handler = OBJECTS[entry["class"]] if entry.get("object") else entry["class"]

        def register() -> str:
            options = {name: entry.get(name) for name in ("tz", "queue", "retry")}
            return cogworker.periodic(entry["cron"], handler, entry.get("args", ()), **options)

        if "error" in step:
            with pytest.raises(cogworker.Error) as raised:
                register()
            self._expect_error(raised.value, step["error"])
            return
        try:
            pjid = register()
            registered = next(e for e in _periodic.entries() if e["class"] == entry["class"])
        finally:
            _periodic.clear()
        assert {k: registered.get(k) for k in step["has"]} == step["has"], registered
        assert pjid == step["pjid"]

    @staticmethod
    def _expect_error(error: BaseException, expected: dict[str, Any]) -> None:
        assert type(error).__name__ == expected["class"], repr(error)
        assert getattr(error, "field", None) == expected["field"], repr(error)
        if "value" in expected:
            assert getattr(error, "value", None) == expected["value"], repr(error)

    def testing(self, step: dict[str, Any]) -> None:
        mode = {"fake": testing.fake, "inline": testing.inline}[step["testing"]]
        with mode():
            for inner in step["steps"]:
                self.step(inner)

    def perform_one(self, step: dict[str, Any]) -> None:
        if "raises" in step:
            with pytest.raises(Exception) as raised:
                testing.perform_one(step["perform_one"])
            self._expect_raised(raised.value, step)
            return
        testing.perform_one(step["perform_one"])

    def drain(self, step: dict[str, Any]) -> None:
        assert testing.drain(step["drain"]) == step["ran"]

    def expect_recorded(self, step: dict[str, Any]) -> None:
        for class_name, count in step["expect_recorded"].items():
            jobs = testing.jobs_for(class_name)
            assert len(jobs) == count, f"{class_name}: {jobs}"
            assert {k: jobs[-1].get(k) for k in step.get("fields", {})} == step.get("fields", {}), jobs[-1]
            assert all(field in jobs[-1] for field in step.get("has", [])), jobs[-1]

    def cli_help(self, step: dict[str, Any]) -> None:
        shown = subprocess.run(
            [sys.executable, "-m", "cogworker", step["cli_help"], "--help"],
            capture_output=True,
            text=True,
            check=True,
            env=worker_env(self.server),
            cwd=HERE,
        ).stdout
        flags = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][a-z-]*)", shown))
        missing = [flag for flag in step["lists"] if flag not in flags]
        assert not missing, f"{missing} not in:\n{shown}"

    def cli_worker(self, step: dict[str, Any]) -> None:
        command = [sys.executable, "-m", "cogworker", "worker", "conformance_jobs", *step["cli_worker"]]
        proc = subprocess.Popen(command, env=worker_env(self.server), cwd=HERE, stderr=subprocess.DEVNULL)
        try:
            api = cogworker.Api()
            [process] = wait_for("the worker registered", api.processes)
            assert {k: process["info"][k] for k in step["process"]} == step["process"]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
        finally:
            proc.kill()
            proc.wait()

    def cli_worker_fails(self, step: dict[str, Any]) -> None:
        ran = subprocess.run(
            [sys.executable, "-m", "cogworker", "worker", step["cli_worker_fails"], *step.get("flags", [])],
            capture_output=True,
            text=True,
            env=worker_env(self.server),
            cwd=HERE,
            timeout=60,
        )
        assert ran.returncode == step["exit"], ran.stderr
        assert step["stderr_has"] in ran.stderr, ran.stderr
        for text in step.get("stderr_lacks", []):
            assert text not in ran.stderr, ran.stderr

    def cli_serve(self, step: dict[str, Any]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            err_path = os.path.join(tmp, "stderr")
            with open(err_path, "w") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "cogworker", step["cli_serve"], "--port", "0"],
                    env=worker_env(self.server),
                    cwd=HERE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                )
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                for text in step["line_has"]:
                    assert text in line, line
                proc.send_signal(getattr(signal, f"SIG{step['send']}"))
                assert proc.wait(15) == step["exit"]
                with open(err_path) as err_text:
                    assert step["stderr_has"] in err_text.read()
            finally:
                proc.kill()
                proc.wait()
                assert proc.stdout is not None
                proc.stdout.close()

    def traced(self, step: dict[str, Any]) -> None:
        from opentelemetry import trace

        with trace.get_tracer("conformance").start_as_current_span(step["traced"]):
            for inner in step["steps"]:
                self.step(inner)

    def _job_span(self, alias: str, kind: str) -> dict[str, Any] | None:
        jid = self.jids[alias]
        found = [
            s
            for s in RecordedSpans.all()
            if s["kind"] == kind and s["attributes"].get("messaging.message.id") == jid
        ]
        return found[0] if found else None

    def expect_span(self, step: dict[str, Any]) -> None:
        alias, kind = step["expect_span"], step["kind"]
        span = wait_for(f"the {kind} span of {alias}", lambda: self._job_span(alias, kind))
        assert span["name"] == step["name"], span
        wanted = {k: self._bound(v) for k, v in step.get("attributes", {}).items()}
        assert {k: span["attributes"].get(k) for k in wanted} == wanted, span
        if step.get("parent") == "producer":
            parent = self._job_span(alias, "producer")
            assert parent is not None and span["trace_id"] == parent["trace_id"], (span, parent)
        else:
            [parent] = [s for s in RecordedSpans.all() if s["name"] == step["parent"]]
        assert span["parent_span_id"] == parent["span_id"], (span, parent)
        if "status" in step:
            assert span["status"] == step["status"], span
        assert step.get("description_has", "") in span["description"], span
        if "events" in step:
            assert span["events"] == step["events"], span

    def _bound(self, text: str, also: dict[str, str] | None = None) -> str:
        """`text` with each `{name}` replaced by `also`'s value of that name
        or, failing that, by the jid of the job bound by that `as`."""
        return re.sub(r"\{(\w+)\}", lambda m: (also or {}).get(m[1]) or self.jids[m[1]], text)

    def carries_its_span(self, step: dict[str, Any]) -> None:
        jid = self.jids[step["carries_its_span"]]
        producer = self._job_span(step["carries_its_span"], "producer")
        assert producer is not None
        [job] = [job for job in self.api.queue_jobs("default") if job["jid"] == jid]
        # Version, trace id, span id; the flags are the SDK's.
        context = f"00-{producer['trace_id']}-{producer['span_id']}-"
        assert job["traceparent"].startswith(context), (job, producer)

    def cli_signals(self, step: dict[str, Any]) -> None:
        """A worker CLI sent each signal in turn: what it shows (as a
        process), logs and exits with after each."""
        with self._worker_cli("conformance_jobs", []) as (proc, logged):
            self._signal_in_turn(proc, step["cli_signals"], logged)

    def cli_run(self, step: dict[str, Any]) -> None:
        """The worker CLI run on an app, then each of `then` in turn."""
        with self._worker_cli(step["cli_run"], step["flags"]) as (proc, logged):
            self._run_in_turn(proc, step["then"], logged)

    @contextlib.contextmanager
    def _worker_cli(
        self, app: str, flags: list[str]
    ) -> Iterator[tuple[subprocess.Popen[bytes], Callable[[], str]]]:
        """The worker CLI running `app`, and what its stderr has said so
        far (read anew at each call); killed at the end if it still runs."""
        with tempfile.TemporaryDirectory() as tmp:
            log_path = os.path.join(tmp, "worker.log")
            command = [sys.executable, "-m", "cogworker", "worker", app, *flags]
            with open(log_path, "w") as log:
                proc = subprocess.Popen(command, env=worker_env(self.server), cwd=HERE, stderr=log)

            def logged() -> str:
                with open(log_path) as f:
                    return f.read()

            try:
                yield proc, logged
            finally:
                proc.kill()
                proc.wait()

    def _run_in_turn(
        self, proc: subprocess.Popen[bytes], steps: list[dict[str, Any]], logged: Callable[[], str]
    ) -> None:
        killed: dict[str, str] = {}  # "pid": the child kill_child killed
        try:
            self._each_in_turn(proc, steps, logged, killed)
        except AssertionError as failed:
            raise AssertionError(f"{failed}\nthe log:\n{logged()}") from None

    def _each_in_turn(
        self,
        proc: subprocess.Popen[bytes],
        steps: list[dict[str, Any]],
        logged: Callable[[], str],
        killed: dict[str, str],
    ) -> None:
        for then in steps:
            if "log_has" in then:
                for text in then["log_has"]:
                    text = self._bound(text, killed)
                    wait_for(f"{text!r} in the log", lambda text=text: text in logged())
            elif "log_times" in then:
                for text, times in then["log_times"].items():
                    counted = lambda t=text, n=times: logged().count(t) == n  # noqa: E731
                    wait_for(f"{text!r} {times} times in the log", counted)
            elif "kill_child" in then:
                child = then["kill_child"]
                started = re.search(rf"started worker process {child} of \d+ \(pid (\d+)\)", logged())
                assert started, logged()
                killed["pid"] = started[1]
                os.kill(int(started[1]), signal.SIGKILL)
            elif "send" in then:
                proc.send_signal(getattr(signal, f"SIG{then['send']}"))
                assert proc.wait(30) == then["exit"], logged()
            else:
                self.step(then)

    @staticmethod
    def _signal_in_turn(
        proc: subprocess.Popen[bytes], signals: list[dict[str, Any]], logged: Callable[[], str]
    ) -> None:
        api = cogworker.Api()
        wait_for("the worker registered", api.processes)
        for signalled in signals:
            proc.send_signal(getattr(signal, "SIG" + signalled["send"]))
            for key, value in signalled.get("process", {}).items():
                shown = lambda key=key, value=value: api.processes()[0][key] == value  # noqa: E731
                wait_for(f"the process's {key} is {value}", shown)
            for text in signalled.get("log_has", []):
                wait_for(f"{text!r} in the log", lambda text=text: text in logged())
            if "exit" in signalled:
                assert proc.wait(15) == signalled["exit"], logged()

    def cli_admin(self, step: dict[str, Any]) -> None:
        ran = subprocess.run(
            [sys.executable, "-m", "cogworker", *step["cli_admin"]],
            capture_output=True,
            text=True,
            env=worker_env(self.server),
            cwd=HERE,
            timeout=60,
        )
        assert ran.returncode == step["exit"], (ran.stdout, ran.stderr)
        for text in _listed(step.get("stdout_has", [])):
            # Help texts wrap: spaces and line breaks compare as one space.
            assert " ".join(text.split()) in " ".join(ran.stdout.split()), ran.stdout
        for text in step.get("stdout_lacks", []):
            assert text not in ran.stdout, ran.stdout
        assert step.get("stderr_has", "") in ran.stderr, ran.stderr
        for text in step.get("stderr_lacks", []):
            assert text not in ran.stderr, ran.stderr

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            assert self.worker.wait(15), "worker did not stop"
            self.worker.join()


class RecordedSpans:
    """The spans recorded in this process, for the scenarios with
    "tracing": the OpenTelemetry SDK's provider (one another test module
    set first is used as it is: OpenTelemetry takes the first set) gets an
    in-memory exporter of ours."""

    exporter: Any = None

    @classmethod
    def cleared(cls) -> Any:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        if cls.exporter is None:
            if not isinstance(trace.get_tracer_provider(), TracerProvider):
                trace.set_tracer_provider(TracerProvider())
            cls.exporter = InMemorySpanExporter()
            trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(cls.exporter))  # type: ignore[attr-defined]
        cls.exporter.clear()
        return cls.exporter

    @classmethod
    def all(cls) -> list[dict[str, Any]]:
        """Each finished span as the scenarios describe one."""
        return [
            {
                "name": span.name,
                "kind": span.kind.name.lower(),
                "attributes": dict(span.attributes or {}),
                "trace_id": f"{span.context.trace_id:032x}",
                "span_id": f"{span.context.span_id:016x}",
                "parent_span_id": f"{span.parent.span_id:016x}" if span.parent else None,
                "status": span.status.status_code.name,
                "description": span.status.description or "",
                "events": [event.name for event in span.events],
            }
            for span in cls.exporter.get_finished_spans()
        ]


def _listed(texts: str | list[str]) -> list[str]:
    """One text or a list of them."""
    return [texts] if isinstance(texts, str) else texts


STEPS = {
    "push": Run.push,
    "push_each": Run.push_each,
    "push_raw": Run.push_raw,
    "await_buried": Run.await_buried,
    "start_worker": Run.start_worker,
    "await_status": Run.await_status,
    "progress": Run.progress,
    "watch": Run.watch,
    "status": Run.status,
    "result": Run.result,
    "await_hooks": Run.await_hooks,
    "expect_trail": Run.expect_trail,
    "expect_connections": Run.expect_connections,
    "configure": Run.configure,
    "periodic": Run.periodic,
    "testing": Run.testing,
    "expect_recorded": Run.expect_recorded,
    "cli_help": Run.cli_help,
    "cli_worker": Run.cli_worker,
    "api_call": Run.api_call,
    "cli_admin": Run.cli_admin,
    "cli_signals": Run.cli_signals,
    "await_queued": Run.await_queued,
    "await_worker_stopped": Run.await_worker_stopped,
    "on_event": Run.on_event,
    "cli_worker_fails": Run.cli_worker_fails,
    "cli_serve": Run.cli_serve,
    "cli_run": Run.cli_run,
    "traced": Run.traced,
    "expect_span": Run.expect_span,
    "carries_its_span": Run.carries_its_span,
    "await_queue_size": Run.await_queue_size,
    "expect_no_hooks": Run.expect_no_hooks,
    "batch": Run.batch,
    "batch_status": Run.batch_status,
    "await_batch": Run.await_batch,
    "callback_result": Run.callback_result,
    "workflow": Run.workflow,
    "await_retry": Run.await_retry,
    "push_later": Run.push_later,
    "cancel": Run.cancel,
    "limiter": Run.limiter,
    "perform_one": Run.perform_one,
    "drain": Run.drain,
    "acquire": Run.acquire,
    "release": Run.release,
    "within_limit": Run.within_limit,
    "await_scheduled": Run.await_scheduled,
    "same_jid": Run.same_jid,
    "workflow_refused": Run.workflow_refused,
    "batch_on_refused": Run.batch_on_refused,
}


@pytest.fixture
def clean() -> Iterator[None]:
    _hooks.reset()
    _periodic.clear()
    TRAIL.clear()
    HOOK_CALLS.clear()
    testing.clear()
    yield
    _hooks.reset()
    _periodic.clear()
    testing.clear()
    _settings.reset()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenario(scenario: dict[str, Any], redis_server: RedisServer, clean: None) -> None:
    _settings.reset()
    url = "redis://127.0.0.1:1/0" if scenario.get("redis") == "unreachable" else redis_server.url
    cogworker.configure(redis_url=url, **FAST)
    for name in scenario.get("server_middleware", []):
        cogworker.server_middleware.add(server_middleware(name))
    if "tenant" in scenario.get("client_middleware", []):
        cogworker.client_middleware.add(tenant_middleware)
    _install_hooks(scenario.get("hooks", []), cogworker.hooks, "process")
    if scenario.get("tracing"):
        RecordedSpans.cleared()
    run = Run(redis_server)
    try:
        for step in scenario["steps"]:
            run.step(step)
    finally:
        run.stop()
