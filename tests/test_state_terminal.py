"""Terminals (mirrors ``rust/state/terminal.rs`` and ``_fallback/state/terminal.py``): DESIGN.md §7.4,
base64, and the terminal errors of §7.7.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import base64
import json

import pytest

from acp_fast import builders as B
from state_helpers import (
    _good_after,
    expect_error,
    rec,
    terminal_frame,
)
from state_model import (
    assert_record,
    change_of,
    session_update,
    tool_call_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# 7.7 errors (terminals)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("update_kind", ["terminal_update", "terminal_output_chunk"])
@pytest.mark.parametrize("tid, found", [(3, "number 3"), (None, "null"), ([], "array"), ("missing", "none")])
def test_invalid_terminal_id(backend, update_kind, tid, found):
    s = backend.ToolCallStore()
    update = {"sessionUpdate": update_kind, "data": "AA==", "output": {"data": "AA=="}}
    if tid != "missing":
        update["terminalId"] = tid
    data = session_update("s1", update)
    position = value_at(data, b'"update":') if tid == "missing" else value_at(data, b'"terminalId":')
    expect_error(
        backend,
        s,
        data,
        "invalid_terminal_id",
        f'expected "params.update.terminalId" to be a string, found {found}',
        position,
    )
    _good_after(backend, s)


@pytest.mark.parametrize("output, found", [("AA==", 'string "AA=="'), ([], "array"), (0, "number 0"), (True, "true")])
def test_invalid_output(backend, output, found):
    s = backend.ToolCallStore()
    data = session_update(
        "s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "output": output, "exitStatus": 5}
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_output",
        f'expected "params.update.output" to be an object or null, found {found}',
        value_at(data, b'"output":'),
    )


@pytest.mark.parametrize(
    "exit_status, found", [(0, "number 0"), ("SIGTERM", 'string "SIGTERM"'), ([0], "array"), (False, "false")]
)
def test_invalid_exit_status(backend, exit_status, found):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": exit_status})
    expect_error(
        backend,
        s,
        data,
        "invalid_exit_status",
        f'expected "params.update.exitStatus" to be an object or null, found {found}',
        value_at(data, b'"exitStatus":'),
    )


def test_output_checked_before_exit_status(backend):
    s = backend.ToolCallStore()
    data = session_update(
        "s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": 1, "output": {"data": "A"}}
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.output.data" to be base64 text, found string "A"',
        value_at(data, b'"data":'),
    )


def test_output_without_data(backend):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "output": {"_meta": {}}})
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.output.data" to be base64 text, found none',
        value_at(data, b'"output":'),
    )


def test_terminal_chunk_without_data(backend):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1"})
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.data" to be base64 text, found none',
        value_at(data, b'"update":'),
    )
    assert s.terminal("s1", "t1") is None


# ------------------------------------------------------------------------------------------
# 7.4 terminals
# ------------------------------------------------------------------------------------------


def term(tid, output=b"", **fields):
    """A terminal record in DESIGN 7.4 key order."""
    out = {"terminalId": tid}
    for key in ("command", "cwd"):
        if key in fields:
            out[key] = fields.pop(key)
    out["output"] = output
    for key in ("outputMeta", "exitStatus", "_meta"):
        if key in fields:
            out[key] = fields.pop(key)
    out.update(fields)
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def terminal_chunk(sid, tid, data, **extra):
    return session_update(sid, {"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": data, **extra})


@pytest.mark.parametrize("version", [1, 2, None])
def test_terminal_update_creates(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.terminal_update("s1", "t1", command="ls -la", cwd="/repo"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "created", None)
    assert_record(s.terminal("s1", "t1"), term("t1", command="ls -la", cwd="/repo"))
    assert_record(s.terminals("s1"), {"t1": term("t1", command="ls -la", cwd="/repo")})
    assert len(s) == 0


def test_terminal_record_key_order(backend):
    s = backend.ToolCallStore()
    s.apply(
        terminal_frame(
            "s1",
            "t1",
            zeta=1,
            _meta={"m": 1},
            exitStatus={"exitCode": 0},
            output={"_meta": {"o": 1}, "data": b64(b"hi")},
            cwd="/",
            command="c",
            alpha=2,
        )
    )
    got = s.terminal("s1", "t1")
    assert list(got) == ["terminalId", "command", "cwd", "output", "outputMeta", "exitStatus", "_meta", "zeta", "alpha"]
    assert_record(
        got,
        term(
            "t1",
            b"hi",
            command="c",
            cwd="/",
            outputMeta={"o": 1},
            exitStatus={"exitCode": 0},
            _meta={"m": 1},
            zeta=1,
            alpha=2,
        ),
    )


def test_terminal_update_patch_rules(backend):
    s = backend.ToolCallStore(1)  # v2 rules whatever V
    s.apply(terminal_frame("s1", "t1", command="make", cwd="/src", _meta={"a": 1}, extra="x", other=1))
    c = s.apply(terminal_frame("s1", "t1", cwd=None, _meta={"b": 2}, extra=None))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "updated", None)
    # `_meta` objects patch by top-level key (the terminal docs of the schema crate)
    assert_record(s.terminal("s1", "t1"), term("t1", command="make", _meta={"a": 1, "b": 2}, other=1))
    s.apply(terminal_frame("s1", "t1", extra="back", _meta=None, command=None))
    assert_record(s.terminal("s1", "t1"), term("t1", other=1, extra="back"))
    c = s.apply(terminal_frame("s1", "t1"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "updated", None)
    assert_record(s.terminal("s1", "t1"), term("t1", other=1, extra="back"))


def test_terminal_first_sight_nulls_are_unset(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", command=None, output=None, exitStatus=None, _meta=None, x=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))


def test_terminal_output_snapshot_replaces_bytes(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_update("s1", "t1", output=b"first\n"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"first\n"))
    s.apply(B.terminal_output_chunk("s1", "t1", b"more"))
    s.apply(B.terminal_update("s1", "t1", output=b"\x1b[31mred\x1b[0m"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m"))
    c = s.apply(B.terminal_output_chunk("s1", "t1", b"!"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "appended", None)
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m!"))
    s.apply(B.terminal_update("s1", "t1", command="x"))  # output omitted: unchanged
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m!", command="x"))


def test_terminal_chunks_append_decoded_bytes(backend):
    s = backend.ToolCallStore()
    euro = "€".encode()  # 3 bytes, cut across chunks
    c = s.apply(B.terminal_output_chunk("s1", "t1", b"a" + euro[:1]))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "created", None)
    s.apply(B.terminal_output_chunk("s1", "t1", euro[1:2]))
    s.apply(B.terminal_output_chunk("s1", "t1", b""))
    s.apply(B.terminal_output_chunk("s1", "t1", euro[2:] + b"\xff\x00"))
    got = s.terminal("s1", "t1")
    assert_record(got, term("t1", b"a\xe2\x82\xac\xff\x00"))
    assert type(got["output"]) is bytes


def test_terminal_chunk_meta_not_stored(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_output_chunk("s1", "t1", b"x", meta={"chunk": 1}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"x"))


def test_terminal_output_null_empties(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"abc"), "_meta": {"enc": "utf-8"}}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"abc", outputMeta={"enc": "utf-8"}))
    s.apply(B.terminal_update("s1", "t1", output=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))
    s.apply(B.terminal_output_chunk("s1", "t1", b"z"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"z"))


def test_terminal_output_meta(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", output={"data": "", "_meta": {"a": 1}}))
    assert_record(s.terminal("s1", "t1"), term("t1", outputMeta={"a": 1}))
    s.apply(B.terminal_output_chunk("s1", "t1", b"x", meta={"b": 2}))  # chunks leave it
    assert_record(s.terminal("s1", "t1"), term("t1", b"x", outputMeta={"a": 1}))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"y")}))  # snapshot without _meta: unset
    assert_record(s.terminal("s1", "t1"), term("t1", b"y"))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"y"), "_meta": {"c": 3}}))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"w"), "_meta": None}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"w"))


def test_terminal_exit_status(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_update("s1", "t1", exit_status={"exitCode": 0, "signal": None}))
    assert_record(s.terminal("s1", "t1"), term("t1", exitStatus={"exitCode": 0, "signal": None}))
    s.apply(B.terminal_update("s1", "t1", exit_status={}))
    assert_record(s.terminal("s1", "t1"), term("t1", exitStatus={}))
    s.apply(B.terminal_update("s1", "t1", exit_status=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))


def test_terminals_and_tool_calls_are_separate_namespaces(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "x", {"content": [B.terminal_content("x")]}))
    s.apply(B.terminal_update("s1", "x", command="ls"))
    s.apply(B.terminal_update("s2", "x", command="pwd"))
    assert_record(s.get("s1", "x"), rec("x", content=[{"type": "terminal", "terminalId": "x"}]))
    assert_record(s.terminal("s1", "x"), term("x", command="ls"))
    assert_record(s.terminal("s2", "x"), term("x", command="pwd"))
    assert s.terminal("s3", "x") is None
    assert s.terminals("s3") == {}
    assert len(s) == 1


VALID_BASE64 = [
    ("", b""),
    ("AA==", b"\x00"),
    ("AB==", b"\x00"),  # unused trailing bits ignored
    ("AAA=", b"\x00\x00"),
    ("AAB=", b"\x00\x00"),
    ("AAAA", b"\x00\x00\x00"),
    ("QUJD", b"ABC"),
    ("+/+/", b"\xfb\xff\xbf"),
    ("//8=", b"\xff\xff"),
    ("aGVsbG8gd29ybGQ=", b"hello world"),
]


@pytest.mark.parametrize("text, data", VALID_BASE64)
def test_base64_valid(backend, text, data):
    s = backend.ToolCallStore()
    s.apply(terminal_chunk("s1", "t1", text))
    s.apply(terminal_frame("s1", "t2", output={"data": text}))
    assert s.terminal("s1", "t1")["output"] == data
    assert s.terminal("s1", "t2")["output"] == data


def test_base64_escaped_json_string(backend):
    s = backend.ToolCallStore()
    s.apply(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"\\u0051\\u0055JD\\/w=="}}}'
    )
    assert s.terminal("s1", "t1")["output"] == b"ABC\xff"


INVALID_BASE64 = [
    "A",
    "AA",
    "AAA",
    "AA=",
    "AAAAA",
    "A===",
    "====",
    "=AAA",
    "AA==AA==",
    "AB=C",
    "-_-_",
    "AA AA=",
    "AAA\n",
    "QUJD\r\n",
    "ÀÀÀÀ",
    "AA=\u0000",
    "QUJD=",
    "QUJD====",
]


@pytest.mark.parametrize("text", INVALID_BASE64)
def test_base64_invalid_chunk(backend, text):
    s = backend.ToolCallStore()
    s.apply(B.terminal_output_chunk("s1", "t1", b"keep"))
    data = terminal_chunk("s1", "t1", text)
    literal = json.dumps(text, ensure_ascii=False)
    found = f"string {literal}" if len(literal.encode()) <= 32 else "string"
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )
    assert s.terminal("s1", "t1")["output"] == b"keep"


@pytest.mark.parametrize("text", INVALID_BASE64)
def test_base64_invalid_output(backend, text):
    s = backend.ToolCallStore()
    data = terminal_frame("s1", "t1", output={"data": text})
    literal = json.dumps(text, ensure_ascii=False)
    found = f"string {literal}" if len(literal.encode()) <= 32 else "string"
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.output.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )
    assert s.terminal("s1", "t1") is None


@pytest.mark.parametrize(
    "value, found", [(None, "null"), (5, "number 5"), (["AA=="], "array"), ({"d": 1}, "object"), ("A" * 33, "string")]
)
def test_base64_not_text(backend, value, found):
    s = backend.ToolCallStore()
    data = terminal_chunk("s1", "t1", value)
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )


def test_base64_long_valid_and_escaped_found(backend):
    s = backend.ToolCallStore()
    text = b64(bytes(range(256)) * 4)
    s.apply(terminal_chunk("s1", "t1", text))
    assert s.terminal("s1", "t1")["output"] == bytes(range(256)) * 4
    data = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"\\u0041"}}}'
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.data" to be base64 text, found string "\\u0041"',
        value_at(data, b'"data":'),
    )
