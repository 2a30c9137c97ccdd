"""The public surface (docs/API.md "Backends"): same names and signatures, BACKEND, the env switch."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import acp_fast
from conftest import FALLBACK, NATIVE, NATIVE_MISSING, get_backend

REQUIRED = ["BACKEND", "loads", "dumps", "decode", "encode", "FrameDecoder", "Framer", "Message"]
PYTHONPATH = str(Path(acp_fast.__file__).resolve().parent.parent)


def _public(module) -> set:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return {n for n in names if not isinstance(getattr(module, n, None), types.ModuleType)}


def _members(cls) -> set:
    return {n for n in dir(cls) if not n.startswith("_")}


def _signature(obj):
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError) as exc:
        pytest.fail(f"{obj!r} has no introspectable signature ({exc}); give it a text signature")


def test_required_names(backend):
    for name in REQUIRED:
        assert hasattr(backend, name), name
    assert {"loads", "dumps", "decode", "encode"} <= _public(backend)
    assert set(REQUIRED) <= set(acp_fast.__all__)
    for name in ["AcpError", "Batch", "DecodeError", "EncodeError"]:
        assert name in acp_fast.__all__ and hasattr(acp_fast, name)


def test_backend_name(backend, request):
    expected = request.node.callspec.id.split("-")[0]
    assert backend.BACKEND == expected  # noqa: SIM300 - BACKEND is the value under test, not a constant


def test_package_uses_a_backend():
    assert acp_fast.BACKEND in ("rust", "python")
    chosen = NATIVE if acp_fast.BACKEND == "rust" else FALLBACK
    for name in REQUIRED[1:]:
        assert getattr(acp_fast, name) is getattr(chosen, name), name


def test_same_public_names_and_signatures():
    native, fallback = get_backend("rust"), get_backend("python")
    assert _public(native) == _public(fallback)
    for name in ["loads", "dumps", "decode", "encode"]:
        assert _signature(getattr(native, name)) == _signature(getattr(fallback, name)), name
    assert _signature(native.FrameDecoder) == _signature(fallback.FrameDecoder)
    assert _signature(native.Framer) == _signature(fallback.Framer)
    for cls in ["FrameDecoder", "Framer", "Message"]:
        assert _members(getattr(native, cls)) == _members(getattr(fallback, cls)), cls
    for meth in ["feed", "finish"]:
        assert _signature(getattr(native.FrameDecoder, meth)) == _signature(getattr(fallback.FrameDecoder, meth))
        assert _signature(getattr(native.Framer, meth)) == _signature(getattr(fallback.Framer, meth))
    assert _signature(native.Message.to_dict) == _signature(fallback.Message.to_dict)


def test_frame_decoder_signature(backend):
    sig = inspect.signature(backend.FrameDecoder)
    param = sig.parameters["max_frame_bytes"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY
    assert param.default == 67108864


def test_message_members(backend):
    members = _members(backend.Message)
    assert {
        "kind",
        "id",
        "method",
        "session_id",
        "update_kind",
        "tool_call_id",
        "raw",
        "line",
        "params",
        "result",
        "error",
        "to_dict",
    } <= members
    assert {"feed", "finish", "line", "buffered", "max_frame_bytes"} <= _members(backend.FrameDecoder)


def _run(code: str, backend_env: str | None):
    env = dict(os.environ)
    env.pop("ACP_FAST_BACKEND", None)
    if backend_env is not None:
        env["ACP_FAST_BACKEND"] = backend_env
    env["PYTHONPATH"] = PYTHONPATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_env_switch_python():
    proc = _run(
        "import acp_fast, acp_fast._fallback as f; print(acp_fast.BACKEND, acp_fast.loads is f.loads)", "python"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["python", "True"]


def test_env_switch_rust(backend_id):
    code = "import acp_fast, acp_fast._native as n; print(acp_fast.BACKEND, acp_fast.loads is n.loads)"
    if backend_id == "python":
        # without the native module ACP_FAST_BACKEND=rust must be an ImportError, never a fallback
        if not NATIVE_MISSING:
            code = "import acp_fast; print(acp_fast.BACKEND)"
            proc = _run(code, "rust")
            assert proc.returncode == 0 and proc.stdout.split() == ["rust"], proc.stderr
            return
        proc = _run("import acp_fast", "rust")
        assert proc.returncode != 0
        assert "ImportError" in proc.stderr or "ModuleNotFoundError" in proc.stderr
        return
    proc = _run(code, "rust")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["rust", "True"]


def test_env_default_prefers_native():
    proc = _run("import acp_fast; print(acp_fast.BACKEND)", None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("python" if NATIVE_MISSING else "rust")


@pytest.mark.parametrize("value", ["PYTHON", " rust ", "Python"])
def test_env_switch_case_and_space_insensitive(value):
    proc = _run("import acp_fast; print(acp_fast.BACKEND)", value)
    if value.strip().lower() == "rust" and NATIVE_MISSING:
        assert proc.returncode != 0
    else:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == value.strip().lower()


def test_env_switch_invalid_value():
    proc = _run("import acp_fast", "cython")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "ACP_FAST_BACKEND" in proc.stderr


def _stub_names():
    """Top-level names and class members declared in python/acp_fast/_native.pyi."""
    import ast
    from pathlib import Path

    stub = Path(acp_fast.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
            }
    return {n for n in top if not n.startswith("_")}, members


def test_stub_declares_the_runtime_surface(backend):
    top, members = _stub_names()
    assert top == _public(backend) - {"__version__"}
    for cls in ("Message", "FrameDecoder", "Framer", "ToolCallStore", "Change"):
        assert members[cls] == _members(getattr(backend, cls)), cls
