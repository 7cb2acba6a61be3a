"""One version: the package, its native module, the engine and the gem
agree, and a native module of another version is refused on import."""

from __future__ import annotations

import os
import re
import types

import pytest

import cogworker
from cogworker import _core, _version

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _declared(path: str, pattern: str) -> str:
    with open(os.path.join(ROOT, path)) as f:
        found = re.search(pattern, f.read(), re.M)
    assert found, f"no version in {path}"
    return found.group(1)


def test_every_place_declares_the_same_version() -> None:
    versions = {
        "Cargo.toml": _declared("Cargo.toml", r'^version = "([^"]+)"'),
        "python/pyproject.toml": _declared("python/pyproject.toml", r'^version = "([^"]+)"'),
        "ruby/lib/cogworker/version.rb": _declared("ruby/lib/cogworker/version.rb", r"VERSION = '([^']+)'"),
        "cogworker.__version__": cogworker.__version__,
        "cogworker._core.__version__": _core.__version__,
    }
    assert len(set(versions.values())) == 1, versions


def test_a_native_module_of_another_version_is_refused_saying_what_to_do() -> None:
    with pytest.raises(ImportError, match=rf"version {_version.VERSION} .*_core\.so\) is version 0\.0\.9"):
        stale = types.ModuleType("cogworker._core")
        stale.__file__ = "/site/cogworker/_core.so"
        stale.__version__ = "0.0.9"  # type: ignore[attr-defined]
        _version.check(stale)  # older than the guard: no check_version of its own
    with pytest.raises(ImportError, match="package is version 9.9.9 but its native module"):
        _core.check_version("9.9.9", _core.__file__)
    _version.check(_core)
