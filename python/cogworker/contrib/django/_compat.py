"""The Django Tasks API this project has: ``django.tasks`` (Django >= 6.0)
or the ``django_tasks`` backport (Django 4.2-5.2). Same names either way."""

from __future__ import annotations

from typing import Any

try:
    from django.tasks import TaskContext, TaskResult, TaskResultStatus
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json

    API = "django.tasks"
except ImportError:  # Django < 6.0: the backport
    try:
        from django_tasks import TaskContext, TaskResult, TaskResultStatus
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import Task, TaskError
        from django_tasks.exceptions import InvalidTaskError as InvalidTask
        from django_tasks.exceptions import TaskResultDoesNotExist
        from django_tasks.signals import task_enqueued, task_finished, task_started
        from django_tasks.utils import normalize_json
    except ImportError as error:
        raise ImportError(
            "cogworker.contrib.django needs Django >= 6.0 (django.tasks) or, before 6.0, "
            "the django-tasks backport (pip install django-tasks)"
        ) from error
    API = "django_tasks"


def task_backends() -> Any:
    """The TASKS backends handler of the API in use."""
    if API == "django.tasks":
        from django.tasks import task_backends as handler
    else:
        from django_tasks import task_backends as handler
    return handler


__all__ = [
    "API",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
