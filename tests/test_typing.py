"""The public surface is typed: a user's script that uses every public name passes ``mypy --strict``.

Type checkers see the names of ``acp_fast`` through the compiled core's stub
(``python/acp_fast/_native.pyi``) whichever backend runs; ``make lint`` checks that stub against the
built module (stubtest). Here a realistic client script is checked with ``mypy --strict``, with
``assert_type`` pinning the types the stub promises, and then run on both backends so that the
promised types are the ones a user gets.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

import acp_fast

PACKAGE_ROOT = Path(acp_fast.__file__).resolve().parent.parent
STUB = PACKAGE_ROOT / "acp_fast" / "_native.pyi"

SCRIPT = textwrap.dedent(
    '''
    """A client that reads an agent's stream, keeps tool-call state and answers requests."""

    from __future__ import annotations

    import json
    from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

    import acp_fast
    from acp_fast import (
        BACKEND,
        AcpError,
        Batch,
        Change,
        DecodeError,
        EncodeError,
        FrameDecoder,
        Message,
        ToolCallStore,
        decode,
        dumps,
        encode,
        loads,
    )

    if TYPE_CHECKING:
        from typing_extensions import assert_type
    else:

        def assert_type(value: object, _type: object) -> object:
            return value


    STREAM = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\\n'
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\\n'
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
        b'"update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read","status":"pending"}}}\\n'
        b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]\\n'
        b"not json\\n"
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
        b'"update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}}}'
    )


    def route(message: Message) -> Optional[str]:
        """The fields a router reads, without building Python objects."""
        assert_type(message.kind, str)
        assert_type(message.id, Union[str, int, None])
        assert_type(message.method, Optional[str])
        assert_type(message.session_id, Optional[str])
        assert_type(message.update_kind, Optional[str])
        assert_type(message.tool_call_id, Optional[str])
        assert_type(message.raw, bytes)
        assert_type(message.line, Optional[int])
        assert_type(message.to_dict(), Dict[str, Any])
        assert bytes(message) == message.raw
        assert message == decode(message.raw) and hash(message) == hash(decode(message.raw))
        if message.kind == "response":
            result: Any = message.result
            return json.dumps(result)
        if message.kind == "error":
            return str(message.error)
        params: Any = message.params
        return message.method if params is None or isinstance(params, dict) else None


    def read_stream(data: bytes) -> List[str]:
        """Split a stream in two pieces and route every frame; errors are collected, not raised."""
        decoder = FrameDecoder(max_frame_bytes=1 << 20)
        out: List[str] = []
        frames = decoder.feed(data[:50]) + decoder.feed(memoryview(data[50:])) + decoder.finish()
        assert_type(decoder.line, int)
        assert_type(decoder.buffered, int)
        assert_type(decoder.max_frame_bytes, int)
        for frame in frames:
            if isinstance(frame, DecodeError):
                assert_type(frame.code, int)
                out.append(f"line {frame.line}: {frame.kind} ({frame.code})")
            elif isinstance(frame, Batch):
                raw: bytes = frame.raw
                out.append(f"batch of {len(frame)} ({len(raw)} bytes)")
            else:
                assert_type(frame, Message)
                out.append(route(frame) or "")
        return out


    def track(data: bytes) -> Dict[str, Dict[str, Any]]:
        """Keep the tool calls of every session; print what changed."""
        store = ToolCallStore(protocol_version=None, max_tool_calls=1000)
        for event in store.feed(data, source="agent") + store.finish(source="agent"):
            if isinstance(event, Change):
                sid: Optional[str] = event.session_id
                target: str = event.target
                ident: Union[str, int, None] = event.id
                action: str = event.action
                tcid: Optional[str] = event.tool_call_id
                assert tuple(event) == (sid, target, ident, action, tcid) and len(event) == 5
                assert event == Change(sid, target, ident, action, tcid)
            else:
                assert_type(event, DecodeError)
        record = store.get("s1", "c1")
        assert record is not None and record["status"] == "completed"
        assert_type(store.protocol_version, int)
        assert_type(store.negotiated_version, Optional[int])
        assert_type(store.max_tool_calls, Optional[int])
        assert_type(store.evicted, int)
        assert_type(store.line, int)
        assert len(store) == 1
        assert store.terminal("s1", "t1") is None and store.terminals("s1") == {} and store.plans("s1") == {}
        assert store.permission(7) is None and store.permissions("s1") == [] == store.pending_permissions("s1")
        assert_type(store.cancel_responses("s1"), List[bytes])
        assert_type(store.tool_calls("s1"), Dict[str, Dict[str, Any]])
        checkpoint: bytes = store.to_json()
        restored = ToolCallStore.from_json(checkpoint)
        assert restored.state() == store.state()
        store.apply(decode(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}'))
        store.apply({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s2"}})
        return store.snapshot()


    def answer(request_id: Union[str, int], text: str) -> bytes:
        """Build a response frame from Python objects; bad values raise EncodeError."""
        frame = encode({"jsonrpc": "2.0", "id": request_id, "result": {"text": text}})
        assert encode(decode(frame)) == frame
        try:
            dumps({"score": float("nan")})
        except EncodeError as exc:
            assert_type(exc.path, str)
        return frame


    def main() -> None:
        assert_type(BACKEND, str)
        assert BACKEND == acp_fast.BACKEND in ("rust", "python")
        assert isinstance(acp_fast.__version__, str)
        lines = read_stream(STREAM)
        assert lines[3] == "batch of 2 (63 bytes)" and lines[4].endswith("(-32700)"), lines
        snapshot = track(STREAM)
        assert list(snapshot) == ["s1"]
        batch = decode(b'[{"jsonrpc":"2.0","method":"a"}]')
        assert isinstance(batch, Batch) and encode(batch) == batch.raw + b"\\n"
        document: Any = loads(dumps({"n": 2**70, "text": "caf\\u00e9"}))
        assert document["n"] == 2**70
        assert answer(1, "ok").endswith(b"\\n")
        try:
            loads(b"[1,]")
        except AcpError as exc:
            assert isinstance(exc, DecodeError) and exc.position == 3
        print("ok", BACKEND)


    if __name__ == "__main__":
        main()
    '''
)


def _mypy_env() -> Dict[str, str]:
    """The environment that makes mypy resolve ``acp_fast`` to the package under test."""
    env = dict(os.environ)
    site_dirs = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if PACKAGE_ROOT not in site_dirs:  # a source tree (mypy refuses site-packages in MYPYPATH)
        env["MYPYPATH"] = str(PACKAGE_ROOT)
    return env


def test_public_surface_passes_mypy_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (the lint extra installs it; .ci/run does)")
    script = tmp_path / "client.py"
    script.write_text(SCRIPT, "utf-8")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary"]
    cmd += ["--cache-dir", str(tmp_path / "cache"), "--python-executable", sys.executable, str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_mypy_env(), cwd=tmp_path, check=False)
    assert proc.returncode == 0, f"mypy --strict on a user script:\n{proc.stdout}{proc.stderr}"


def test_the_typed_script_runs(tmp_path: Path, backend_id: str) -> None:
    script = tmp_path / "client.py"
    script.write_text(SCRIPT, "utf-8")
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == f"ok {backend_id}\n"


def _undocumented(body: List[ast.stmt], prefix: str) -> List[str]:
    """Public names (no leading underscore, or ``__new__``) without a docstring, in a stub body."""
    missing = []
    for index, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            name = node.name
            if (not name.startswith("_") or name == "__new__") and ast.get_docstring(node) is None:
                missing.append(prefix + name)
            if isinstance(node, ast.ClassDef):
                missing += _undocumented(node.body, f"{prefix}{name}.")
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            following = body[index + 1] if index + 1 < len(body) else None
            documented = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            if not node.target.id.startswith("_") and not documented:
                missing.append(prefix + node.target.id)
    return missing


def test_every_public_name_of_the_stub_has_a_docstring() -> None:
    # editors show the stub's docstrings for the compiled module (stubtest does not check them)
    tree = ast.parse(STUB.read_text("utf-8"))
    assert _undocumented(tree.body, "") == []
