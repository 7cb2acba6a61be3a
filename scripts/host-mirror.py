#!/usr/bin/env python3
"""How many lines of the Python and Ruby packages mirror each other: code
both hosts carry for one behaviour that is not a language idiom (issue
#29 counts them). The behaviours, and the functions and classes in each
host that implement them, are listed below by hand; the script counts their
lines (blank and comment-only lines left out) and fails if a listed name is
gone, so the list is kept up to date as code moves into the core.

    python3 scripts/host-mirror.py [-v]
"""

from __future__ import annotations

import ast
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PY = "python/cogworker/"
RB = "ruby/lib/cogworker/"

# behaviour: (Python "file:Qualified.name" or "file:*", Ruby "file:name" or "file:*")
MIRRORED: dict[str, tuple[list[str], list[str]]] = {
    # The slot and events loops and the settle rule are the core's
    # (host::slot); what is left is each host's thread handling.
    "slot threads": (
        ["worker.py:Worker._slot"],
        ["runner.rb:start_slot", "runner.rb:replace_slot"],
    ),
    "running a job": (
        ["worker.py:Worker._perform", "worker.py:Worker._perform_coroutine", "worker.py:Worker._call"],
        ["runner.rb:perform"],
    ),
    "failure shaping": (
        [
            "worker.py:Worker._describe",
            "worker.py:describe_error",
            "worker.py:app_traceback",
            "worker.py:_safe",
            "worker.py:_text",
            "worker.py:qualified_name",
        ],
        ["runner.rb:describe", "runner.rb:retry_delay", "runner.rb:safe", "runner.rb:utf8"],
    ),
    "worker start, stop, join and dump": (
        [
            "worker.py:Worker.__init__",
            "worker.py:Worker.start",
            "worker.py:Worker.wait",
            "worker.py:Worker.join",
            "worker.py:Worker.run",
            "worker.py:Worker.dump",
            "worker.py:Worker.signal",
            "worker.py:Worker.exit_at_once",
            "worker.py:Worker._log_stacks",
            "worker.py:Worker._stop_at_exit",
        ],
        [
            "runner.rb:initialize",
            "runner.rb:start",
            "runner.rb:wait",
            "runner.rb:join",
            "runner.rb:dump",
            "runner.rb:signal",
            "runner.rb:exit_at_once?",
            "runner.rb:log_stacks",
            "runner.rb:resolve_periodic_classes",
        ],
    ),
    "worker command: settings from flags, serve": (
        [
            "cli.py:add_worker_arguments",
            "cli.py:worker_settings",
            "cli.py:serve",
            "cli.py:serve_processes",
            "cli.py:run_worker",
        ],
        ["cli.rb:setting_flags", "cli.rb:run_worker", "cli.rb:run_processes", "signal_pipe.rb:*"],
    ),
    "web and metrics commands": (["cli.py:run_web"], ["admin.rb:web"]),
    # The parent's loop is the core's (Supervisor::run).
    "-p N: fork and forward signals": (["_processes.py:*"], ["processes.rb:*"]),
    "hooks: registry, dispatch, periodic push": (
        [
            "_hooks.py:Hooks.on",
            "_hooks.py:Hooks.report_error",
            "_hooks.py:Hooks.periodic_push",
            "_hooks.py:Hooks.dispatch",
            "_hooks.py:_call_safely",
            "_hooks.py:JobDied",
        ],
        [
            "hooks.rb:on",
            "hooks.rb:report_error",
            "hooks.rb:periodic_push",
            "hooks.rb:dispatch",
            "hooks.rb:safely",
            "hooks.rb:JobDied",
        ],
    ),
    "middleware chains": (
        ["_hooks.py:_Chain", "_hooks.py:MiddlewareChain", "_hooks.py:ClientMiddlewareChain"],
        ["hooks.rb:MiddlewareChain"],
    ),
    # The order (client middleware, then a testing mode's record or the
    # round trip) is the core's (host::push_through).
    "push: options, tracing, the middleware as the core calls it": (
        [
            "client.py:given",
            "client.py:Client.enqueue_many",
            "client.py:Client.push_job",
            "client.py:Client._push",
            "client.py:Client._apply",
            "client.py:Client.push_bulk",
        ],
        [
            "client.rb:options",
            "client.rb:push_bulk",
            "client.rb:push_job",
            "client.rb:push_payloads",
            "client.rb:push_through",
            "client.rb:middleware",
        ],
    ),
    "result and status": (
        ["client.py:Client.result", "client.py:Client.status", "client.py:result_of"],
        ["client.rb:result", "client.rb:status", "errors.rb:result_of"],
    ),
    "testing modes": (
        [
            "testing.py:_Mode",
            "testing.py:run_inline",
            "testing.py:RecordedJobs",
            "testing.py:perform_one",
            "testing.py:drain",
            "testing.py:drain_all",
            "testing.py:result",
            "testing.py:_perform",
        ],
        [
            "testing/modes.rb:switch",
            "testing/modes.rb:run_inline",
            "testing/modes.rb:RecordedJobs",
            "testing/modes.rb:perform_one",
            "testing/modes.rb:drain",
            "testing/modes.rb:drain_all",
            "testing/modes.rb:result",
            "testing/modes.rb:perform",
        ],
    ),
    # The definition, its checks and the waits are the core's
    # (host::HostLimiter); the kinds' constructors are each host's.
    "limiter objects": (
        [
            "limiter.py:Limiter.__init__",
            "limiter.py:Limiter.concurrent",
            "limiter.py:Limiter.bucket",
            "limiter.py:Limiter.window",
            "limiter.py:Limiter.leaky",
            "limiter.py:Limiter.acquire",
        ],
        [
            "limiter.rb:concurrent",
            "limiter.rb:bucket",
            "limiter.rb:window",
            "limiter.rb:leaky",
            "limiter.rb:initialize",
            "limiter.rb:acquire",
        ],
    ),
    # The counting, the callbacks' templates and the workflow's batches are
    # the core's (batch.rs, workflow.rs); each host builds callback and
    # step fields, takes the parent from its enclosing block, and converts
    # what a push returns.
    "batch and workflow objects": (
        [
            "batch.py:Batch.on",
            "batch.py:Batch.callback_jids",
            "batch.py:Batch.open",
            "workflow.py:step",
            "workflow.py:group",
            "workflow.py:chord",
            "workflow.py:Workflow.on",
            "workflow.py:Workflow.push",
        ],
        [
            "batch.rb:on",
            "batch.rb:callback_jids",
            "batch.rb:open",
            "workflow.rb:step",
            "workflow.rb:group",
            "workflow.rb:chord",
            "workflow.rb:on",
            "workflow.rb:push",
        ],
    ),
    "tracing": (["_tracing.py:*"], ["tracing.rb:*"]),
    "periodic entries": (["_periodic.py:*"], ["periodic.rb:*"]),
}


