"""Python's log records in the core's format: ``CoreHandler`` writes each
record through the engine (text or JSON, as ``--json-logs`` chose), so a
worker prints one format; ``JobContextFilter`` stamps the running job's
``jid`` and class on records written while a handler runs."""

from __future__ import annotations

import logging
import traceback

from . import _core
from ._hooks import current_job


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
            fields = [("logger", record.name)]
            jid = getattr(record, "jid", None)
            if jid is not None:
                fields += [("jid", str(jid)), ("class", str(getattr(record, "job_class", "")))]
            if record.exc_info and record.exc_info[0] is not None:
                fields.append(("exception", "".join(traceback.format_exception(*record.exc_info)).rstrip()))
            _core.log_line(record.levelname, record.threadName or "-", record.getMessage(), fields)
        except Exception:  # noqa: BLE001 - logging must never raise into the app
            self.handleError(record)
