"""Jobs for the log tests: one that logs through Python's logging while it
runs, one that fails."""

import logging

import cogworker

log = logging.getLogger("app.billing")


@cogworker.job(name="Logged.Charge")
def charge(amount: int) -> None:
    log.info("charging %d", amount)


@cogworker.job(name="Logged.Breaks", retry=False)
def breaks() -> None:
    raise ValueError("card declined")
