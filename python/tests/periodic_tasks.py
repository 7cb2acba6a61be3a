"""A module for `cogworker worker periodic_tasks`: one periodic entry per
second with a handler here, and one for a class no process here handles."""

from __future__ import annotations

import os

import cogworker


@cogworker.job
def tick(label: str) -> None:
    with open(os.environ["TEST_RESULTS_FILE"], "a", encoding="utf-8") as f:
        f.write(f"{label}\n")


cogworker.periodic("* * * * * *", tick, ["py-tick"])
cogworker.periodic("*/2 * * * * *", "Reports.Missing", queue="elsewhere")
