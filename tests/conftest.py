"""Shared fixtures: every behaviour test runs against both backends.

``backend`` is parametrized with ids ``rust`` (``acp_fast._native``) and ``python``
(``acp_fast._fallback``). When the native module cannot be imported:

* in CI (environment variable ``CI`` set to anything but ``""``/``0``/``false``) or with
  ``ACP_FAST_REQUIRE_NATIVE=1`` the rust-parametrized tests FAIL with the import error;
* otherwise (a local checkout without ``maturin develop``) they are skipped with a reason.

This is the only skip in the suite.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # lets test modules `import vectors`
    sys.path.insert(0, str(TESTS_DIR))

# --------------------------------------------------------------------------------------------
# Hypothesis profiles (the backend fixtures are plain modules, so function-scoped fixtures are
# safe to share across examples)
# --------------------------------------------------------------------------------------------

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


IN_CI = _truthy(os.environ.get("CI"))
REQUIRE_NATIVE = IN_CI or os.environ.get("ACP_FAST_REQUIRE_NATIVE", "") == "1"

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "default"))

# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------


def _import(name: str):
    """Return (module, None) or (None, (exception, text))."""
    try:
        return importlib.import_module(name), None
    except Exception as exc:  # noqa: BLE001 - reported by the fixtures below
        return None, (exc, f"{type(exc).__name__}: {exc}")


# The package itself imports a backend at import time; if that is broken, every behaviour test
# must fail (never skip) with the reason.
PACKAGE, PACKAGE_ERROR = _import("acp_fast")
if PACKAGE_ERROR is None:
    FALLBACK, FALLBACK_ERROR = _import("acp_fast._fallback")
    NATIVE, _native_error = _import("acp_fast._native")
else:
    FALLBACK, FALLBACK_ERROR = None, PACKAGE_ERROR
    NATIVE, _native_error = None, PACKAGE_ERROR
# Only an ImportError means "not built"; anything else is a broken module and fails.
NATIVE_MISSING = NATIVE is None and PACKAGE_ERROR is None and isinstance(_native_error[0], ImportError)
NATIVE_IMPORT_ERROR = None if _native_error is None else _native_error[1]

BACKEND_IDS = ("rust", "python")


def native_missing_message() -> str:
    return (
        "the native backend acp_fast._native is not importable "
        f"({NATIVE_IMPORT_ERROR}); build it with `maturin develop` "
        "(required because CI or ACP_FAST_REQUIRE_NATIVE=1 is set)"
    )


def require_native() -> None:
    """Fail (CI) or skip (local) the current test when the native backend is missing."""
    if NATIVE is not None:
        return
    if not NATIVE_MISSING:
        pytest.fail(f"acp_fast._native failed to import: {NATIVE_IMPORT_ERROR}", pytrace=False)
    if REQUIRE_NATIVE:
        pytest.fail(native_missing_message(), pytrace=False)
    pytest.skip(f"native backend not built locally ({NATIVE_IMPORT_ERROR}); CI runs it")


def require_fallback() -> None:
    if FALLBACK is None:
        pytest.fail(f"acp_fast._fallback failed to import: {FALLBACK_ERROR[1]}", pytrace=False)


def get_backend(backend_id: str):
    if backend_id == "python":
        require_fallback()
        return FALLBACK
    require_native()
    return NATIVE


@pytest.fixture(params=BACKEND_IDS)
def backend(request):
    """The backend module under test: ``acp_fast._native`` (id rust) or ``acp_fast._fallback``."""
    return get_backend(request.param)


@pytest.fixture(params=BACKEND_IDS)
def backend_id(request):
    """The backend's name for tests that must run it in a subprocess (``ACP_FAST_BACKEND``)."""
    get_backend(request.param)
    return request.param


@pytest.fixture
def both_backends():
    """(native, fallback) for differential tests."""
    require_fallback()
    require_native()
    return NATIVE, FALLBACK


# -- the bridge's four setups (tests/test_bridge*.py) ------------------------------------------


@pytest.fixture
def v1_editor(backend):
    from acp_fast.bridge import Bridge

    return Bridge(editor=1, agent=2, backend=backend)


@pytest.fixture
def v2_editor(backend):
    from acp_fast.bridge import Bridge

    return Bridge(editor=2, agent=1, backend=backend)


@pytest.fixture
def strict_v1(backend):
    from acp_fast.bridge import Bridge

    return Bridge(editor=1, agent=2, strict=True, backend=backend)


@pytest.fixture
def strict_v2(backend):
    from acp_fast.bridge import Bridge

    return Bridge(editor=2, agent=1, strict=True, backend=backend)
