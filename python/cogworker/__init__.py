"""cogworker: background jobs on Redis that are never lost.

Decorate a function with ``@cogworker.job``, push it with ``.enqueue(...)``,
run ``cogworker worker your.module``; ``cogworker.periodic(cron, handle)``
runs it on a schedule. ``cogworker.Client`` pushes to handlers
in any language by class name.
"""

from __future__ import annotations

import os as _os

from . import _core, testing
from ._core import (
    ConfigError,
    Error,
    InvalidArgument,
    InvalidJob,
    JobTimeout,
    NotReplicated,
    OverLimit,
    RedisError,
    ScriptError,
)
from ._hooks import (
    Hooks,
    JobDied,
    RunningJob,
    client_middleware,
    current_job,
    hooks,
    on,
    on_death,
    on_error,
    server_middleware,
)
from ._logging import JobContextFilter
from ._periodic import periodic
from ._settings import configure

# The guard: a native module of another version is refused on import.
from ._version import VERSION as __version__
from .api import Api
from .batch import Batch
from .client import Client, JobFailed, Pending
from .iteration import iterate
from .job import JobHandle, job, registry
from .limiter import Limiter
from .worker import Worker
from .workflow import PushedWorkflow, Workflow, chain, chord, group, step

__all__ = [
    "Api",
    "Batch",
    "Client",
    "ConfigError",
    "Error",
    "Hooks",
    "InvalidArgument",
    "InvalidJob",
    "JobDied",
    "JobFailed",
    "JobContextFilter",
    "JobTimeout",
    "JobHandle",
    "Limiter",
    "NotReplicated",
    "OverLimit",
    "Pending",
    "PushedWorkflow",
    "RedisError",
    "RunningJob",
    "ScriptError",
    "Worker",
    "Workflow",
    "__version__",
    "client_middleware",
    "chain",
    "chord",
    "configure",
    "current_job",
    "group",
    "hooks",
    "iterate",
    "job",
    "on",
    "on_death",
    "on_error",
    "periodic",
    "registry",
    "server_middleware",
    "step",
    "testing",
]

if hasattr(_os, "register_at_fork"):
    # A forked child (gunicorn/celery-style preloading) must build its own
    # runtime and connections; the parent's are never touched there.
    _os.register_at_fork(after_in_child=_core.after_fork_in_child)
