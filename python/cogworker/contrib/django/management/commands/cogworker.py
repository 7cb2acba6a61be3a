"""``python manage.py cogworker [MODULE...]``: a worker for this project.

Django is set up once; the ``tasks`` module of every installed app is
imported (registering its tasks), then any MODULE given (plain
``@cogworker.job`` handlers). Redis, namespace and queues default to the
``--backend`` alias's TASKS entry; the flags are ``cogworker worker``'s.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from cogworker import _core, cli
from cogworker.contrib.django import _compat


class Command(BaseCommand):
    help = "Run a cogworker worker for this project's Django tasks and cogworker jobs."

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_worker_arguments(parser, modules_required=False)
        # `cogworker worker -v` is Django's verbosity here: `-v 2` or this.
        parser.add_argument("--verbose", action="store_true", help="debug logging (as -v 2)")
        parser.add_argument(
            "--backend",
            default="default",
            help="the TASKS alias whose OPTIONS and QUEUES the worker uses (default: default)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from cogworker.contrib.django.backend import CogworkerBackend

        backend = _compat.task_backends()[options["backend"]]
        if not isinstance(backend, CogworkerBackend):
            raise CommandError(
                f"TASKS[{options['backend']!r}] uses {type(backend).__module__}.{type(backend).__name__}, "
                "not cogworker.contrib.django.CogworkerBackend"
            )
        if not logging.getLogger().handlers:
            cli.setup_logging(options["json_logs"], options["verbosity"] > 1 or options["verbose"])
        else:
            _core.init_logging(options["json_logs"])  # the engine's own lines
        for module in [*task_modules(), *options["modules"]]:
            importlib.import_module(module)
        flags = dict(options)
        flags["redis_url"] = options["redis_url"] or backend.settings["redis_url"]
        flags["namespace"] = options["namespace"] or backend.settings["namespace"]
        flags["queues"] = options["queues"] or sorted(backend.queues)
        try:
            settings = cli.worker_settings(argparse.Namespace(**flags))
            status = cli.serve_processes(settings, flags.get("processes"))
        except (_core.ConfigError, _core.InvalidArgument) as error:
            raise CommandError(str(error), returncode=2) from error
        if status:
            sys.exit(status)


def task_modules() -> list[str]:
    """``<app>.tasks`` of every installed app that has one."""
    found = []
    for app in apps.get_app_configs():
        name = f"{app.name}.tasks"
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except ModuleNotFoundError:  # the app is a module, not a package
            continue
    return found
