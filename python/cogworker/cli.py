"""The ``cogworker`` command.

``cogworker worker MODULE... [-c N] [-q QUEUE[,WEIGHT]]... [--redis-url URL]``
imports the modules (registering their handlers), then runs until TERM/INT
(graceful, exit 0). TSTP quiets; TTIN logs the busy jobs and thread stacks.

``cogworker web [--host H] [--port P] [--auth USER:PASSWORD]`` serves the
dashboard (127.0.0.1:7890 by default; Prometheus' ``/metrics`` too), and
``cogworker metrics [--host H] [--port P]`` serves ``/metrics`` alone
(127.0.0.1:9191). The admin commands (``stats``,
``queues``, ``processes``, ``retry-all``, ``clear``, ``pause``, ``unpause``,
``clear-queue``, ``quiet``, ``stop``) run one ops-API call and print.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from typing import Any, Callable

from . import __version__, _core
from .worker import Worker


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cogworker", description="cogworker: background jobs on Redis")
    parser.add_argument("-V", "--version", action="version", version=f"cogworker {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="run a worker process")
    add_worker_arguments(w)

    # web, metrics and the admin commands: their flags are the engine's.
    for name, help_text in (
        ("web", "serve the dashboard"),
        ("metrics", "serve Prometheus' /metrics alone (no dashboard)"),
    ):
        add_command_flags(sub.add_parser(name, help=help_text), name)
    for name, arg, help_text in _core.admin_commands():
        admin = sub.add_parser(name, help=help_text, description=help_text)
        add_command_flags(admin, name)
        if arg is not None:
            # "[JOBS]": the engine says the argument may be left out.
            admin.add_argument("target", metavar=arg, nargs="?" if arg.startswith("[") else None)
    return parser


def add_command_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The flags of ``command`` (web, metrics or an admin command), from the
    engine's table: each value is kept as given (a list, one per use), for
    the engine to read (``given_flags``)."""
    for long, metavar, help_text in _core.command_flags(command):
        if metavar is None:
            parser.add_argument(long, dest=long, action="store_const", const=["true"], help=help_text)
        else:
            parser.add_argument(long, dest=long, action="append", metavar=metavar, help=help_text)


def given_flags(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The ``add_command_flags`` flags given, each with its texts."""
    return [
        (long, getattr(args, long))
        for long, *_ in _core.command_flags(args.command)
        if getattr(args, long, None) is not None
    ]


def add_worker_arguments(parser: argparse.ArgumentParser, modules_required: bool = True) -> None:
    """The ``cogworker worker`` flags (also ``manage.py cogworker``'s, where
    modules are optional and Django's own ``-v`` is the verbosity)."""
    parser.add_argument(
        "modules",
        nargs="+" if modules_required else "*",
        metavar="MODULE",
        help="modules to import (they register handlers)",
    )
    parser.add_argument(
        "-p",
        "--processes",
        type=int,
        help="fork N worker processes (the app is imported once, before); default: work in this one",
    )
    # Every setting, under the same flag as in Ruby's CLI (the engine's table).
    for long, short, setting, kind, help_text in _core.worker_flags():
        names = [n for n in (short, long) if n]
        if kind == "repeated":
            metavar = long.lstrip("-").upper()
            parser.add_argument(
                *names, dest=setting, action="append", metavar=metavar, help=f"{help_text} (repeatable)"
            )
        elif kind == "boolean":
            parser.add_argument(*names, dest=setting, nargs="?", const="true", metavar="BOOL", help=help_text)
        else:
            parser.add_argument(*names, dest=setting, metavar=kind.upper(), help=help_text)
    # The logging flags are the engine's (Django's own -v is its verbosity).
    for long, short, help_text in _core.LOGGING_FLAGS:
        if long != "--verbose" or modules_required:
            parser.add_argument(*[n for n in (short, long) if n], action="store_true", help=help_text)


def setup_logging(json_logs: bool, verbose: bool) -> None:
    """One log format for the process: the core's lines and Python's records
    (through ``CoreHandler``), as text or, with ``json_logs``, JSON."""
    from ._logging import CoreHandler

    _core.init_cli_logging(json_logs, verbose)
    root = logging.getLogger()
    root.addHandler(CoreHandler())
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def run_worker(args: argparse.Namespace) -> int:
    sys.path.insert(0, os.getcwd())
    for module in args.modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
                raise  # a module the app imports: its traceback says where
            print(_core.app_not_loaded(module, str(e)), file=sys.stderr)
            return _core.EXIT_USAGE
    return serve_processes(worker_settings(args), args.processes)


def serve_processes(settings: dict[str, Any], processes: int | None) -> int:
    """``serve(settings)`` here, or in ``processes`` forked children."""
    if processes is None:
        return serve(settings)
    from ._processes import run_processes

    return run_processes(processes, settings, serve)


def worker_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The Worker settings the ``add_worker_arguments`` flags give (what
    each flag's text means is the engine's: the same in Ruby)."""
    given = []
    for _long, _short, setting, _kind, _help in _core.worker_flags():
        value = getattr(args, setting, None)
        if value is not None:
            given.append((setting, [str(v) for v in value] if isinstance(value, list) else [str(value)]))
    return dict(_core.settings_from_flags(given))


def serve(settings: dict[str, Any], signals_ready: Callable[[], Any] | None = None) -> int:
    """Runs a worker with ``settings`` until TERM/INT (TSTP quiets, TTIN
    dumps); returns the exit status. ``signals_ready`` is called once the
    signal handlers are in place. What each signal does and how the
    command ends are the engine's decisions, as in Ruby's CLI."""
    worker = Worker(**settings)

    def forward(signum: int, _frame: Any) -> None:
        worker.signal(signal.Signals(signum).name.removeprefix("SIG"))

    for name in _core.WORKER_SIGNALS:
        signal.signal(getattr(signal, "SIG" + name), forward)
    if signals_ready is not None:
        signals_ready()
    worker.start()
    # The main thread waits in short slices so signal handlers run promptly.
    while not worker.wait(_core.WAIT_SLICE):
        pass
    if worker.exit_at_once():
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def run_web(args: argparse.Namespace) -> int:
    """``cogworker web``, or ``cogworker metrics`` (Prometheus' /metrics alone)."""
    from ._settings import make_config

    given = given_flags(args)
    redis_url, namespace = _core.command_connection(args.command, given)
    server = _core.WebServer(make_config(redis_url=redis_url, namespace=namespace), args.command, given)

    def stop(signum: int, _frame: Any) -> None:
        server.stop_on_signal(signal.Signals(signum).name)

    # Before the address is printed: whoever reads it may stop us at once.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.address_line, flush=True)
    while not server.wait(_core.WAIT_SLICE):
        pass
    return 0


def run_admin(args: argparse.Namespace) -> int:
    from .api import Api

    redis_url, namespace = _core.command_connection(args.command, given_flags(args))
    api = Api(redis_url=redis_url, namespace=namespace)
    print(api.admin(args.command, getattr(args, "target", None)), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(getattr(args, "json_logs", False), getattr(args, "verbose", False))
    try:
        if args.command == "worker":
            if args.redis_url:
                _core.warn_secret_on_command_line("--redis-url", args.redis_url)
            return run_worker(args)
        if args.command in ("web", "metrics"):
            return run_web(args)
        return run_admin(args)
    except (_core.ConfigError, _core.InvalidArgument) as e:
        print(f"cogworker: {e}", file=sys.stderr)
        return _core.EXIT_USAGE
    except (_core.Error, ValueError) as e:
        print(f"cogworker: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
