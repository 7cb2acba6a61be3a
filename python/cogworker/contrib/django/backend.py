"""The Django Tasks backend: ``task.enqueue()`` pushes a cogworker job whose
class is the task's import path and whose args are ``[args, kwargs]``;
``get_result(id)`` reads the job's kept result.

    TASKS = {
        "default": {
            "BACKEND": "cogworker.contrib.django.CogworkerBackend",
            "QUEUES": ["default", "emails"],
            "OPTIONS": {"redis_url": "redis://127.0.0.1:6379/0"},
        }
    }
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, transaction

from ... import _core
from ...api import Api
from ...client import Client, given
from . import _compat, results, runner

# What OPTIONS may hold, with the defaults. A task that fails is not
# retried (Django Tasks has no retries): it is filed in cogworker's dead
# set, FAILED for Django, and can be retried from the dashboard.
DEFAULT_OPTIONS: dict[str, Any] = {
    "redis_url": None,  # default: cogworker.configure, COGWORKER_REDIS_URL, REDIS_URL
    "namespace": None,
    "result_ttl": 86_400.0,  # seconds a finished task's result is kept
    "retry": 0,  # retries before dead: a number, True (25) or False (discard)
    "enqueue_on_commit": False,
    "database": DEFAULT_DB_ALIAS,  # whose transaction enqueue_on_commit waits for
}


def _dataclass_options() -> dict[str, Any]:
    # The backport's Task has slots only on Python >= 3.11; match it.
    return {"frozen": True, "kw_only": True, "slots": "__slots__" in vars(_compat.Task)}


@dataclasses.dataclass(**_dataclass_options())
class CogworkerTask(_compat.Task):  # type: ignore[misc]
    """A Task with cogworker's per-task options, given to ``@task(...)``:
    ``enqueue_on_commit`` (None: the backend's) and ``retry`` (None: the
    backend's); and the fairness and flow options of any cogworker job
    (docs/fairness.md, docs/flow-control.md), ``group`` and ``key`` a key or
    a function called with the task's args and kwargs at each enqueue."""

    enqueue_on_commit: bool | None = None
    retry: bool | int | None = None
    group: Any = None
    group_cap: int | None = None
    group_rate: int | None = None
    group_rate_period: float | None = None
    group_rate_kind: str | None = None
    key: Any = None
    debounce: float | None = None
    throttle: float | None = None
    replace: bool | None = None
    sequence: bool | None = None


# The task fields a push takes as they are (None: not given).
JOB_FIELDS = (
    "group_cap",
    "group_rate",
    "group_rate_period",
    "group_rate_kind",
    "debounce",
    "throttle",
    "replace",
    "sequence",
)


def keyed_options(task: Any, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The task's fairness and flow options for a push of ``args`` and
    ``kwargs``: ``group`` and ``key`` given as functions are called with
    them (Django's calling convention, which the job's ``[args, kwargs]``
    payload is not); the core checks what they return."""
    options = {name: getattr(task, name, None) for name in JOB_FIELDS}
    for name in ("group", "key"):
        value = getattr(task, name, None)
        options[name] = value(*args, **kwargs) if callable(value) else value
    return given(options)


def priority_level(priority: int) -> int | None:
    """Django's priority (-100 to 100, higher first, 0 the default) as a
    cogworker level (0 to 9, higher first, 5 the default): above 0 onto
    6..9, below onto 4..0, in equal steps; None for the default."""
    if priority == 0:
        return None
    if priority > 0:
        return 5 + -(-min(priority, 100) * 4 // 100)
    return 5 - -(-min(-priority, 100) * 5 // 100)


class CogworkerBackend(_compat.BaseTaskBackend):  # type: ignore[misc]
    """Runs Django tasks on cogworker workers (``python manage.py cogworker``)."""

    task_class = CogworkerTask
    supports_defer = True  # run_after: a scheduled job
    supports_async_task = True  # an async def task runs on the worker's event loop
    supports_get_result = True  # from the job's kept result (OPTIONS result_ttl)
    supports_priority = True  # Django's -100..100 onto cogworker's levels: see priority_level

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = sorted(set(self.options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS'] has unknown key(s) {unknown}; known: {sorted(DEFAULT_OPTIONS)}"
            )
        self.settings = {**DEFAULT_OPTIONS, **self.options}
        self._check_option("retry", lambda v: isinstance(v, bool) or (isinstance(v, int) and v >= 0))
        self._check_option("enqueue_on_commit", lambda v: isinstance(v, bool))
        self._check_option(
            "result_ttl", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1
        )
        try:
            self.client = Client(self.settings["redis_url"], self.settings["namespace"])
        except _core.ConfigError as error:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]['OPTIONS']: {error}") from error
        self._api: Api | None = None
        self._api_lock = threading.Lock()

    def _check_option(self, name: str, valid: Any) -> None:
        value = self.settings[name]
        if not valid(value):
            raise ImproperlyConfigured(f"TASKS[{self.alias!r}]['OPTIONS'][{name!r}] = {value!r} is invalid")

    @property
    def api(self) -> Api:
        with self._api_lock:
            if self._api is None:
                self._api = Api(self.settings["redis_url"], self.settings["namespace"])
            return self._api

    def validate_task(self, task: Any) -> None:
        super().validate_task(task)
        # Every task module a worker imports registers its tasks here: only
        # those run (an unknown class is failed, never imported).
        runner.register(task)

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        retry = getattr(task, "retry", None)
        opts = given(
            {
                "queue": task.queue_name,
                "retry": self.settings["retry"] if retry is None else retry,
                "at": task.run_after,
                "result_ttl": self.settings["result_ttl"],
                "priority": priority_level(getattr(task, "priority", 0)),
            }
        )
        # Django's own argument check (a JSON round trip), then the engine's.
        args, kwargs = _compat.normalize_json(list(args)), _compat.normalize_json(dict(kwargs))
        opts.update(keyed_options(task, args, kwargs))
        payload = _core.prepare_job(task.module_path, [args, kwargs], **opts)
        result = results.enqueued(task, payload, args, kwargs)

        def push() -> None:
            if self.client.push(payload) is not None:
                runner.send(_compat.task_enqueued, result)

        on_commit = getattr(task, "enqueue_on_commit", None)
        if on_commit is None:
            on_commit = self.settings["enqueue_on_commit"]
        database = self.settings["database"]
        if on_commit and transaction.get_connection(database).in_atomic_block:
            # Pushed only once the rows the task reads are committed; never
            # if the transaction rolls back.
            transaction.on_commit(push, using=database)
        else:
            push()
        return result

    def get_result(self, result_id: str) -> Any:
        record = self.api.result(result_id)
        if record is None:
            raise _compat.TaskResultDoesNotExist(result_id)
        attempts: list[dict[str, Any]] = []
        if record.get("retry_count") or record.get("status") in ("failed", "dead"):
            attempts = self.api.attempts(result_id)
        return results.from_record(record, attempts)
