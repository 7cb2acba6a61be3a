#!/usr/bin/env python3
"""What the Python and Ruby packages each write: every function and method
of ``python/cogworker`` and ``ruby/lib`` is listed here, once, as one of

- a *decision* still written in both hosts: a rule, a default, an error
  text, a wire shape or a log line's fields, which can drift between them.
  The target is none: each moves into the core (``core/src/host``) or,
  where it is a language's shape, is pinned by a conformance scenario
  (``tests/conformance/scenarios.json``) and becomes an idiom;
- an *idiom*: the same behaviour in each language's shape (threads,
  ``fork`` and signal traps, OpenTelemetry calls, typed constructors,
  ``with`` blocks and ``jobs`` blocks, option parsers built from the
  core's tables). Reported, with no target.

The script fails (the lint stage runs it) when a function exists in
neither list, when a listed one is gone, or when one is listed twice: a
new function is classified as it lands. It prints the decisions left and
the lines of each list (blank and comment-only lines and docstrings left
out).

    python3 scripts/host-mirror.py [-v]
"""

from __future__ import annotations

import ast
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PY = "python/cogworker/"
RB = "ruby/lib/cogworker/"

# behaviour: (Python "file:Qualified.name", Ruby "file:Owner#method" or
# "file:Owner.singleton_method"; Ruby files outside cogworker/ as "../...")
# None left: the last (a raising retry hook's text, backtrace trimming, the
# TTIN stack lines, replacing a dead slot thread, tracing names and fields,
# log-record fields, a raising hook's label, the logging flags) moved into
# the core in issue #45.
DECISIONS: dict[str, tuple[list[str], list[str]]] = {}

