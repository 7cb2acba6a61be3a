"""The demo app's jobs: what a web app would push and a worker would run."""

from __future__ import annotations

import asyncio
import hashlib
import os

import cogworker

# Retries here are due in a second: look for due ones every second (the
# default is every 5 s).
cogworker.configure(scheduler_poll_interval=1.0)


@cogworker.job(queue="default")
def thumbnail(image_id: int, size: int) -> None:
    # Stand-in for real work: hash some bytes.
    hashlib.sha256(f"{image_id}:{size}".encode() * 200).hexdigest()


@cogworker.job(queue="critical", retry=5, retry_in=lambda count, error: 1.0)
def send_email(address: str, subject: str) -> None:
    # Flaky on purpose: the first attempt of every 10th address fails.
    marker = os.path.join(os.environ.get("DEMO_STATE_DIR", "/tmp"), f"sent-{address}")
    if address.endswith("0@example.com") and not os.path.exists(marker):
        open(marker, "w").close()
        raise ConnectionError(f"SMTP server refused {address}")


@cogworker.job
async def fetch_feed(url: str) -> None:
    await asyncio.sleep(0.005)  # stand-in for an HTTP call


@cogworker.job(retry=False)
def build_report(name: str) -> None:
    print(f"demo worker: report {name!r} built", flush=True)
