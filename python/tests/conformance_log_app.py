"""The app of the conformance scenario on log lines: its job writes a line
through Python's logging and fails; its error handler raises."""

from __future__ import annotations

import logging
from typing import Any

from conformance_jobs import ConformanceError

import cogworker

log = logging.getLogger("conformance")


@cogworker.job(name="ConformanceLogs")
def conformance_logs(word: str) -> None:
    log.warning("the job says %s", word)
    raise ConformanceError("logged")


@cogworker.hooks.on_error
def raising_error_handler(error: BaseException, job: Any) -> None:
    raise ConformanceError("hook boom")