IDIOMS: dict[str, tuple[list[str], list[str]]] = {
    "worker: threads, slots, signals, the job run in its language": (
        [
            "_failures.py:qualified_name",
            "_failures.py:safe",
            "_failures.py:valid_text",
            "_failures.py:describe_error",
            "worker.py:Worker.__init__",
            "worker.py:Worker.identity",
            "worker.py:Worker.lifecycle",
            "worker.py:Worker.start",
            "worker.py:Worker.quiet",
            "worker.py:Worker.stop",
            "worker.py:Worker.wait",
            "worker.py:Worker.given_back",
            "worker.py:Worker.join",
            "worker.py:Worker.run",
            "worker.py:Worker.busy",
            "worker.py:Worker.dump",
            "worker.py:Worker.signal",
            "worker.py:Worker.exit_at_once",
            "worker.py:Worker._stop_at_exit",
            "worker.py:Worker._perform",
            "worker.py:Worker._perform_coroutine",
            "worker.py:Worker._retry_in_past_time_limit",
            "worker.py:Worker._call",
            "worker.py:Worker._retry_hook",
            "_failures.py:app_traceback",
            "worker.py:Worker._describe",
            "worker.py:Worker._log_stacks",
            "worker.py:Worker._slot",
            "worker.py:Worker._start_slot",
        ],
        [
            "runner.rb:Runner#initialize",
            "runner.rb:Runner#identity",
            "runner.rb:Runner#lifecycle",
            "runner.rb:Runner#quiet",
            "runner.rb:Runner#stop",
            "runner.rb:Runner#given_back",
            "runner.rb:Runner#busy",
            "runner.rb:Runner#start",
            "runner.rb:Runner#wait",
            "runner.rb:Runner#join",
            "runner.rb:Runner#dump",
            "runner.rb:Runner#signal",
            "runner.rb:Runner#exit_at_once?",
            "runner.rb:Runner#perform",
            "runner.rb:Runner#safe",
            "runner.rb:Runner#utf8",
            "runner.rb:Runner#resolve_periodic_classes",
            "runner.rb:Runner#logger",
            "runner.rb:Runner#retry_delay",
            "runner.rb:Runner#describe",
            "runner.rb:Runner#log_stacks",
            "runner.rb:Runner#start_slot",
            "runner.rb:Runner#replace_slot",
            "runner.rb:Runner#app_backtrace",
        ],
    ),
    "command line: parsers from the core's tables, the serve loop": (
        [
            "cli.py:_parser",
            "cli.py:add_command_flags",
            "cli.py:given_flags",
            "cli.py:add_worker_arguments",
            "cli.py:run_worker",
            "cli.py:serve_processes",
            "cli.py:worker_settings",
            "cli.py:serve",
            "cli.py:run_web",
            "cli.py:run_admin",
            "cli.py:main",
            "cli.py:setup_logging",
        ],
        [
            "cli.rb:CLI.parse",
            "cli.rb:CLI.setting_flags",
            "cli.rb:CLI.load_config_file",
            "cli.rb:CLI#run_admin",
            "cli.rb:CLI#redirect_logfile",
            "cli.rb:CLI#require_app",
            "cli.rb:CLI#run_processes",
            "cli.rb:CLI#run_worker",
            "admin.rb:Admin#initialize",
            "admin.rb:Admin#run",
            "admin.rb:Admin#parse",
            "admin.rb:Admin#web",
            "signal_pipe.rb:SignalPipe#initialize",
            "signal_pipe.rb:SignalPipe#push",
            "signal_pipe.rb:SignalPipe#wait",
            "signal_pipe.rb:SignalPipe#close",
            "cli.rb:CLI#run",
        ],
    ),
    "-p N: fork and the child's start": (
        [
            "_processes.py:run_processes",
            "_processes.py:_fork",
            "_processes.py:_unblock_signals",
            "_processes.py:_run_child",
        ],
        [
            "processes.rb:Processes#initialize",
            "processes.rb:Processes#run",
            "processes.rb:Processes#start",
            "processes.rb:Processes#run_child",
        ],
    ),
    "hooks: registries, middleware chains, the running job": (
        [
            "_hooks.py:_call_safely",
            "_hooks.py:RunningJob.of",
            "_hooks.py:RunningJob.__init__",
            "_hooks.py:RunningJob.payload",
            "_hooks.py:RunningJob.bid",
            "_hooks.py:RunningJob.cancelled",
            "_hooks.py:RunningJob.progress",
            "_hooks.py:RunningJob.checkpoint",
            "_hooks.py:RunningJob.cursor",
            "_hooks.py:RunningJob.stopping",
            "_hooks.py:RunningJob.interrupt",
            "_hooks.py:RunningJob.iterated",
            "_hooks.py:RunningJob.get",
            "_hooks.py:RunningJob.__getitem__",
            "_hooks.py:RunningJob.__contains__",
            "_hooks.py:RunningJob.created_at",
            "_hooks.py:RunningJob.enqueued_at",
            "_hooks.py:RunningJob.__repr__",
            "_hooks.py:current_job",
            "_hooks.py:set_current",
            "_hooks.py:JobDied.__init__",
            "_hooks.py:_recorded_fields",
            "_hooks.py:_loaded_class",
            "_hooks.py:died_of",
            "_hooks.py:_Chain.__init__",
            "_hooks.py:_Chain.add",
            "_hooks.py:_Chain.remove",
            "_hooks.py:_Chain.clear",
            "_hooks.py:_Chain.__len__",
            "_hooks.py:_Chain.__iter__",
            "_hooks.py:MiddlewareChain.all_async",
            "_hooks.py:MiddlewareChain.ainvoke",
            "_hooks.py:MiddlewareChain.invoke",
            "_hooks.py:ClientMiddlewareChain.apply",
            "_hooks.py:_is_async",
            "_hooks.py:Hooks.__init__",
            "_hooks.py:Hooks.on_error",
            "_hooks.py:Hooks.on_death",
            "_hooks.py:Hooks.on",
            "_hooks.py:Hooks.install",
            "_hooks.py:Hooks.reset",
            "_hooks.py:Hooks.report_error",
            "_hooks.py:Hooks.periodic_push",
            "_hooks.py:Hooks.dispatch",
            "_hooks.py:traceback_lines",
        ],
        [
            "hooks.rb:Hooks#safely",
            "hooks.rb:Fields#died_of",
            "hooks.rb:JobDied#initialize",
            "hooks.rb:JobDied.for",
            "hooks.rb:MiddlewareChain#make_new",
            "hooks.rb:MiddlewareChain#initialize",
            "hooks.rb:MiddlewareChain#add",
            "hooks.rb:MiddlewareChain#prepend",
            "hooks.rb:MiddlewareChain#remove",
            "hooks.rb:MiddlewareChain#clear",
            "hooks.rb:MiddlewareChain#exists?",
            "hooks.rb:MiddlewareChain#entries",
            "hooks.rb:MiddlewareChain#empty?",
            "hooks.rb:MiddlewareChain#size",
            "hooks.rb:MiddlewareChain#invoke_client",
            "hooks.rb:MiddlewareChain#invoke",
            "hooks.rb:Hooks#initialize",
            "hooks.rb:Hooks#on",
            "hooks.rb:Hooks#report_error",
            "hooks.rb:Hooks#periodic_push",
            "hooks.rb:Hooks#dispatch",
        ],
    ),
    "client: push options to the core, results as the language's values": (
        [
            "client.py:given",
            "client.py:handler_and_options",
            "client.py:joined",
            "client.py:JobFailed.__init__",
            "client.py:Pending.__init__",
            "client.py:Pending.__repr__",
            "client.py:Pending.__eq__",
            "client.py:Pending.__hash__",
            "client.py:result_of",
            "client.py:Client.__init__",
            "client.py:Client.result",
            "client.py:Client.aresult",
            "client.py:Client.cancel",
            "client.py:Client.status",
            "client.py:Client.enqueue",
            "client.py:Client.aenqueue",
            "client.py:Client.aenqueue_many",
            "client.py:Client.enqueue_in",
            "client.py:Client.enqueue_many",
            "client.py:Client.push_job",
            "client.py:Client._push",
            "client.py:Client._apply",
            "client.py:Client.apush_job",
            "client.py:Client.push",
            "client.py:Client.push_bulk",
            "client.py:_settle",
            "client.py:off_loop",
            "client.py:default_client",
        ],
        [
            "client.rb:Client.push",
            "client.rb:Client.push_bulk",
            "client.rb:Client.options",
            "client.rb:Client.result",
            "client.rb:Client.status",
            "client.rb:Client.cancel",
            "client.rb:Client#result",
            "client.rb:Client#cancel",
            "client.rb:Client#status",
            "client.rb:Client#initialize",
            "client.rb:Client#push",
            "client.rb:Client.args_array",
            "client.rb:Client#push_bulk",
            "client.rb:Client#push_job",
            "client.rb:Client#push_payloads",
            "client.rb:Client#push_through",
            "client.rb:Client#middleware",
            "errors.rb:JobFailed#initialize",
            "errors.rb:Cogworker.result_of",
        ],
    ),
    "testing modes: switches and drains over the core's": (
        [
            "testing.py:_Mode.__init__",
            "testing.py:_Mode.__exit__",
            "testing.py:fake",
            "testing.py:inline",
            "testing.py:disable",
            "testing.py:active",
            "testing.py:mode",
            "testing.py:run_inline",
            "testing.py:RecordedJobs.__init__",
            "testing.py:RecordedJobs.clear",
            "testing.py:jobs_for",
            "testing.py:all_jobs",
            "testing.py:clear",
            "testing.py:perform_one",
            "testing.py:drain",
            "testing.py:drain_all",
            "testing.py:result",
            "testing.py:status",
            "testing.py:_perform",
            "testing.py:free_port",
            "testing.py:wait_for",
            "testing.py:RedisServer.__init__",
            "testing.py:RedisServer.start",
            "testing.py:RedisServer.stop",
            "testing.py:RedisServer.close",
            "testing.py:RedisServer.__enter__",
            "testing.py:RedisServer.__exit__",
        ],
        [
            "testing/modes.rb:RecordedJobs#initialize",
            "testing/modes.rb:RecordedJobs#clear",
            "testing/modes.rb:RecordedJobs#fake!",
            "testing/modes.rb:RecordedJobs#inline!",
            "testing/modes.rb:RecordedJobs#disable!",
            "testing/modes.rb:RecordedJobs#enabled?",
            "testing/modes.rb:RecordedJobs#mode",
            "testing/modes.rb:RecordedJobs#run_inline",
            "testing/modes.rb:RecordedJobs#jobs_for",
            "testing/modes.rb:RecordedJobs#perform_one",
            "testing/modes.rb:RecordedJobs#drain",
            "testing/modes.rb:RecordedJobs#drain_all",
            "testing/modes.rb:RecordedJobs#result",
            "testing/modes.rb:RecordedJobs#status",
            "testing/modes.rb:RecordedJobs#switch",
            "testing/modes.rb:RecordedJobs#perform",
            "testing/modes.rb:RecordedJobs#cancelled",
            "testing/modes.rb:RecordedJobs#stopping",
            "testing/modes.rb:RecordedJobs#progress",
            "testing/modes.rb:RecordedJobs#checkpoint",
            "testing/modes.rb:RecordedJobs#cursor",
            "testing/modes.rb:RecordedJobs#interrupt",
            "testing/modes.rb:RecordedJobs#iterated",
            "testing/redis_server.rb:RedisServer#initialize",
            "testing/redis_server.rb:RedisServer#cli",
            "testing/redis_server.rb:RedisServer#restart",
            "testing/redis_server.rb:RedisServer#stop",
        ],
    ),
    "limiter objects": (
        [
            "limiter.py:Limiter.__init__",
            "limiter.py:Limiter.concurrent",
            "limiter.py:Limiter.bucket",
            "limiter.py:Limiter.window",
            "limiter.py:Limiter.leaky",
            "limiter.py:Limiter.name",
            "limiter.py:Limiter.__repr__",
            "limiter.py:Limiter.acquire",
            "limiter.py:Limiter.within_limit",
            "limiter.py:Limiter.awithin_limit",
            "limiter.py:Limiter.__enter__",
            "limiter.py:Limiter.__exit__",
            "limiter.py:Limiter.__aenter__",
            "limiter.py:Limiter.__aexit__",
        ],
        [
            "limiter.rb:Limiter.concurrent",
            "limiter.rb:Limiter.bucket",
            "limiter.rb:Limiter.window",
            "limiter.rb:Limiter.leaky",
            "limiter.rb:Limiter#initialize",
            "limiter.rb:Limiter#name",
            "limiter.rb:Limiter#inspect",
            "limiter.rb:Limiter#acquire",
            "limiter.rb:Limiter#within_limit",
        ],
    ),
    "batch objects: with-block / jobs-block": (
        [
            "batch.py:current_bid",
            "batch.py:Batch.__init__",
            "batch.py:Batch.api",
            "batch.py:Batch.on",
            "batch.py:Batch.callback_jids",
            "batch.py:Batch.open",
            "batch.py:Batch.close",
            "batch.py:Batch.status",
            "batch.py:Batch.__enter__",
            "batch.py:Batch.__exit__",
        ],
        [
            "batch.rb:Batch.current_bid",
            "batch.rb:Batch#initialize",
            "batch.rb:Batch#on",
            "batch.rb:Batch#callback_jids",
            "batch.rb:Batch#open",
            "batch.rb:Batch#jobs",
            "batch.rb:Batch#close",
            "batch.rb:Batch#status",
            "batch.rb:Batch#api",
        ],
    ),
    "workflow objects": (
        [
            "workflow.py:step",
            "workflow.py:group",
            "workflow.py:Workflow.__init__",
            "workflow.py:Workflow.on",
            "workflow.py:Workflow.callback_jids",
            "workflow.py:Workflow.push",
            "workflow.py:PushedWorkflow.last_jids",
            "workflow.py:chain",
            "workflow.py:chord",
        ],
        [
            "workflow.rb:Workflow#last_jids",
            "workflow.rb:Workflow.step",
            "workflow.rb:Workflow.group",
            "workflow.rb:Workflow.chain",
            "workflow.rb:Workflow.chord",
            "workflow.rb:Workflow#initialize",
            "workflow.rb:Workflow#on",
            "workflow.rb:Workflow#callback_jids",
            "workflow.rb:Workflow#push",
        ],
    ),
    "tracing through each language's OpenTelemetry API": (
        [
            "_tracing.py:recording",
            "_tracing.py:producing",
            "_tracing.py:consuming",
            "_tracing.py:current_context",
            "_tracing.py:_tracer",
            "_tracing.py:producing_payloads",
            "_tracing.py:name_message",
            "_tracing.py:_record_failure",
            "_tracing.py:_span",
        ],
        [
            "tracing.rb:Tracing.enabled?",
            "tracing.rb:Tracing.recording?",
            "tracing.rb:Tracing.producing",
            "tracing.rb:Tracing.consuming",
            "tracing.rb:Tracing.consumer_span",
            "tracing.rb:Tracing.current_context",
            "tracing.rb:Tracing.tracer",
            "tracing.rb:Tracing.producing_payloads",
            "tracing.rb:Tracing.record_failure",
            "tracing.rb:Tracing.span_of",
        ],
    ),
    "periodic entries": (
        [
            "_periodic.py:periodic",
            "_periodic.py:entries",
            "_periodic.py:native_entries",
            "_periodic.py:clear",
        ],
        [
            "periodic.rb:PeriodicManager#initialize",
            "periodic.rb:PeriodicManager#register",
            "periodic.rb:PeriodicManager#entries",
            "periodic.rb:PeriodicManager#native_entries",
            "periodic.rb:PeriodicManager#clear",
        ],
    ),
    "logging: the language's logger fed with the core's lines": (
        [
            "_logging.py:forward_engine_logs",
            "_logging.py:_stop_forwarding",
            "_logging.py:_emit",
            "_logging.py:JobContextFilter.filter",
            "_logging.py:CoreHandler.__init__",
            "_logging.py:CoreHandler.emit",
        ],
        [
            "core_logger.rb:CoreLogger#initialize",
            "core_logger.rb:CoreLogger#add",
            "log_forwarding.rb:LogForwarding.start",
            "log_forwarding.rb:LogForwarding.emit",
        ],
    ),
    "settings and the package's entry": (
        [
            "_settings.py:configure",
            "_settings.py:settings",
            "_settings.py:generation",
            "_settings.py:make_config",
            "_settings.py:shared_client",
            "_settings.py:_shared_native",
            "_settings.py:reset",
            "_version.py:check",
        ],
        [
            "config.rb:Config#initialize",
            "config.rb:Config#method_missing",
            "config.rb:Config#respond_to_missing?",
            "config.rb:Config#[]",
            "config.rb:Config#[]=",
            "config.rb:Config#to_h",
            "config.rb:Config#native",
            "config.rb:Config#native_client",
            "config.rb:Config#periodic",
            "config.rb:Config#hooks",
            "config.rb:Config#server_middleware",
            "config.rb:Config#client_middleware",
            "config.rb:Config#error_handlers",
            "config.rb:Config#death_handlers",
            "config.rb:Config#on",
            "config.rb:Config#built",
            "config.rb:Config#merge",
            "../cogworker.rb:Cogworker.require_extension",
            "../cogworker.rb:Cogworker#configure",
            "../cogworker.rb:Cogworker#config",
            "../cogworker.rb:Cogworker#client",
            "../cogworker.rb:Cogworker#reset!",
            "../cogworker.rb:Cogworker#register",
            "../cogworker.rb:Cogworker#registry",
            "../cogworker.rb:ForkHook#_fork",
        ],
    ),
    "the ops API generated from the core's table": (
        [
            "api.py:Api.__init__",
            "api.py:Api.call",
            "api.py:Api.admin",
            "api.py:Api.watch",
            "api.py:Api.watch_async",
            "api.py:Api.calls",
            "api.py:_method",
        ],
        [
            "api.rb:Api.calls",
            "api.rb:Api#initialize",
            "api.rb:Api#call",
            "api.rb:Api#admin",
            "api.rb:Api#watch",
        ],
    ),
    "job declarations: decorator / mixin": (
        [
            "_registry.py:register",
            "_registry.py:handlers",
            "_registry.py:_describe",
            "job.py:registry",
            "job.py:_await",
            "job.py:_signature_of",
            "job.py:JobHandle.__init__",
            "job.py:JobHandle.check_args",
            "job.py:JobHandle.queue",
            "job.py:JobHandle.retry",
            "job.py:JobHandle.__call__",
            "job.py:JobHandle.__repr__",
            "job.py:JobHandle.run",
            "job.py:JobHandle.options",
            "job.py:JobHandle._bound",
            "job.py:JobHandle.enqueue",
            "job.py:JobHandle.step",
            "job.py:JobHandle.enqueue_in",
            "job.py:JobHandle.enqueue_at",
            "job.py:JobHandle.aenqueue",
            "job.py:JobHandle.aenqueue_in",
            "job.py:JobHandle.aenqueue_at",
            "job.py:JobHandle.jobs",
            "job.py:JobHandle.drain",
            "job.py:JobHandle.perform_one",
            "job.py:JobHandle.clear",
            "job.py:_Bound.__init__",
            "job.py:_Bound._push",
            "job.py:_Bound.enqueue",
            "job.py:_Bound.step",
            "job.py:_Bound.enqueue_in",
            "job.py:_Bound.enqueue_at",
            "job.py:_Bound.aenqueue",
            "job.py:job",
        ],
        [
            "job.rb:Job#cancelled?",
            "job.rb:Job#progress",
            "job.rb:Job#checkpoint",
            "job.rb:Job#cursor",
            "job.rb:Job#stopping?",
            "job.rb:Job#interrupt!",
            "job.rb:Job#cogworker_delivery",
            "job.rb:Job#bid",
            "job.rb:Job.included",
            "job.rb:ClassMethods#cogworker_options",
            "job.rb:ClassMethods#cogworker_push_options",
            "job.rb:ClassMethods#cogworker_retry_in",
            "job.rb:ClassMethods#cogworker_queue",
            "job.rb:ClassMethods#cogworker_retry",
            "job.rb:ClassMethods#cogworker_retry_delay",
            "job.rb:ClassMethods#perform_async",
            "job.rb:ClassMethods#perform_in",
            "job.rb:ClassMethods#perform_at",
            "job.rb:ClassMethods#step",
            "job.rb:ClassMethods#set",
            "job.rb:ClassMethods#jobs",
            "job.rb:ClassMethods#clear",
            "job.rb:ClassMethods#drain",
            "job.rb:ClassMethods#perform_one",
            "job.rb:Job.handler_and_options",
            "job.rb:Setter#initialize",
            "job.rb:Setter#perform_async",
            "job.rb:Setter#perform_in",
            "job.rb:Setter#perform_at",
            "job.rb:Setter#step",
            "job.rb:Setter#push",
        ],
    ),
    "long jobs: a generator / Sidekiq's IterableJob over the core's `iterated`": (
        [
            "iteration.py:iterate",
            "iteration.py:_cursor",
        ],
        [
            "iterable_job.rb:IterableJob.included",
            "iterable_job.rb:IterableJob#perform",
            "iterable_job.rb:IterableJob#max_iteration_runtime",
            "iterable_job.rb:IterableJob#cancel!",
            "iterable_job.rb:IterableJob#array_enumerator",
            "iterable_job.rb:IterableJob#on_start",
            "iterable_job.rb:IterableJob#on_resume",
            "iterable_job.rb:IterableJob#on_stop",
            "iterable_job.rb:IterableJob#on_complete",
            "iterable_job.rb:IterableJob#around_iteration",
            "iterable_job.rb:IterableJob#iterated",
        ],
    ),
    "Sidekiq's Ruby API over cogworker (`require 'cogworker/sidekiq'`; Ruby only: Sidekiq is Ruby's)": (
        [],
        [
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#wrapper_name",
            "../cogworker.rb:Cogworker#server?",
            "sidekiq.rb:ClassMethods#client_push",
            "sidekiq.rb:ClassMethods#get_sidekiq_options",
            "sidekiq.rb:ClassMethods#perform_async",
            "sidekiq.rb:ClassMethods#perform_in",
            "sidekiq.rb:ClassMethods#set",
            "sidekiq.rb:ClassMethods#sidekiq_options",
            "sidekiq.rb:ClassMethods#sidekiq_retries_exhausted",
            "sidekiq.rb:ClassMethods#sidekiq_retries_exhausted_block",
            "sidekiq.rb:ClassMethods#sidekiq_retry_in",
            "sidekiq.rb:Client#item_args",
            "sidekiq.rb:Client#payload",
            "sidekiq.rb:Client#push",
            "sidekiq.rb:Client#push_bulk",
            "sidekiq.rb:Client.push",
            "sidekiq.rb:Client.push_bulk",
            "sidekiq.rb:Config#[]=",
            "sidekiq.rb:Config#client_middleware",
            "sidekiq.rb:Config#concurrency=",
            "sidekiq.rb:Config#configure_client",
            "sidekiq.rb:Config#configure_server",
            "sidekiq.rb:Config#death_handlers",
            "sidekiq.rb:Config#error_handlers",
            "sidekiq.rb:Config#job_classes",
            "sidekiq.rb:Config#logger",
            "sidekiq.rb:Config#on",
            "sidekiq.rb:Config#queues=",
            "sidekiq.rb:Config#redis",
            "sidekiq.rb:Config#redis=",
            "sidekiq.rb:Config#retries_exhausted",
            "sidekiq.rb:Config#server?",
            "sidekiq.rb:Config#server_middleware",
            "sidekiq.rb:Job.included",
            "sidekiq.rb:Setter#initialize",
            "sidekiq.rb:Setter#perform_async",
            "sidekiq.rb:Setter#perform_in",
            "sidekiq/testing.rb:Job.clear_all",
            "sidekiq/testing.rb:Job.drain_all",
            "sidekiq/testing.rb:Testing#disable!",
            "sidekiq/testing.rb:Testing#disabled?",
            "sidekiq/testing.rb:Testing#enabled?",
            "sidekiq/testing.rb:Testing#fake!",
            "sidekiq/testing.rb:Testing#fake?",
            "sidekiq/testing.rb:Testing#inline!",
            "sidekiq/testing.rb:Testing#inline?",
        ],
    ),
    "asyncio: one event loop for the slots' coroutines": (
        [
            "_coroutines.py:EventLoop.__init__",
            "_coroutines.py:EventLoop._ensure",
            "_coroutines.py:EventLoop.run",
            "_coroutines.py:EventLoop.submit",
            "_coroutines.py:EventLoop._finished",
            "_coroutines.py:EventLoop.cancel_all",
            "_coroutines.py:EventLoop._watch",
            "_coroutines.py:_guarded",
        ],
        [],
    ),
    "frameworks: Django's task backend / ActiveJob's adapter": (
        [
            "contrib/django/__init__.py:__getattr__",
            "contrib/django/_compat.py:task_backends",
            "contrib/django/backend.py:_dataclass_options",
            "contrib/django/backend.py:priority_level",
            "contrib/django/backend.py:keyed_options",
            "contrib/django/backend.py:CogworkerBackend.__init__",
            "contrib/django/backend.py:CogworkerBackend._check_option",
            "contrib/django/backend.py:CogworkerBackend.api",
            "contrib/django/backend.py:CogworkerBackend.validate_task",
            "contrib/django/backend.py:CogworkerBackend.enqueue",
            "contrib/django/backend.py:CogworkerBackend.get_result",
            "contrib/django/management/commands/cogworker.py:Command.add_arguments",
            "contrib/django/management/commands/cogworker.py:Command.handle",
            "contrib/django/management/commands/cogworker.py:task_modules",
            "contrib/django/results.py:moment",
            "contrib/django/results.py:split_args",
            "contrib/django/results.py:task_for",
            "contrib/django/results.py:error_path",
            "contrib/django/results.py:new",
            "contrib/django/results.py:enqueued",
            "contrib/django/results.py:from_record",
            "contrib/django/runner.py:register",
            "contrib/django/runner.py:_running",
            "contrib/django/runner.py:_call_arguments",
            "contrib/django/runner.py:_finished",
            "contrib/django/runner.py:send",
            "contrib/django/runner.py:_runner",
            "contrib/django/runner.py:_coroutine_runner",
        ],
        [
            "active_job_hook.rb:ActiveJobHook#install",
            "active_job_hook.rb:ActiveJobHook#while_booting",
            "active_job_hook.rb:ActiveJobHook#watch_for_active_support",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter.priority_level",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#enqueue",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#enqueue_at",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#stopping?",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#enqueue_all",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#enqueue_after_transaction_commit?",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#push",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#allow_job_class",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#runnable?",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#constant",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#delivery_job?",
            "../active_job/queue_adapters/cogworker_adapter.rb:CogworkerAdapter#mail_delivery?",
            "../active_job/queue_adapters/cogworker_adapter.rb:JobWrapper#perform",
            "../active_job/queue_adapters/cogworker_limits.rb:CogworkerAdapter.concurrency_fields",
            "../active_job/queue_adapters/cogworker_limits.rb:ConcurrencyLimits#limits_concurrency",
            "../active_job/queue_adapters/cogworker_limits.rb:CogworkerAdapter.flow_fields",
            "../active_job/queue_adapters/cogworker_limits.rb:CogworkerAdapter.key_of",
            "../active_job/queue_adapters/cogworker_limits.rb:FlowControl#cogworker_flow",
        ],
    ),
}


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


