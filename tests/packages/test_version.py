"""One version: Cargo.toml's [workspace.package] sets it (scripts/set-version
writes it and the two host constants); the crates, the wheel, the sdist, the
gems and what each package and native module reports at run time carry that
version, and CHANGELOG.md has a section for it."""

from __future__ import annotations

import glob
import re
import subprocess
import tarfile
from pathlib import Path

import tomllib

import cogworker
from cogworker import _core

ROOT = Path(__file__).resolve().parents[2]


def the_version() -> str:
    with open(ROOT / "Cargo.toml", "rb") as f:
        return str(tomllib.load(f)["workspace"]["package"]["version"])


def test_every_package_and_native_module_carries_cargos_version() -> None:
    version = the_version()
    found = {
        "cogworker.__version__": cogworker.__version__,
        "cogworker._core.__version__": _core.__version__,
        "python/cogworker/_version.py": re.search(
            r'^VERSION = "(.*)"$', (ROOT / "python/cogworker/_version.py").read_text(), re.M
        )[1],  # type: ignore[index]
        "ruby/lib/cogworker/version.rb": re.search(
            r"VERSION = '(.*)'", (ROOT / "ruby/lib/cogworker/version.rb").read_text()
        )[1],  # type: ignore[index]
    }
    ruby = subprocess.run(
        ["ruby", "-I", str(ROOT / "ruby/lib"), "-e", "require 'cogworker'; print Cogworker::VERSION"],
        capture_output=True,
        text=True,
        check=True,
    )
    found["Cogworker::VERSION (Ruby, its native module checked)"] = ruby.stdout
    [wheel] = glob.glob(str(ROOT / "dist" / "cogworker-*.whl"))
    found["the wheel's name"] = Path(wheel).name.split("-")[1]
    [sdist] = glob.glob(str(ROOT / "dist" / "cogworker-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        top = [m for m in archive.getmembers() if m.name.count("/") == 1]
        pkg_info = next(m for m in top if m.name.endswith("/PKG-INFO"))
        metadata = archive.extractfile(pkg_info).read().decode()  # type: ignore[union-attr]
    found["the sdist's PKG-INFO"] = re.search(r"^Version: (.*)$", metadata, re.M)[1]  # type: ignore[index]
    assert found == dict.fromkeys(found, version)


def test_the_changelog_has_a_section_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(the_version())}\b", changelog, re.M), "CHANGELOG.md lacks this version"


def test_set_version_refuses_what_is_not_a_version() -> None:
    refused = subprocess.run([ROOT / "scripts/set-version", "one.two"], capture_output=True, text=True)
    assert refused.returncode == 2 and "not a version" in refused.stderr