def code_lines(lines: list[str], comment: str) -> int:
    """Lines that hold code: not blank, not only a comment (Python's
    docstrings were blanked already: they are comments, as Ruby's are)."""
    return sum(1 for line in lines if line.strip() and not line.strip().startswith(comment))


def without_docstrings(text: str) -> list[str]:
    """``text``'s lines with its docstrings' lines blank."""
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        body = getattr(node, "body", None) if isinstance(node, kinds) else None
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            for i in range(first.lineno - 1, first.end_lineno or first.lineno):
                lines[i] = ""
    return lines


def python_symbol(path: str, name: str) -> list[str]:
    with open(path) as f:
        text = f.read()
    lines = without_docstrings(text)
    if name == "*":
        return lines
    nodes: list[ast.stmt] = ast.parse(text).body
    found: ast.stmt | None = None
    for part in name.split("."):
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        found = next((n for n in nodes if isinstance(n, kinds) and n.name == part), None)
        if found is None:
            raise LookupError(f"{path}: no {name}")
        nodes = getattr(found, "body", [])
    assert found is not None and found.end_lineno is not None
    first = min([found.lineno, *(d.lineno for d in getattr(found, "decorator_list", []))])
    return lines[first - 1 : found.end_lineno]


def ruby_symbol(path: str, name: str) -> list[str]:
    with open(path) as f:
        lines = f.read().splitlines()
    if name == "*":
        return lines
    quoted = re.escape(name)
    start = re.compile(rf"^(\s*)(?:def (?:self\.)?{quoted}(?![\w?!])|(?:class|module) {quoted}\b)")
    for i, line in enumerate(lines):
        match = start.match(line)
        if not match:
            continue
        if re.search(r"\)\s*=\s|^\s*def [\w.?!]+\s*=\s", line):  # an endless def
            return [line]
        end = re.compile(rf"^{match.group(1)}end\b")
        for j in range(i + 1, len(lines)):
            if end.match(lines[j]):
                return lines[i : j + 1]
    raise LookupError(f"{path}: no {name}")


def count(host_root: str, symbols: list[str], comment: str, python: bool) -> int:
    total = 0
    for symbol in symbols:
        file, name = symbol.split(":", 1)
        path = os.path.join(ROOT, host_root, file)
        lines = python_symbol(path, name) if python else ruby_symbol(path, name)
        total += code_lines(lines, comment)
    return total


def main() -> int:
    verbose = "-v" in sys.argv
    py_total = rb_total = 0
    for behaviour, (py_symbols, rb_symbols) in MIRRORED.items():
        py = count(PY, py_symbols, "#", True)
        rb = count(RB, rb_symbols, "#", False)
        py_total, rb_total = py_total + py, rb_total + rb
        if verbose:
            print(f"{py:5} {rb:5}  {behaviour}")
    print(f"mirrored lines: Python {py_total} + Ruby {rb_total} = {py_total + rb_total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
