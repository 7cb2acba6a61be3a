"""A native module of another version is refused on import (that every
place carries one version is tests/packages/test_version.py's)."""

from __future__ import annotations

import types

import pytest

from cogworker import _core, _version


def test_a_native_module_of_another_version_is_refused_saying_what_to_do() -> None:
    with pytest.raises(ImportError, match=rf"version {_version.VERSION} .*_core\.so\) is version 0\.0\.9"):
        stale = types.ModuleType("cogworker._core")
        stale.__file__ = "/site/cogworker/_core.so"
        stale.__version__ = "0.0.9"  # type: ignore[attr-defined]
        _version.check(stale)  # older than the guard: no check_version of its own
    with pytest.raises(ImportError, match="package is version 9.9.9 but its native module"):
        _core.check_version("9.9.9", _core.__file__)
    _version.check(_core)
