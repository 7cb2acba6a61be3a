"""The wheel scripts/build-wheel made installs and runs where there is no
Rust: fresh virtualenvs whose PATH has no cargo or rustc, the wheel as the
only package, a worker process running jobs another process pushed."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from cogworker.testing import RedisServer

ROOT = Path(__file__).resolve().parents[2]
# What a machine without Rust has: the system's directories, no ~/.cargo/bin.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
PYENV = Path.home() / ".pyenv" / "versions"

TASKS = """
import os
import cogworker

@cogworker.job
def record(n):
    with open(os.environ["RESULTS"], "a") as f:
        f.write(f"{n}\\n")
"""


def the_wheel() -> Path:
    wheels = glob.glob(str(ROOT / "dist" / "cogworker-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in dist/ (scripts/build-wheel), found {wheels}"
    return Path(wheels[0])


def interpreters() -> list[str]:
    """The CPython of this suite, and the other minor versions this machine
    has (pyenv), since the one abi3 wheel claims them all."""
    found = {f"{sys.version_info.major}.{sys.version_info.minor}": os.path.realpath(sys.executable)}
    for minor in ("3.9", "3.10", "3.12", "3.13"):
        candidates = sorted(PYENV.glob(f"{minor}.*/bin/python3"))
        if candidates:
            found.setdefault(minor, str(candidates[-1]))
    return [found[k] for k in sorted(found, key=lambda v: tuple(map(int, v.split("."))))]


def fresh_venv(python: str, where: Path) -> Path:
    """A new virtualenv with the wheel installed (no index, no network)."""
    base = subprocess.run(
        [python, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    interpreter = str(Path(base) / "bin" / Path(python).name)
    subprocess.run([interpreter, "-m", "venv", str(where)], check=True, env={"PATH": BARE_PATH})
    subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", str(the_wheel())],
        check=True,
        env={"PATH": f"{where / 'bin'}:{BARE_PATH}", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    return where


def bare_env(venv: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": f"{venv / 'bin'}:{BARE_PATH}", "HOME": str(venv)}
    env.update(extra)
    return env


def test_the_wheel_is_abi3_manylinux_and_carries_the_stubs() -> None:
    wheel = the_wheel()
    # glibc 2.17 and later: RHEL/Alma 8, Debian 11, Ubuntu 20.04, Amazon Linux 2.
    assert "-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("cogworker/py.typed", "cogworker/_core.pyi", "cogworker/__init__.py"):
        assert expected in names
    assert any(n.startswith("cogworker/_core") and n.endswith(".so") for n in names), names
    sdists = glob.glob(str(ROOT / "dist" / "cogworker-*.tar.gz"))
    assert len(sdists) == 1, sdists


def test_every_file_in_the_wheel_and_the_sdist_is_readable_by_every_user() -> None:
    """Installed by root, a package must work for every user: each file
    world-readable, each directory searchable."""
    unreadable = [
        info.filename
        for info in zipfile.ZipFile(the_wheel()).infolist()
        if (info.external_attr >> 16) & 0o777 and not (info.external_attr >> 16) & 0o004
    ]
    assert unreadable == [], unreadable
    [sdist] = glob.glob(str(ROOT / "dist" / "cogworker-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        unreadable = [
            member.name
            for member in archive.getmembers()
            if not member.mode & 0o004 or (member.isdir() and not member.mode & 0o001)
        ]
    assert unreadable == [], unreadable


def test_twine_finds_the_wheel_and_the_sdist_fit_for_pypi() -> None:
    """Their metadata renders and is complete, as PyPI would take it."""
    twine = Path(sys.executable).parent / "twine"
    checked = subprocess.run(
        [str(twine), "check", "--strict", *glob.glob(str(ROOT / "dist" / "cogworker-*"))],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_no_rust_on_the_bare_path() -> None:
    assert shutil.which("cargo", path=BARE_PATH) is None
    assert shutil.which("rustc", path=BARE_PATH) is None


@pytest.mark.parametrize("python", interpreters())
def test_installs_and_imports_without_rust(python: str, tmp_path: Path) -> None:
    venv = fresh_venv(python, tmp_path / "venv")
    version = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import cogworker; print(cogworker.__version__)"],
        env=bare_env(venv),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == the_wheel().name.split("-")[1]
    help_text = subprocess.run(
        [str(venv / "bin" / "cogworker"), "--help"], env=bare_env(venv), capture_output=True, text=True
    )
    assert help_text.returncode == 0, help_text.stderr
    assert "worker" in help_text.stdout


def test_a_worker_from_the_wheel_runs_jobs_another_process_pushed(tmp_path: Path) -> None:
    venv = fresh_venv(sys.executable, tmp_path / "venv")
    app = tmp_path / "app"
    app.mkdir()
    (app / "tasks.py").write_text(TASKS)
    results = tmp_path / "results.txt"
    with RedisServer() as server:
        env = bare_env(venv, COGWORKER_REDIS_URL=server.url, RESULTS=str(results))
        log = open(tmp_path / "worker.log", "wb")
        worker = subprocess.Popen(
            [str(venv / "bin" / "cogworker"), "worker", "tasks", "-c", "4"],
            cwd=app,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            pusher = "import tasks\nfor n in range(200):\n    tasks.record.enqueue(n)\n"
            subprocess.run(
                [str(venv / "bin" / "python"), "-c", pusher],
                cwd=app,
                env={**env, "PYTHONPATH": "."},
                check=True,
            )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                done = results.read_text().split() if results.exists() else []
                if len(done) >= 200:
                    break
                time.sleep(0.05)
            assert sorted(map(int, done)) == list(range(200))
        finally:
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(30)
            log.close()
        assert code == 0, (tmp_path / "worker.log").read_text()
