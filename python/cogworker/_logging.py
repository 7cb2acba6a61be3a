"""Python's log records in the core's format: ``CoreHandler`` writes each
record through the engine (text or JSON, as ``--json-logs`` chose), so a
worker prints one format; ``JobContextFilter`` stamps the running job's
``jid`` and class on records written while a handler runs."""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Any

from . import _core
from ._hooks import current_job

# The engine's levels as logging's.
_LEVELS = {
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": 5,
}
# Attributes a LogRecord has already: an engine field of such a name is
# kept as ``cogworker_<name>``.
_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_forwarding: threading.Thread | None = None
_forwarding_lock = threading.Lock()


def forward_engine_logs() -> None:
    """For a worker embedded in an application: the engine's lines become
    records of the ``cogworker.*`` loggers (``jid``, ``job_class`` and the
    line's other fields as attributes), handled however the application
    configured ``logging``. Nothing changes where the process chose a
    format already (the CLI's, which writes Python's records in it)."""
    global _forwarding
    with _forwarding_lock:
        if _forwarding is not None or not _core.init_log_forwarding():
            return
        _forwarding = threading.Thread(
            target=_core.run_log_forwarding, args=(_emit,), name=_core.THREAD_NAMES["logs"], daemon=True
        )
        _forwarding.start()
        # Leaves before the interpreter finalizes (plain atexit is too late).
        threading._register_atexit(_stop_forwarding)  # type: ignore[attr-defined]


def _stop_forwarding() -> None:
    _core.stop_log_forwarding()
    if _forwarding is not None:
        _forwarding.join(5)


def _emit(level: str, target: str, thread: str, message: str, fields: dict[str, str]) -> None:
    logger = logging.getLogger(target.replace("::", "."))
    levelno = _LEVELS.get(level, logging.INFO)
    if not logger.isEnabledFor(levelno):
        return
    extra: dict[str, Any] = {"jid": None, "job_class": None, "engine_thread": thread}
    for name, value in fields.items():
        name = "job_class" if name == "class" else name
        extra[f"cogworker_{name}" if name in _RESERVED else name] = value
    logger.log(levelno, message, extra=extra)


class JobContextFilter(logging.Filter):
    """Adds ``jid`` and ``job_class`` (None outside a job) to every record:
    add it to a handler of your own logging setup to see them there too."""

    def filter(self, record: logging.LogRecord) -> bool:
        job = current_job()
        record.jid = job.jid if job is not None else None
        record.job_class = job.class_name if job is not None else None
        return True


class CoreHandler(logging.Handler):
    """Writes records through the core: time, level, pid, identity and
    thread as the core writes its own, then the message, the logger's name,
    the job's jid and class while one runs, and the exception's traceback."""

    def __init__(self, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.addFilter(JobContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            jid = getattr(record, "jid", None)
            exception = None
            if record.exc_info and record.exc_info[0] is not None:
                exception = "".join(traceback.format_exception(*record.exc_info)).rstrip()
            _core.log_record(
                record.levelname,
                record.threadName,
                record.thread == threading.main_thread().ident,
                record.getMessage(),
                record.name,
                None if jid is None else str(jid),
                str(getattr(record, "job_class", "")),
                exception,
            )
        except Exception:  # noqa: BLE001 - logging must never raise into the app
            self.handleError(record)
