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
and examples. Each `.cargo-checksum.json` is rewritten to list only the
files kept, so cargo's checksum verification still holds for every file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

DROPPED_DIRS = ("tests", "benches", "examples")
# Inside crates that ship every platform's sources: what only targets other
# than Linux and macOS compile (libc's other operating systems; ring's
# Windows assembly and prebuilt Windows objects). Paths are globs.
OTHER_PLATFORMS = {
    "libc": [
        "src/fuchsia/**",
        "src/windows/**",
        "src/wasi/**",
        "src/solid/**",
        "src/teeos/**",
        "src/vxworks/**",
        "src/qurt/**",
        "src/unix/aix/**",
        "src/unix/cygwin/**",
        "src/unix/haiku/**",
        "src/unix/hurd/**",
        "src/unix/newlib/**",
        "src/unix/nto/**",
        "src/unix/nuttx/**",
        "src/unix/redox/**",
        "src/unix/solarish/**",
        "src/unix/bsd/freebsdlike/**",
        "src/unix/bsd/netbsdlike/**",
        "src/unix/linux_like/android/**",
        "src/unix/linux_like/emscripten/**",
        "src/unix/linux_like/l4re/**",
    ],
    "ring": ["pregenerated/*-win32n.*", "pregenerated/*-win64.S", "pregenerated/*-nasm.*"],
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
    if has_build_script:
        return top not in DROPPED_DIRS
    return (
        top in ("src", "Cargo.toml")
        or top.upper().startswith(("README", "LICENSE"))
        or path in manifest_paths(manifest, compiled_only=True)
    )


def other_platforms(crate: Path, name: str) -> set[str]:
    return {
        file.relative_to(crate).as_posix()
        for pattern in OTHER_PLATFORMS.get(name, [])
        for file in crate.glob(pattern)
        if file.is_file()
    }


def trim(crate: Path) -> None:
    manifest = tomllib.loads((crate / "Cargo.toml").read_text())
    unused = other_platforms(crate, manifest["package"]["name"])
    build = manifest.get("package", {}).get("build")
    has_build_script = isinstance(build, str) or (build is None and (crate / "build.rs").exists())
    checksum = json.loads((crate / ".cargo-checksum.json").read_text())
    for file in [p for p in crate.rglob("*") if p.is_file()]:
        path = file.relative_to(crate).as_posix()
        if path != ".cargo-checksum.json" and (path in unused or not kept(path, manifest, has_build_script)):
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
