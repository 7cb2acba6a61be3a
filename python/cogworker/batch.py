"""Batches: jobs pushed as one unit, with callbacks pushed exactly once
when they are done (docs/batches.md). The counting is the core's, in the
scripts that settle each job; this module is the Python idiom around it::

    batch = cogworker.Batch("import users")
    batch.on("success", import_done, {"month": 12}, queue="critical")
    with batch:                       # every push in here joins the batch
        for row in rows:
            import_row.enqueue(row)
    # closed: it completes once every job has run

A callback runs with the batch's status (a dict) first, then its args:
``import_done(status, {"month": 12})``. Events: ``complete`` (every job
ran once), ``success`` (every job succeeded), ``death`` (a job died).
"""

from __future__ import annotations

import contextvars
from typing import Any

from . import _core
from .api import Api
from .client import handler_and_options
from .client import joining_batch as _current


def current_bid() -> str | None:
    """The batch that pushes in this thread or task join (inside ``with
    batch:``), or None."""
    return _current.get()


class Batch:
    """A batch to open (``Batch("description")``), or one that exists
    (``Batch(bid=...)``: a running job of it adding more, say, with
    ``current_job().bid``). ``with batch:`` opens a new one on entry and
    closes it on a clean exit; pushes inside join it. A batch opened inside
    another's ``with`` is its child unless ``parent`` says otherwise."""

    def __init__(
        self,
        description: str = "",
        *,
        bid: str | None = None,
        parent: str | None = None,
        ttl: int | None = None,
        keep_for: int | None = None,
        api: Api | None = None,
    ) -> None:
        self.description = description
        self.bid = bid
        self.parent = parent
        self.ttl, self.keep_for = ttl, keep_for
        self._api = api
        self._callbacks: list[dict[str, Any]] = []
        self._tokens: list[contextvars.Token[str | None]] = []
        self._opens = bid is None

    @property
    def api(self) -> Api:
        if self._api is None:
            self._api = Api()
        return self._api

    def on(self, event: str, handler: Any, *args: Any, **options: Any) -> Batch:
        """Pushes ``handler`` (a ``@job`` function, with the options it was
        declared with, or a handler's name, in any language) with the batch's status and then ``args`` when
        ``event`` (``complete``, ``success`` or ``death``) happens;
        ``options`` are push options (``queue``, ``retry``, ``priority``...).
        Before the batch is opened."""
        name, options = handler_and_options(handler, options)
        self._callbacks.append(_core.batch_callback(event, name, list(args), self.bid is not None, **options))
        return self

    def callback_jids(self, event: str) -> list[str]:
        """The jids the callbacks for ``event`` will run as (to wait for
        a result they keep, say)."""
        return _core.callback_jids(self._callbacks, event)

    def open(self) -> str:
        """Opens the batch (once) and returns its id; ``with`` does it."""
        if self.bid is None:
            parent = self.parent if self.parent is not None else _current.get()
            # None: the core's default.
            self.bid = self.api.open_batch(self.description, self._callbacks, parent, self.ttl, self.keep_for)
        return self.bid

    def close(self) -> None:
        """Says every job is pushed: the batch completes once they have run."""
        self.api.close_batch(self.open())

    def status(self) -> dict[str, Any] | None:
        """Its counts, failures and times (``Api().batch(bid)``)."""
        return self.api.batch(self.open())

    def __enter__(self) -> Batch:
        self._tokens.append(_current.set(self.open()))
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        _current.reset(self._tokens.pop())
        # A block that raised leaves the batch open: its callbacks do not
        # fire for a batch half pushed.
        if kind is None and self._opens and not self._tokens:
            self.close()
