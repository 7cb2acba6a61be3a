"""A job pushed from Python runs in a Ruby worker and the reverse, and Rust
pushes to both: arguments survive exactly (unicode, big integers, nested
structures, null). As in production, each language's workers take their own
queue ("ruby", "python"): a worker that takes a class it does not have
fails the job like any other failure."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

import cogworker
from cogworker.testing import RedisServer, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ARGS = [
    "héllo ✓ 🚀",
    2**70,
    -(2**65),
    1.5,
    None,
    True,
    {"nested": [1, None, {"x": [2**64, "ü"]}]},
    [],
    "",
]


def results(path: str) -> list[list[object]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def wait_for_results(path: str, count: int, timeout: float = 20.0) -> list[list[object]]:
    wait_for(f"{count} results in {path}", lambda: len(results(path)) >= count, timeout, interval=0.05)
    return results(path)


@pytest.fixture
def env(tmp_path) -> Iterator[dict[str, str]]:
    with RedisServer() as server:
        yield {
            **os.environ,
            "COGWORKER_REDIS_URL": server.url,
            "CROSS_RESULTS": str(tmp_path / "results.jsonl"),
            "PYTHONPATH": HERE,
        }


def start(cmd: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, env=env, cwd=HERE, stdout=out, stderr=out)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0


@contextlib.contextmanager
def both_workers(env: dict[str, str], log: str) -> Iterator[None]:
    """A Ruby worker on queue "ruby" and a Python worker on queue "python",
    both stopped with TERM (exit 0) afterwards."""
    ruby_lib = os.path.join(ROOT, "ruby/lib")
    ruby_worker = [
        os.path.join(ROOT, "ruby/exe/cogworker"),
        "-r",
        os.path.join(HERE, "ruby_jobs.rb"),
        "-q",
        "ruby",
    ]
    ruby = start(["ruby", "-I", ruby_lib, *ruby_worker], env, log)
    python = start([sys.executable, "-m", "cogworker", "worker", "py_jobs", "-q", "python"], env, log)
    try:
        yield
    finally:
        stop(ruby)
        stop(python)


def test_python_ruby_and_rust_exchange_jobs(env: dict[str, str], tmp_path) -> None:
    log = str(tmp_path / "workers.log")
    ruby = start(
        [
            "ruby",
            "-I",
            os.path.join(ROOT, "ruby/lib"),
            os.path.join(ROOT, "ruby/exe/cogworker"),
            "-r",
            os.path.join(HERE, "ruby_jobs.rb"),
            "-c",
            "2",
            "-q",
            "ruby",
        ],
        env,
        log,
    )
    python = start(
        [sys.executable, "-m", "cogworker", "worker", "py_jobs", "-c", "2", "-q", "python"], env, log
    )
    try:
        client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
        client.enqueue("CrossEcho", *ARGS, queue="ruby")  # Python -> Ruby
        ruby_push = (
            'require "cogworker"; Cogworker::Client.push("PyEcho", JSON.parse(ARGV[0]), queue: "python")'
        )
        subprocess.run(  # Ruby -> Python
            [
                "ruby",
                "-I",
                os.path.join(ROOT, "ruby/lib"),
                "-e",
                ruby_push,
                json.dumps(ARGS),
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        push = os.path.join(ROOT, "target/debug/examples/push")
        for class_name, queue in (("CrossEcho", "ruby"), ("PyEcho", "python")):  # Rust -> both
            subprocess.run(
                [push, class_name, json.dumps(ARGS), queue],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        got = wait_for_results(env["CROSS_RESULTS"], 4)
    finally:
        stop(ruby)
        stop(python)
    by_language = sorted(row[0] for row in got)
    with open(log, encoding="utf-8", errors="replace") as f:
        assert by_language == ["python", "python", "ruby", "ruby"], f.read()
    for row in got:
        assert row[1:] == ARGS, row


def test_fields_client_middleware_adds_reach_the_other_languages_server_middleware(
    env: dict[str, str], tmp_path
) -> None:
    """Python's client middleware stamps a job for Ruby, Ruby's stamps one
    for Python; each side's server middleware sees the field, on the first
    run and again after the retry."""
    log = str(tmp_path / "workers.log")
    ruby_lib = os.path.join(ROOT, "ruby/lib")
    with both_workers(env, log):
        client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
        cogworker.client_middleware.add(stamp := lambda job: {**job, "tenant": "acme"})
        try:
            client.enqueue("CrossTenant", queue="ruby")
        finally:
            cogworker.client_middleware.remove(stamp)
        ruby_push = (
            'require "cogworker"\n'
            "class Stamp\n  def call(_class, job, _queue, _pool)\n"
            "    job['tenant'] = 'globex'\n    yield\n  end\nend\n"
            "Cogworker.config.client_middleware { |chain| chain.add Stamp }\n"
            'Cogworker::Client.push("PyTenant", [], queue: "python")'
        )
        subprocess.run(
            ["ruby", "-I", ruby_lib, "-e", ruby_push], env=env, check=True, stdout=subprocess.DEVNULL
        )
        got = wait_for_results(env["CROSS_RESULTS"], 4, timeout=60.0)  # retries wait for the scheduler
    with open(log, encoding="utf-8", errors="replace") as f:
        assert sorted(got) == [
            ["python-middleware", "globex", 0],
            ["python-middleware", "globex", 1],
            ["ruby-middleware", "acme", 0],
            ["ruby-middleware", "acme", 1],
        ], f.read()


def test_a_result_crosses_languages(env: dict[str, str], tmp_path) -> None:
    """Python pushes with result_ttl to a Ruby worker and reads what Ruby's
    perform returned; Ruby does the same with a Python handler."""
    log = str(tmp_path / "workers.log")
    ruby_lib = os.path.join(ROOT, "ruby/lib")
    with both_workers(env, log):
        client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
        jid = client.enqueue("CrossSum", 2, 2**70, queue="ruby", result_ttl=60)
        from_ruby = client.result(jid, wait=30)
        ruby_reads = (
            'require "cogworker"\n'
            'jid = Cogworker::Client.push("PySum", [1, 2], queue: "python", result_ttl: 60)\n'
            "puts JSON.generate(Cogworker::Client.result(jid, wait: 30))"
        )
        out = subprocess.run(
            ["ruby", "-I", ruby_lib, "-e", ruby_reads], env=env, check=True, capture_output=True, text=True
        ).stdout
    with open(log, encoding="utf-8", errors="replace") as f:
        assert from_ruby == {"sum": 2 + 2**70, "by": "ruby"}, f.read()
    assert json.loads(out.strip().splitlines()[-1]) == {"sum": 3, "by": "python"}


def test_python_cancels_a_job_running_in_ruby(env: dict[str, str], tmp_path) -> None:
    """A Ruby job told of a cancellation made from Python stops within a
    second, and is filed as cancelled, not retried."""
    log = str(tmp_path / "workers.log")
    with both_workers(env, log):
        client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
        jid = client.enqueue("CrossCancellable", queue="ruby", result_ttl=60)
        wait_for_results(env["CROSS_RESULTS"], 1)
        api = cogworker.Api(env["COGWORKER_REDIS_URL"])
        wait_for("it shows as busy", api.busy)
        asked = time.monotonic()
        assert client.cancel(jid) == "running"
        assert wait_for_results(env["CROSS_RESULTS"], 2, timeout=1) == [
            ["ruby", "started"],
            ["ruby", "stopped"],
        ]
        assert time.monotonic() - asked < 1.0
        wait_for("filed as cancelled", lambda: "stopped" in (api.result(jid) or {}).get("error_message", ""))
        assert client.status(jid) == "cancelled"
        assert api.set_size("retry") == 0


def test_a_trace_crosses_from_python_to_ruby(env: dict[str, str], tmp_path) -> None:
    """A push in a traced Python request; the Ruby worker's CONSUMER span
    is a child of the Python PRODUCER span (same trace id), and the
    engine's JSON `done` line names that trace. Ruby traces through the
    opentelemetry-api stand-in (ruby/test/tracing/otel_standin): the gem
    cannot be installed here."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # the only test here that sets one
    client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
    with trace.get_tracer("test").start_as_current_span("POST /checkout"):
        jid = client.enqueue("CrossEcho", "traced", queue="ruby")
    producer = next(s for s in exporter.get_finished_spans() if s.name == "send ruby")

    spans_file = tmp_path / "ruby_spans.jsonl"
    log = tmp_path / "ruby.log"
    ruby = start(
        [
            "ruby",
            "-I",
            os.path.join(ROOT, "ruby/test/tracing/otel_standin"),
            "-r",
            "opentelemetry",
            "-I",
            os.path.join(ROOT, "ruby/lib"),
            os.path.join(ROOT, "ruby/exe/cogworker"),
            "--json-logs",
            "-r",
            os.path.join(HERE, "ruby_jobs.rb"),
            "-q",
            "ruby",
        ],
        {**env, "OTEL_SPANS_FILE": str(spans_file)},
        str(log),
    )
    try:
        wait_for_results(env["CROSS_RESULTS"], 1)
        deadline = time.monotonic() + 20
        while not (spans_file.exists() and spans_file.read_text().strip()):
            assert time.monotonic() < deadline, "no Ruby span written"
            time.sleep(0.05)
    finally:
        stop(ruby)
    consumer = json.loads(spans_file.read_text().splitlines()[0])
    context = producer.get_span_context()
    trace_id = format(context.trace_id, "032x")
    assert consumer["kind"] == "CONSUMER" and consumer["attributes"]["messaging.message.id"] == jid
    assert consumer["trace_id"] == trace_id, "the Ruby span is in the Python trace"
    assert consumer["parent_id"] == format(context.span_id, "016x"), "a child of the Python PRODUCER span"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    done = [line for line in lines if line.get("message") == "done" and line.get("jid") == jid]
    assert done and done[0]["trace_id"] == trace_id, lines


