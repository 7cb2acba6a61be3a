"""Django integration: a Django Tasks backend and a worker command.

    INSTALLED_APPS = [..., "cogworker.contrib.django"]
    TASKS = {"default": {"BACKEND": "cogworker.contrib.django.CogworkerBackend"}}

then ``python manage.py cogworker``. Django >= 6.0 (``django.tasks``) or
4.2-5.2 with the ``django-tasks`` backport.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CogworkerBackend", "CogworkerTask"]


def __getattr__(name: str) -> Any:
    # Imported on first use: INSTALLED_APPS loads this package before the
    # task backends may be imported.
    if name in __all__:
        from . import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
