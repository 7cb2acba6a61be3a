"""Multi-process workers (``cogworker worker -p N``): the app is imported
once, in the parent, which then forks N children that each run an ordinary
worker (their own identity, heartbeat and in-progress jobs).

What to fork and when, the backoff before a dead child is restarted, which
signals reach the children and when the parent exits are the core's
decisions, and its loop runs them (``_core.Supervisor.run``); this module
forks and passes signals on. A child dies with its parent: the kernel sends it TERM (a
graceful stop) when the parent goes, even by ``kill -9``.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any, Callable

from . import _core
from ._hooks import traceback_lines
from ._settings import make_config

# Forking is POSIX-only, and so is this module. The worker command's signals.
FORWARDED = tuple(getattr(signal, "SIG" + name) for name in _core.WORKER_SIGNALS)

Serve = Callable[..., int]


def run_processes(count: int, settings: dict[str, Any], serve: Serve) -> int:
    """Keeps ``count`` forked children running ``serve(settings)`` until
    TERM/INT, then waits for them all; returns the parent's exit status."""
    supervisor = _core.Supervisor(count)  # an invalid count fails here, once
    make_config(**settings)  # so do invalid settings: not once per child
    parent = os.getpid()

    def forward(signum: int, _frame: Any) -> None:
        supervisor.signal(signal.Signals(signum).name.removeprefix("SIG"))

    for sig in FORWARDED:
        signal.signal(sig, forward)
    return supervisor.run(lambda index: _fork(index, parent, settings, serve))


def _fork(index: int, parent: int, settings: dict[str, Any], serve: Serve) -> int | str:
    """Forks child ``index``; returns its pid in the parent, or why the
    fork failed (the core logs it and retries). The child never returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    # Blocked across the fork, so a signal aimed at the new child waits
    # until it has its own handlers (not the parent's, which forward).
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        pid = os.fork()
    except OSError as error:
        return str(error)
    finally:
        if os.getpid() == parent:
            _unblock_signals()
    if pid:
        return pid
    _run_child(index, parent, settings, serve)
    raise AssertionError("unreachable")


def _unblock_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)


def _run_child(index: int, parent: int, settings: dict[str, Any], serve: Serve) -> None:
    status = _core.CHILD_FAILED
    try:
        if not _core.bind_to_parent(parent):
            status = _core.child_parent_gone(index)
        else:
            status = serve(settings, signals_ready=_unblock_signals)
    except BaseException as error:  # noqa: BLE001 - a child must never return into the parent's loop
        status = _core.child_failed(index, type(error).__qualname__, str(error), traceback_lines(error))
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