def test_one_batch_spans_python_ruby_and_rust(env: dict[str, str], tmp_path) -> None:
    """Python opens a batch and pushes jobs for Ruby, Python and Rust
    workers into it; Ruby adds one more by its id; the batch completes
    once all have run, and its Ruby callback runs once with the status."""
    log = str(tmp_path / "workers.log")
    rust_results = str(tmp_path / "rust.txt")
    rust = start(
        [os.path.join(ROOT, "target/debug/examples/test_worker")],
        {**env, "TEST_RESULTS_FILE": rust_results, "TEST_NAMESPACE": "cogworker"},
        log,
    )
    try:
        with both_workers(env, log):
            api = cogworker.Api(env["COGWORKER_REDIS_URL"])
            client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
            batch = cogworker.Batch("across languages", api=api)
            batch.on("success", "CrossEcho", "batch done", queue="ruby")
            with batch:
                client.enqueue("CrossEcho", "to ruby", queue="ruby")
                client.enqueue("PyEcho", "to python", queue="python")
                client.enqueue("Account", "to-rust", 10, queue="default")
                ruby_adds = (
                    'require "cogworker"\n'
                    "Cogworker::Batch.new(bid: ARGV[0]).jobs do\n"
                    '  Cogworker::Client.push("PyEcho", ["from ruby"], queue: "python")\n'
                    "end"
                )
                subprocess.run(
                    ["ruby", "-I", os.path.join(ROOT, "ruby/lib"), "-e", ruby_adds, str(batch.bid)],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            got = wait_for_results(env["CROSS_RESULTS"], 4)

            def succeeded() -> bool:
                return (api.batch(str(batch.bid)) or {}).get("state") == "success"

            wait_for("the batch succeeded", succeeded)
            time.sleep(0.5)  # a second callback, were one pushed, would have run by now
            got = results(env["CROSS_RESULTS"])
    finally:
        stop(rust)
    with open(log, encoding="utf-8", errors="replace") as f:
        workers_log = f.read()
    callbacks = [row for row in got if row[0] == "ruby" and isinstance(row[1], dict)]
    assert len(callbacks) == 1, workers_log
    status = callbacks[0][1]
    assert (status["event"], status["total"], status["pending"], status["failures"]) == ("success", 4, 0, 0)
    assert callbacks[0][2:] == ["batch done"]
    jobs = sorted(tuple(row) for row in got if not isinstance(row[1], dict))
    assert jobs == [("python", "from ruby"), ("python", "to python"), ("ruby", "to ruby")], workers_log
    with open(rust_results, encoding="utf-8") as f:
        assert f.read().split() == ["to-rust"]


def test_a_chain_runs_a_python_then_a_ruby_then_a_rust_step(env: dict[str, str], tmp_path) -> None:
    """A workflow pushed from Python: PySum (Python) returns {"sum": 5}; the
    Ruby step takes it and returns 50; the Rust step takes 50 and returns
    51; a last Python step records 51. Each step ran once, each took the
    result of the one before, and the workflow succeeded."""
    log = str(tmp_path / "workers.log")
    rust = start(
        [os.path.join(ROOT, "target/debug/examples/test_worker")],
        {**env, "TEST_NAMESPACE": "cogworker"},
        log,
    )
    try:
        with both_workers(env, log):
            api = cogworker.Api(env["COGWORKER_REDIS_URL"])
            pushed = cogworker.Workflow(
                cogworker.step("PySum", 2, 3, queue="python"),
                cogworker.step("CrossTimesTen", "from ruby", takes_result=True, queue="ruby"),
                cogworker.step("Sum", takes_result=True, queue="default"),
                cogworker.step("PyEcho", "end", takes_result=True, queue="python"),
                description="three languages",
                api=api,
            ).push()
            wait_for_results(env["CROSS_RESULTS"], 1)

            def succeeded() -> bool:
                return (api.batch(pushed.id) or {}).get("state") == "success"

            wait_for("the workflow succeeded", succeeded)
            time.sleep(0.5)  # a step handed over twice would have run by now
            got = results(env["CROSS_RESULTS"])
    finally:
        stop(rust)
    with open(log, encoding="utf-8", errors="replace") as f:
        workers_log = f.read()
    assert got == [["python", 51, "end"]], workers_log
    status = api.batch(pushed.id)
    assert status is not None
    assert (status["total"], status["pending"], status["dead"]) == (4, 0, 0)


SINGLETON_RB = """
require "cogworker"
threads = Integer(ARGV[0]).times.map do |n|
  Thread.new { Cogworker::Client.push("CrossEcho", [n], queue: "ruby", key: "report:1", unique_for: 60) }
end
puts threads.map(&:value)
"""


def test_a_singleton_answers_pushes_from_three_languages_at_once_with_one_jid(env: dict[str, str]) -> None:
    """100 pushes of one singleton key at once, 34 from Python threads, 33
    from Ruby threads and 33 from Rust tasks (each language its own
    process): one job is queued, and every push answers with its jid."""
    ruby = subprocess.Popen(
        ["ruby", "-I", os.path.join(ROOT, "ruby/lib"), "-e", SINGLETON_RB, "33"],
        env=env,
        stdout=subprocess.PIPE,
    )
    rust = subprocess.Popen(
        [
            os.path.join(ROOT, "target/debug/examples/push"),
            "CrossEcho",
            "[0]",
            "ruby",
            json.dumps({"key": "report:1", "unique_for": 60}),
        ],
        env={**env, "PUSH_TIMES": "33"},
        stdout=subprocess.PIPE,
    )
    client = cogworker.Client(redis_url=env["COGWORKER_REDIS_URL"])
    with concurrent.futures.ThreadPoolExecutor(34) as pool:
        python_jids = list(
            pool.map(
                lambda n: client.enqueue("CrossEcho", n, queue="ruby", key="report:1", unique_for=60),
                range(34),
            )
        )
    ruby_out, _ = ruby.communicate(timeout=60)
    rust_out, _ = rust.communicate(timeout=60)
    assert ruby.returncode == 0 and rust.returncode == 0
    jids = python_jids + ruby_out.decode().split() + rust_out.decode().split()
    assert len(jids) == 100 and len(set(jids)) == 1, jids
    assert cogworker.Api(redis_url=env["COGWORKER_REDIS_URL"]).queue("ruby")["size"] == 1
