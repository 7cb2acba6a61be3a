"""What the framework tests share: a worker process started and awaited."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import cogworker

WORKER_START = 20.0


def start_worker(
    command: list[str], cwd: Path, env: dict[str, str], api: cogworker.Api
) -> subprocess.Popen[str]:
    """Starts ``command`` (a worker) and returns once it has registered with
    Redis; fails the test with its output if it exits or takes too long."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + WORKER_START
    while not api.processes():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the worker did not start:\n{process.communicate()[0]}")
        time.sleep(0.05)
    return process


def stop_worker(process: subprocess.Popen[Any], timeout: float = 30) -> str:
    """TERM, then its output once it exited (killed, and the test failed,
    if it does not within ``timeout``)."""
    process.send_signal(15)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"the worker did not stop within {timeout} s of TERM:\n{process.communicate()[0]}")
    return output
