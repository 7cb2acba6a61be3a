"""The README's first command runs the demo: it tells its story in a screen
(a progress line and a summary) and leaves the worker's log in a file whose
path it prints (it printed thousands of log lines before)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import HERE

DEMO = os.path.join(HERE, "..", "examples", "demo.py")


def test_the_demo_runs_every_job_in_a_screen_of_output() -> None:
    ran = subprocess.run(
        [sys.executable, DEMO],
        env={**os.environ, "DEMO_JOBS": "300"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    lines = ran.stdout.splitlines()
    assert len(lines) <= 20 and ran.stderr == "", ran.stdout
    assert "of 321 jobs ran" in ran.stdout, ran.stdout
    assert "in dead, its bytes kept: (unparseable)" in ran.stdout and "'{oops'" in ran.stdout
    log = re.search(r"its log: (\S+) \((\d+) lines\)", ran.stdout)
    assert log and os.path.exists(log.group(1)) and int(log.group(2)) > 300, ran.stdout
