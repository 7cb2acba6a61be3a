"""scripts/setup decides what to install by asking dpkg about exact packages.

Each test writes a made-up dpkg database (SETUP_DPKG_ADMINDIR) and reads
what `scripts/setup --dry-run` would install on that machine.
"""

import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[2] / "scripts" / "setup"
EVERYTHING = [
    "redis-server",
    "python3-venv",
    "ruby-dev",
    "libclang-dev",
    "ruby-minitest",
    "ruby-activejob",
    "ruby-railties",
    "ruby-actionmailer",
    "chromium",
    "npm",
    "prometheus",
    "debootstrap",
    "ruby-sidekiq",
]


def stanza(package: str, status: str = "install ok installed", provides: str = "") -> str:
    lines = [
        f"Package: {package}",
        f"Status: {status}",
        "Version: 1.0",
        "Architecture: amd64",
        "Maintainer: x",
        "Description: x",
    ]
    if provides:
        lines.append(f"Provides: {provides}")
    return "\n".join(lines) + "\n\n"


def would_install(tmp_path: Path, stanzas: list[str]) -> list[str]:
    (tmp_path / "status").write_text("".join(stanzas))
    result = subprocess.run(
        [str(SETUP), "--dry-run"],
        env={"PATH": "/usr/bin:/bin", "SETUP_DPKG_ADMINDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.split()


def test_libclang_cpp_is_not_libclang(tmp_path: Path) -> None:
    # The base image: llvm pulls in libclang-cpp14 (libclang-cpp.so.14),
    # which is not the libclang that rb-sys's bindgen loads.
    wanted = would_install(tmp_path, [stanza("llvm"), stanza("libclang-cpp14"), stanza("python3-venv")])
    assert "libclang-dev" in wanted
    assert "python3-venv" not in wanted


def test_a_machine_with_everything_installs_nothing(tmp_path: Path) -> None:
    assert would_install(tmp_path, [stanza(p) for p in EVERYTHING]) == []


def test_removed_package_with_config_files_left_counts_as_missing(tmp_path: Path) -> None:
    stanzas = [stanza(p) for p in EVERYTHING if p != "libclang-dev"]
    stanzas.append(stanza("libclang-dev", status="deinstall ok config-files"))
    assert would_install(tmp_path, stanzas) == ["libclang-dev"]


def test_a_package_that_provides_npm_is_enough(tmp_path: Path) -> None:
    # nodesource's nodejs ships npm, Provides it and Conflicts with Debian's.
    stanzas = [stanza(p) for p in EVERYTHING if p != "npm"]
    stanzas.append(stanza("nodejs", provides="nodejs-dev, npm (= 10.9.0)"))
    assert would_install(tmp_path, stanzas) == []


def test_this_machine_lacks_nothing_after_setup() -> None:
    # scripts/test ran scripts/setup first: the real dpkg database agrees.
    result = subprocess.run([str(SETUP), "--dry-run"], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == []


def test_the_readme_names_every_package_setup_installs() -> None:
    """The README's two commands say what they install: every apt package
    scripts/setup may install is named there (it once named 5 of 12)."""
    readme = (SETUP.parents[1] / "README.md").read_text()
    start = readme.index("## The two commands")
    section = " ".join(readme[start : readme.index("```", start)].split())
    missing = [package for package in EVERYTHING if f"`{package}`" not in section]
    assert not missing, missing
