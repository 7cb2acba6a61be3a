"""The package's version, the engine's (Cargo.toml), and the guard that
refuses a native module of another version: a stale build left on the path
speaks another protocol. Imported first by the package."""

from types import ModuleType

from . import _core

VERSION = "0.1.0"


def check(native: ModuleType) -> None:
    """Raises ImportError, saying what to do, unless ``native`` is this
    version's module."""
    check_version = getattr(native, "check_version", None)
    path = getattr(native, "__file__", None) or native.__name__
    if check_version is None:  # older than the guard itself
        found = getattr(native, "__version__", "?")
        raise ImportError(
            f"the cogworker package is version {VERSION} but its native module ({path}) is version {found}: "
            "reinstall the package, or rebuild it from this source tree"
        )
    check_version(VERSION, path)


check(_core)
