"""The Django project's tests (django_project/) again under Django 6, whose
`django.tasks` needs Python >= 3.12: in a fresh virtualenv of such a
Python (pyenv's, on this machine) with the wheel scripts/build-wheel made,
Django 6 and pytest from PyPI. (The suite's own interpreter runs them under
Django 5.2 with the django-tasks backport.)"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYENV = Path.home() / ".pyenv" / "versions"


def python_for_django6() -> str | None:
    """This interpreter if it is >= 3.12, else the newest pyenv 3.12/3.13."""
    if sys.version_info >= (3, 12):
        return sys.executable
    for minor in ("3.13", "3.12"):
        candidates = sorted(PYENV.glob(f"{minor}.*/bin/python3"))
        if candidates:
            return str(candidates[-1])
    return None


def test_the_django_project_under_django_6(tmp_path: Path) -> None:
    python = python_for_django6()
    if python is None:
        pytest.skip("Django 6 needs Python >= 3.12 and this machine has none")
    wheels = glob.glob(str(ROOT / "dist" / "cogworker-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in dist/ (scripts/build-wheel), found {wheels}"
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, wheels[0], "django>=6,<7", "pytest"], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "django_project"],
        cwd=Path(__file__).parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    version = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import django; print(django.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert version.startswith("6."), version
    assert run.returncode == 0, f"Django {version}:\n{run.stdout}\n{run.stderr}"
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout
