"""Workflows: steps one after another (``chain``), jobs side by side
(``group``), and a group then a step that takes all their results
(``chord``), across languages (docs/workflows.md). The core builds them on
batches and hands each step over exactly once; this module is the Python
idiom around it::

    flow = cogworker.chain(
        fetch.step(url),
        parse.step(takes_result=True),           # parse(fetch's result)
        cogworker.group(index.step(), cogworker.step("Billing::Count"), takes_result=True),
        report.step(takes_result=True),          # report([index's, Count's])
    ).push()
    flow.id          # the workflow's batch: Api().batch(flow.id)

A step that dies stops the workflow there; ``.on("death", handler)`` is
pushed then, ``.on("success", handler)`` after the last step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _core
from .api import Api
from .client import handler_and_options, joining_batch


def step(handler: Any, *args: Any, takes_result: bool = False, **options: Any) -> dict[str, Any]:
    """A step: ``handler`` (a ``@job`` function, with the options it was
    declared with, or a handler's name, in any language) with ``args`` and
    push ``options`` (``queue``, ``retry``, ``result_ttl``...).
    ``takes_result``: the step before's result goes first in its args (a
    list after a group)."""
    name, options = handler_and_options(handler, options)
    return _core.workflow_step(name, list(args), takes_result, **options)


def group(*steps: dict[str, Any], takes_result: bool = False) -> dict[str, Any]:
    """Steps of one job each run side by side, as one step; done when each
    has succeeded. ``takes_result`` is the group's, for each of them."""
    return _core.workflow_group(list(steps), takes_result)


class Workflow:
    """Steps to push as one workflow, each once the one before succeeded.
    Pushed inside ``with Batch(...)``, it is one unit of that batch."""

    def __init__(
        self, *steps: dict[str, Any], description: str | None = None, api: Api | None = None
    ) -> None:
        self.steps, self.description = _core.workflow_shaped("workflow", list(steps), None, description)
        self._api = api
        self._callbacks: list[dict[str, Any]] = []

    def on(self, event: str, handler: Any, *args: Any, **options: Any) -> Workflow:
        """Pushes ``handler`` with the workflow's status and then ``args``
        when ``event`` happens: ``success`` (its last step succeeded),
        ``death`` (a step died, and it stopped) or ``complete``."""
        name, options = handler_and_options(handler, options)
        self._callbacks.append(_core.batch_callback(event, name, list(args), False, **options))
        return self

    def callback_jids(self, event: str) -> list[str]:
        """The jids the callbacks for ``event`` will run as (to wait for a
        result they keep, say), as ``Batch.callback_jids``."""
        return _core.callback_jids(self._callbacks, event)

    def push(self) -> PushedWorkflow:
        """Pushes its first step now and the others in turn; what was pushed."""
        api = self._api if self._api is not None else Api()
        pushed = api.push_workflow(self.steps, self.description, self._callbacks, joining_batch.get())
        return PushedWorkflow(pushed["id"], [(s["bid"], list(s["jids"])) for s in pushed["steps"]])


@dataclass(frozen=True)
class PushedWorkflow:
    """A pushed workflow: its id (its batch's: ``Api().batch(id)``) and each
    step's batch id and jids, in order."""

    id: str
    steps: list[tuple[str, list[str]]]

    @property
    def last_jids(self) -> list[str]:
        """The last step's jids (to wait for a result it keeps, say)."""
        return self.steps[-1][1]


def chain(*steps: dict[str, Any], description: str | None = None) -> Workflow:
    """``steps`` one after another."""
    steps_, described = _core.workflow_shaped("chain", list(steps), None, description)
    return Workflow(*steps_, description=described)


def chord(steps: list[dict[str, Any]], callback: dict[str, Any], description: str | None = None) -> Workflow:
    """``steps`` side by side, then ``callback`` with the list of their
    results first in its args."""
    shaped, described = _core.workflow_shaped("chord", list(steps), callback, description)
    return Workflow(*shaped, description=described)