def code_lines(lines: list[str], comment: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in lines if line.strip() and not line.strip().startswith(comment))


def python_functions(path: str) -> dict[str, int]:
    """Each top-level function and method (by qualified name; a function
    inside a function is its parent's) with its lines of code."""
    with open(path) as f:
        text = f.read()
    lines = without_docstrings(text)
    found: dict[str, int] = {}

    def walk(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                span = lines[first - 1 : node.end_lineno]
                name = prefix + node.name
                found[name] = found.get(name, 0) + code_lines(span, "#")
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(text).body, "")
    return found


OWNER = re.compile(r"^(\s*)(?:class|module)\s+([A-Z][\w:]*)")
DEF = re.compile(r"^(\s*)(?:private\s+|protected\s+)?def\s+(self\.)?([\w?!=\[\]<>+-]+)")


def ruby_functions(path: str) -> dict[str, int]:
    """Each method (``Owner#name``, ``Owner.name`` for ``def self.``) with
    its lines of code; the owner is the innermost class or module."""
    with open(path) as f:
        lines = f.read().splitlines()
    found: dict[str, int] = {}
    owners: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        owner = OWNER.match(line)
        if owner and not re.search(r"\bend\s*$", line):
            indent = len(owner.group(1))
            while owners and owners[-1][0] >= indent:
                owners.pop()
            owners.append((indent, owner.group(2)))
            continue
        method = DEF.match(line)
        if not method:
            continue
        indent = len(method.group(1))
        while owners and owners[-1][0] >= indent:
            owners.pop()
        name = (owners[-1][1] if owners else "") + ("." if method.group(2) else "#") + method.group(3)
        span = [line]
        if not re.search(r"\)\s*=\s|^\s*(?:private\s+)?def [\w.?!]+\s*=\s", line):  # not an endless def
            end = re.compile(rf"^{method.group(1)}end\b")
            for j in range(i + 1, len(lines)):
                if end.match(lines[j]):
                    span = lines[i : j + 1]
                    break
        found[name] = found.get(name, 0) + code_lines(span, "#")
    return found


