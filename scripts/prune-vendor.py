"""Shrinks a `cargo vendor` directory to what building one package needs.

usage: (in the workspace) python3 prune-vendor.py VENDOR_DIR PACKAGE TARGET...

`cargo vendor` copies every crate of the lock file: those of every platform
(the Windows API bindings alone are tens of megabytes) and the workspace's
dev-dependencies. A crate that no build of PACKAGE for TARGET... compiles
(its normal and build dependencies, per `cargo metadata --filter-platform`)
is replaced by a stub: its manifest stays, because cargo reads the manifest
of every locked package, and its sources become empty files. Of the crates
that stay, a crate without a build script keeps what rustc reads (`src/`,
the files its manifest names, README and LICENSE files, which docs
include); one with a build script keeps everything but its tests, benches
and examples. From both go top-level changelogs and the like, and the
files NOT_COMPILED lists per crate (other targets' sources, generators'
inputs, test data), which the offline install test would catch if a Linux
build needed them. Each `.cargo-checksum.json` is rewritten to list only
the files kept, so cargo's checksum verification still holds for every
file.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

DROPPED_DIRS = ("tests", "benches", "examples")
# Top-level files of a crate no build reads (a crate's docs include its
# README, which stays).
DROPPED_TOP_FILES = (
    "CHANGELOG*",
    "CHANGES*",
    "RELEASES*",
    "CONTRIBUTING*",
    "SECURITY*",
    "Cargo.toml.orig",
    "Cargo.lock",
)
# Files inside crates that stay which no Linux or macOS build of theirs
# reads: other operating systems' and 32-bit targets' sources, and inputs
# of the crate's own code generation. Patterns are `fnmatch` patterns on
# the path in the crate, where `*` also matches `/`.
NOT_COMPILED = {
    "libc": [
        f"src/{path}/*"
        for path in (
            "fuchsia",
            "windows",
            "wasi",
            "solid",
            "teeos",
            "vxworks",
            "qurt",
            "unix/aix",
            "unix/cygwin",
            "unix/haiku",
            "unix/hurd",
            "unix/newlib",
            "unix/nto",
            "unix/nuttx",
            "unix/redox",
            "unix/solarish",
            "unix/bsd/freebsdlike",
            "unix/bsd/netbsdlike",
            "unix/linux_like/android",
            "unix/linux_like/emscripten",
            "unix/linux_like/l4re",
            "unix/linux_like/linux/uclibc",
        )
    ],
    "ring": [
        # Windows assembly, prebuilt Windows objects, 32-bit x86 and ARM.
        "pregenerated/*-win32n.*",
        "pregenerated/*-win64.S",
        "pregenerated/*-nasm.*",
        "pregenerated/*-x86-elf.S",
        "pregenerated/*-linux32.S",
        # 32-bit and MSVC variants of the fiat headers and ARM32 assembly
        # (the preprocessor includes one variant per target).
        "third_party/fiat/*_32.h",
        "third_party/fiat/*_msvc.h",
        "crypto/poly1305/poly1305_arm_asm.S",
        # Test vectors, read only by ring's own tests.
        "*_test.txt",
        "*_tests.txt",
        # The perlasm generators: a build from a package (no `.git`)
        # assembles the pregenerated files instead.
        "crypto/*.pl",
        "crypto/perlasm/*",
    ],
    # The IANA sources: only the `filter-by-regex` and `case-insensitive`
    # features regenerate the tables from them; the others use src/prebuilt.
    "chrono-tz": ["tz/*"],
}


def needed_packages(root: str, targets: list[str]) -> set[tuple[str, str]]:
    """(name, version) of every package a build of `root` compiles."""
    needed: set[tuple[str, str]] = set()
    for target in targets:
        meta = json.loads(
            subprocess.check_output(
                ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target]
            )
        )
        packages = {p["id"]: (p["name"], p["version"]) for p in meta["packages"]}
        nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
        stack = [pid for pid, (name, _) in packages.items() if name == root]
        seen: set[str] = set()
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            for dep in nodes[pid]["deps"]:
                if any(kind["kind"] != "dev" for kind in dep["dep_kinds"]):
                    stack.append(dep["pkg"])
        needed.update(packages[pid] for pid in seen)
    return needed


def manifest_paths(manifest: dict, compiled_only: bool = False) -> list[str]:
    """Source files the manifest names explicitly; `compiled_only`: just the
    ones a dependency's build compiles (its library and build script)."""
    paths = []
    package = manifest.get("package", {})
    if isinstance(package.get("build"), str):
        paths.append(package["build"])
    for section in ("lib", "proc-macro"):
        if isinstance(manifest.get(section), dict) and "path" in manifest[section]:
            paths.append(manifest[section]["path"])
    for section in () if compiled_only else ("bin", "example", "test", "bench"):
        for target in manifest.get(section, []):
            if "path" in target:
                paths.append(target["path"])
    return paths


