"""The Python worker of the fault suite: `Account(token, millis)` sleeps, then
appends `token` to TEST_RESULTS_FILE (one line per execution)."""

from __future__ import annotations

import os
import time

import cogworker

cogworker.configure(
    orphan_threshold=float(os.environ.get("TEST_ORPHAN_THRESHOLD", "300")),
    orphan_check_interval=float(os.environ.get("TEST_ORPHAN_CHECK", "0.5")),
    heartbeat_interval=float(os.environ.get("TEST_HEARTBEAT", "0.5")),
    scheduler_poll_interval=0.2,
    fetch_idle_max_interval=0.5,
    shutdown_timeout=5.0,
)


@cogworker.job(name="Account")
def account(token: str, millis: int = 0) -> None:
    time.sleep(millis / 1000)
    with open(os.environ["TEST_RESULTS_FILE"], "a", encoding="utf-8") as f:
        f.write(f"{token}\n")
