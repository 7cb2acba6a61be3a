"""Django ``TaskResult``s from cogworker's job results (``result_ttl``
records, see ``cogworker.Client().result``)."""

from __future__ import annotations

import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.utils.module_loading import import_string

from . import _compat

_STATUS = {
    "queued": "READY",
    "scheduled": "READY",
    "waiting": "READY",  # a batch callback or later workflow step, not yet handed over
    "retrying": "READY",  # failed, and will run again
    "running": "RUNNING",
    "succeeded": "SUCCESSFUL",
    "failed": "FAILED",
    "dead": "FAILED",
    "expired": "FAILED",  # never started: dropped past its expires_at
    "cancelled": "FAILED",  # Api.cancel: dropped unrun, or stopped while it ran
}


def moment(epoch: float | None) -> datetime.datetime | None:
    """Epoch seconds as Django's ``timezone.now()`` would give them."""
    if epoch is None:
        return None
    if settings.USE_TZ:
        return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return datetime.datetime.fromtimestamp(epoch)


def split_args(class_name: str, job_args: Any) -> tuple[list[Any], dict[str, Any]]:
    """A Django task job's ``[args, kwargs]``."""
    if (
        isinstance(job_args, list)
        and len(job_args) == 2
        and isinstance(job_args[0], list)
        and isinstance(job_args[1], dict)
    ):
        return job_args[0], job_args[1]
    raise TypeError(
        f"{class_name} is a Django task: its job args must be [args, kwargs] (a list and an object), "
        f"not {job_args!r}"
    )


def task_for(class_name: str, result_id: str) -> Any:
    """The Task a job's class names. A job that is not a Django task (a
    plain function's, another language's) is a SuspiciousOperation, as
    Django's database backend and django-rq raise."""
    not_a_task = SuspiciousOperation(f"Task {result_id} does not point to a Task ({class_name})")
    try:
        task = import_string(class_name)
    except ImportError as error:
        raise not_a_task from error
    if not isinstance(task, _compat.Task):
        raise not_a_task
    return task


def error_path(error_class: str) -> str:
    """Django's exception path: a builtin (``ValueError``) is ``builtins.ValueError``."""
    return error_class if "." in error_class else f"builtins.{error_class}"


def new(
    task: Any, result_id: str, status: str, args: list[Any], kwargs: dict[str, Any], **fields: Any
) -> Any:
    """A TaskResult; ``fields`` may hold any timestamps, ``errors``,
    ``worker_ids`` and ``return_value``."""
    value = fields.pop("return_value", None)
    result = _compat.TaskResult(
        task=task,
        id=result_id,
        status=_compat.TaskResultStatus[status],
        enqueued_at=fields.get("enqueued_at"),
        started_at=fields.get("started_at"),
        finished_at=fields.get("finished_at"),
        last_attempted_at=fields.get("last_attempted_at"),
        args=args,
        kwargs=kwargs,
        backend=task.backend,
        errors=fields.get("errors", []),
        worker_ids=fields.get("worker_ids", []),
    )
    object.__setattr__(result, "_return_value", value)
    return result


def enqueued(task: Any, payload: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """What ``enqueue`` returns: READY, with the job's jid as its id."""
    return new(task, payload["jid"], "READY", args, kwargs, enqueued_at=moment(payload.get("created_at")))


def from_record(record: dict[str, Any], attempts: list[dict[str, Any]]) -> Any:
    """The TaskResult of a job's kept result and its failed attempts."""
    result_id = record["jid"]
    task = task_for(record["class"], result_id)
    args, kwargs = split_args(record["class"], record.get("args"))
    status = record.get("status", "")
    errors = [
        _compat.TaskError(
            exception_class_path=error_path(str(attempt.get("error_class"))),
            traceback=f"{attempt.get('error_class')}: {attempt.get('error_message')}",
        )
        for attempt in attempts
    ]
    if record.get("error_class"):
        # The last failure, with its whole traceback (only the last one's is
        # kept), in place of its attempt's entry (or alone, if the attempts
        # list expired); ending in a newline, as format_exception's does.
        lines = record.get("error_backtrace") or [f"{record['error_class']}: {record.get('error_message')}"]
        last = _compat.TaskError(
            exception_class_path=error_path(str(record["error_class"])),
            traceback="".join(f"{line}\n" for line in lines),
        )
        errors = [*errors[:-1], last]
    worker_ids = [str(attempt.get("worker") or "") for attempt in attempts]
    if status in ("running", "succeeded") and record.get("worker"):
        worker_ids.append(record["worker"])
    finished = status in ("succeeded", "failed", "dead", "expired", "cancelled")
    return new(
        task,
        result_id,
        _STATUS.get(status, "READY"),
        args,
        kwargs,
        enqueued_at=moment(record.get("created_at")),
        started_at=moment(record.get("started_at")),
        last_attempted_at=moment(record.get("started_at")),
        finished_at=moment(record.get("finished_at")) if finished else None,
        errors=errors,
        worker_ids=worker_ids,
        return_value=record.get("value"),
    )