def stub(crate: Path) -> None:
    manifest_text = (crate / "Cargo.toml").read_text()
    manifest = tomllib.loads(manifest_text)
    checksum = json.loads((crate / ".cargo-checksum.json").read_text())
    for child in crate.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
        elif child.name not in ("Cargo.toml", ".cargo-checksum.json"):
            child.unlink()
    for relative in manifest_paths(manifest) or ["src/lib.rs"]:
        path = crate / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fn main() {}\n" if relative.endswith("build.rs") else "")
    if not (crate / "src" / "lib.rs").exists():
        (crate / "src").mkdir(exist_ok=True)
        (crate / "src" / "lib.rs").write_text("")
    keep = {"Cargo.toml": checksum["files"].get("Cargo.toml")}
    checksum["files"] = {k: v for k, v in keep.items() if v}
    (crate / ".cargo-checksum.json").write_text(json.dumps(checksum))


def kept(path: str, manifest: dict, has_build_script: bool) -> bool:
    top = path.split("/")[0]
    if top == path and any(fnmatch.fnmatchcase(top, pattern) for pattern in DROPPED_TOP_FILES):
        return False
    if has_build_script:
        return top not in DROPPED_DIRS
    return (
        top in ("src", "Cargo.toml")
        or top.upper().startswith(("README", "LICENSE"))
        or path in manifest_paths(manifest, compiled_only=True)
    )


def not_compiled(path: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def trim(crate: Path) -> None:
    manifest = tomllib.loads((crate / "Cargo.toml").read_text())
    not_compiled_patterns = NOT_COMPILED.get(manifest["package"]["name"], [])
    build = manifest.get("package", {}).get("build")
    has_build_script = isinstance(build, str) or (build is None and (crate / "build.rs").exists())
    checksum = json.loads((crate / ".cargo-checksum.json").read_text())
    for file in [p for p in crate.rglob("*") if p.is_file()]:
        path = file.relative_to(crate).as_posix()
        if path != ".cargo-checksum.json" and (
            not_compiled(path, not_compiled_patterns) or not kept(path, manifest, has_build_script)
        ):
            file.unlink()
            checksum["files"].pop(path, None)
    (crate / ".cargo-checksum.json").write_text(json.dumps(checksum))
    for directory in sorted((p for p in crate.rglob("*") if p.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()


def main() -> None:
    vendor = Path(sys.argv[1])
    needed = needed_packages(sys.argv[2], sys.argv[3:])
    stubbed = 0
    for crate in sorted(p for p in vendor.iterdir() if p.is_dir()):
        package = tomllib.loads((crate / "Cargo.toml").read_text())["package"]
        if (package["name"], package["version"]) in needed:
            trim(crate)
        else:
            stub(crate)
            stubbed += 1
    print(f"prune-vendor: {stubbed} crate(s) stubbed, {len(needed)} kept", file=sys.stderr)


if __name__ == "__main__":
    main()
