"""Django tasks as cogworker handlers. Each task the backend validates (at
its definition, when its module is imported) is registered under its
import path; a worker runs only those. Around each run: stale database
connections are closed before and after (as a request does), Django's
``task_started`` / ``task_finished`` signals are sent, and a task that
``takes_context`` gets a ``TaskContext`` for this attempt."""

from __future__ import annotations

import inspect
import logging
import threading
import time
import traceback
from typing import Any, Callable

from django.db import close_old_connections

from ... import _registry
from ..._hooks import current_job
from ...job import JobHandle
from . import _compat, results

logger = logging.getLogger("cogworker")
_lock = threading.Lock()
_registered: set[str] = set()


def register(task: Any) -> None:
    """Makes ``task`` runnable by workers in this process (once per path)."""
    name = task.module_path
    if name in _registered:
        return
    with _lock:
        if name in _registered:
            return
        run = _coroutine_runner(task) if inspect.iscoroutinefunction(task.func) else _runner(task)
        run.__name__ = run.__qualname__ = task.func.__qualname__
        run.__module__ = task.func.__module__
        _registry.register(JobHandle(run, name=name, queue=task.queue_name, retry=False))
        _registered.add(name)


def _running(task: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The RUNNING TaskResult of this attempt (what signals and the context see)."""
    job = current_job()
    now = results.moment(time.time())
    if job is None:  # called outside a worker
        return results.new(task, "", "RUNNING", args, kwargs, started_at=now, last_attempted_at=now)
    earlier = [""] * job.retry_count  # the failed attempts' workers are not read here
    return results.new(
        task,
        job.jid,
        "RUNNING",
        args,
        kwargs,
        enqueued_at=results.moment(job.created_at),
        started_at=now,
        last_attempted_at=now,
        worker_ids=[*earlier, job.worker or ""],
    )


def _call_arguments(task: Any, result: Any, args: list[Any]) -> list[Any]:
    return [_compat.TaskContext(task_result=result), *args] if task.takes_context else args


def _finished(result: Any, status: str, value: Any = None, error: BaseException | None = None) -> None:
    object.__setattr__(result, "status", _compat.TaskResultStatus[status])
    object.__setattr__(result, "finished_at", results.moment(time.time()))
    if error is not None:
        path = f"{type(error).__module__}.{type(error).__qualname__}"
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        result.errors.append(_compat.TaskError(exception_class_path=path, traceback=trace))
    else:
        object.__setattr__(result, "_return_value", value)
    send(_compat.task_finished, result)


def send(signal: Any, result: Any) -> None:
    """Sends a Django Tasks signal; a receiver that raises is logged and
    never changes what happens to the job."""
    from .backend import CogworkerBackend

    for receiver, response in signal.send_robust(CogworkerBackend, task_result=result):
        if isinstance(response, Exception):
            logger.error("%r receiver %r raised", result.id, receiver, exc_info=response)


def _runner(task: Any) -> Callable[..., Any]:
    def run(*job_args: Any) -> Any:
        args, kwargs = results.split_args(task.module_path, list(job_args))
        result = _running(task, args, kwargs)
        close_old_connections()
        try:
            send(_compat.task_started, result)
            value = _compat.normalize_json(task.func(*_call_arguments(task, result, args), **kwargs))
        except BaseException as error:
            _finished(result, "FAILED", error=error)
            raise
        finally:
            close_old_connections()
        _finished(result, "SUCCESSFUL", value)
        return value

    return run


def _coroutine_runner(task: Any) -> Callable[..., Any]:
    from asgiref.sync import sync_to_async

    # The ORM in async code runs on asgiref's one thread-sensitive thread:
    # its connections are the ones to close.
    close_connections = sync_to_async(close_old_connections, thread_sensitive=True)

    async def run(*job_args: Any) -> Any:
        args, kwargs = results.split_args(task.module_path, list(job_args))
        result = _running(task, args, kwargs)
        await close_connections()
        try:
            send(_compat.task_started, result)
            value = _compat.normalize_json(await task.func(*_call_arguments(task, result, args), **kwargs))
        except BaseException as error:
            _finished(result, "FAILED", error=error)
            raise
        finally:
            await close_connections()
        _finished(result, "SUCCESSFUL", value)
        return value

    return run