def every_function() -> dict[str, int]:
    """``file:name`` of every function of both packages, with its lines."""
    found: dict[str, int] = {}
    for path in sorted(glob.glob(os.path.join(ROOT, PY, "**", "*.py"), recursive=True)):
        file = os.path.relpath(path, os.path.join(ROOT, PY))
        found.update({f"py {file}:{name}": n for name, n in python_functions(path).items()})
    for path in sorted(glob.glob(os.path.join(ROOT, "ruby/lib", "**", "*.rb"), recursive=True)):
        file = os.path.relpath(path, os.path.join(ROOT, RB))
        found.update({f"rb {file}:{name}": n for name, n in ruby_functions(path).items()})
    return found


def main() -> int:
    verbose = "-v" in sys.argv
    functions = every_function()
    problems: list[str] = []
    listed: set[str] = set()
    totals: dict[str, list[int]] = {}
    for kind, table in (("decisions", DECISIONS), ("idioms", IDIOMS)):
        totals[kind] = [0, 0]
        for behaviour, (py_names, rb_names) in table.items():
            counts = [0, 0]
            for side, names in ((0, py_names), (1, rb_names)):
                for name in names:
                    key = ("py " if side == 0 else "rb ") + name
                    if key in listed:
                        problems.append(f"{name} is listed twice")
                    listed.add(key)
                    if key not in functions:
                        problems.append(f"{name} is listed ({kind}: {behaviour}) but gone: drop it")
                        continue
                    counts[side] += functions[key]
            totals[kind][0] += counts[0]
            totals[kind][1] += counts[1]
            if verbose:
                print(f"{kind:9} {counts[0]:5} {counts[1]:5}  {behaviour}")
    for key in sorted(set(functions) - listed):
        problems.append(
            f"{key[3:]} ({'Python' if key.startswith('py') else 'Ruby'}) is in neither list: "
            "a decision (move it to the core) or an idiom of its language"
        )
    for kind in ("decisions", "idioms"):
        py, rb = totals[kind]
        count = f"{len(DECISIONS)} written in both hosts, " if kind == "decisions" else ""
        print(f"{kind}: {count}lines Python {py} + Ruby {rb} = {py + rb}")
    for problem in problems:
        print(f"host-mirror: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
