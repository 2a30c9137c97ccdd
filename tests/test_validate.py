"""``acp-fast validate``: the real command on real files (both backends), and the Validator.

tests/data/bad_frames.ndjson holds one known defect per bad line; EXPECTED below says which
problem each line must give (line, the byte the column points at, kind, message). The command
must report exactly those and nothing else.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

import acp_fast
from acp_fast import builders as B
from acp_fast import recording, traffic
from acp_fast.cli import validate as V
from conftest import require_native

DATA = Path(__file__).resolve().parent / "data"
BAD = DATA / "bad_frames.ndjson"
PY = sys.executable


@pytest.fixture
def codec(backend, monkeypatch):
    """Run in-process code on the given backend: acp_fast's codec names point at it."""
    for name in (
        "FrameDecoder",
        "decode",
        "loads",
        "dumps",
        "encode",
        "ToolCallStore",
        "Message",
        "SchemaValidator",
        "BACKEND",
    ):
        monkeypatch.setattr(acp_fast, name, getattr(backend, name))
    return backend


def run(
    *args: str, backend_id: str = "rust", stdin: Optional[bytes] = None, cwd: Optional[Path] = None
) -> subprocess.CompletedProcess:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    return subprocess.run(
        [PY, "-m", "acp_fast.cli", "validate", *args], input=stdin, capture_output=True, env=env, timeout=60, cwd=cwd
    )


def problems_of(stdout: bytes, name: str) -> List[Tuple[int, int, str, str]]:
    out = []
    for line in stdout.decode().splitlines():
        if line.startswith(name + ":") and ": [" in line:
            where, rest = line[len(name) + 1 :].split(": [", 1)
            lineno, col = where.split(":")
            kind, message = rest.split("] ", 1)
            out.append((int(lineno), int(col), kind, message))
    return out


# (line, text the column points at, kind, message) for every defect of bad_frames.ndjson: the
# codec's JSON / JSON-RPC errors, then the schema validator's problems (issue 17), at the value
# each one's path names (a missing member: the object that lacks it).
V1_UPDATES = (
    '"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", '
    '"plan_update", "plan_removed", "available_commands_update", "current_mode_update", "config_option_update", '
    '"session_info_update", "usage_update", "notice", "compaction_update", "compaction_summary_chunk", '
    '"subagent_update", "session_message", "session_message_chunk"'
)
EXPECTED: List[Tuple[int, bytes, str, str]] = [
    (3, b'{"cwd"', "schema", 'session/new: expected "params.mcpServers" (required by NewSessionRequest), found none'),
    (5, b"ot json", "json", "expected 'null', found 'o'"),
    (
        6,
        b'{"sessionUpdate":"tool_call"',
        "schema",
        'session/update: expected "params.update.toolCallId" (required by ToolCall), found none',
    ),
    (7, b'"1.0"', "jsonrpc", 'expected "jsonrpc": "2.0", found string "1.0"'),
    (
        8,
        b'{"sessionUpdate":"tool_call_update"',
        "protocol",
        (
            'warning: session/update: expected "params.update.title" the first time tool call "c1" is reported '
            "(an agent SHOULD give a title), found none"
        ),
    ),
    (
        8,
        b'"done"',
        "schema",
        'session/update: expected "params.update.status" to be one of "pending", "in_progress", "completed", "failed", found string "done"',
    ),
    (
        9,
        b'{"toolCallId"',
        "schema",
        f'session/update: expected "params.update.sessionUpdate" to be one of {V1_UPDATES}, found none',
    ),
    (
        10,
        b'{"update"',
        "schema",
        'session/update: expected "params.sessionId" (required by SessionNotification), found none',
    ),
    (
        11,
        b'{"sessionId"',
        "schema",
        'session/request_permission: expected "params.options" (required by RequestPermissionRequest), found none',
    ),
    (
        12,
        b'"maybe"',
        "schema",
        (
            'session/request_permission: expected "params.options[0].kind" to be one of "allow_once", "allow_always", '
            '"reject_once", "reject_always", found string "maybe"'
        ),
    ),
    (
        13,
        b'{"outcome":"selected"}',
        "schema",
        (
            'result of session/request_permission (request on line 12): expected "result.outcome.optionId" '
            "(required by SelectedPermissionOutcome), found none"
        ),
    ),
    (
        14,
        b"99",
        "protocol",
        "expected a response to a request that was made, found one for id 99 (no such request pending)",
    ),
    (15, b'"hi"', "schema", 'session/prompt: expected "params.prompt" to be array, found string "hi"'),
    (
        16,
        b'{"type":"text"}',
        "schema",
        'session/update: expected "params.update.content.text" (required by TextContent), found none',
    ),
    (
        17,
        b'"tool_call_content_chunk"',
        "schema",
        (
            f'session/update: expected "params.update.sessionUpdate" to be one of {V1_UPDATES}, '
            'found string "tool_call_content_chunk"'
        ),
    ),
    (
        18,
        b'"urgent"',
        "schema",
        'session/update: expected "params.update.entries[0].priority" to be one of "high", "medium", "low", found string "urgent"',
    ),
    (
        19,
        b'{"sessionId"',
        "schema",
        'fs/read_text_file: expected "params.path" (required by ReadTextFileRequest), found none',
    ),
    (
        20,
        b'"no/such/method"',
        "schema",
        'expected "method" to be a protocol v1 method or an extension method starting with "_", found string "no/such/method"',
    ),
    (21, b'{"jsonrpc"', "schema", 'expected "id" (required by the request session/prompt), found none'),
    (22, b"[]", "jsonrpc", "expected at least one message in the batch, found an empty array"),
    (
        23,
        b'"finished"',
        "schema",
        (
            'result of session/prompt (request on line 15): expected "result.stopReason" to be one of "end_turn", '
            '"max_tokens", "max_turn_requests", "refusal", "cancelled", found string "finished"'
        ),
    ),
    (25, b'"1.0"', "schema", 'initialize: expected "params.protocolVersion" to be integer, found string "1.0"'),
    (26, b"1.5", "jsonrpc", 'expected "id" to be a string, an integer or null, found number 1.5'),
    (27, b"8,", "schema", 'expected no "id", found number 8'),
    (29, b"", "json", "expected a string key, found end of input"),
    (30, b"\xff", "json", "invalid UTF-8 byte 0xFF"),
    (
        31,
        b'{"type":"diff"',
        "schema",
        'session/update: expected "params.update.content[0].newText" (required by Diff), found none',
    ),
    (
        32,
        b'{"line":3}',
        "schema",
        'session/update: expected "params.update.locations[0].path" (required by ToolCallLocation), found none',
    ),
    (33, b"-1", "schema", 'session/update: expected "params.update.used" to be >= 0, found number -1'),
    (
        35,
        b"9",
        "protocol",
        'expected a request id not already pending, found id 9 (still pending: "session/prompt" from line 34)',
    ),
    (
        36,
        b'{"type":"terminal"}',
        "schema",
        'session/update: expected "params.update.content[0].terminalId" (required by Terminal), found none',
    ),
]


def _expected_columns() -> List[Tuple[int, int, str, str]]:
    lines = BAD.read_bytes().split(b"\n")
    out = []
    for lineno, at, kind, message in EXPECTED:
        raw = lines[lineno - 1]
        column = len(raw) + 1 if at == b"" else raw.index(at) + 1
        out.append((lineno, column, kind, message))
    return out


# --------------------------------------------------------------------------------------------
# the bad-frames file, through the real command
# --------------------------------------------------------------------------------------------


def test_bad_frames_every_defect_with_line_and_column(backend_id):
    done = run(str(BAD), "--max-problems", "none", backend_id=backend_id, cwd=DATA)
    assert done.returncode == 1, done.stderr
    assert done.stderr == b""
    found = problems_of(done.stdout, str(BAD))
    assert found == _expected_columns()
    assert done.stdout.decode().splitlines()[-1] == (
        f"{BAD}: ndjson, 36 lines, 29 frames, protocol v1 (negotiated): "
        "31 problems (json 3, jsonrpc 3, schema 22, protocol 3; 1 warning)"
    )


def test_bad_frames_json_output(backend_id):
    done = run(str(BAD), "--format", "json", backend_id=backend_id)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert (report["lines"], report["frames"], report["problemCount"], report["warningCount"]) == (36, 29, 31, 1)
    assert report["problemsByKind"] == {"json": 3, "jsonrpc": 3, "schema": 22, "protocol": 3}
    got = [
        (p["line"], p["column"], p["kind"], ("warning: " if p["severity"] == "warning" else "") + p["message"])
        for p in report["problems"]
    ]
    assert got == _expected_columns()
    assert [p["line"] for p in report["problems"] if p["severity"] != "error"] == [8]
    codes = {p["line"]: p["code"] for p in report["problems"]}
    assert (codes[5], codes[7], codes[3], codes[20], codes[14]) == (-32700, -32600, -32602, -32601, None)
    assert (codes[21], codes[27]) == (-32600, -32600)  # a request without "id", a notification with one
    # the initialize with id 7 was never answered: listed, not a problem
    assert {"id": 7, "method": "initialize", "line": 25, "from": None} in report["unanswered"]


def test_schema_option_changes_nothing():
    # The schema is always checked; --schema is accepted for compatibility.
    plain = run(str(BAD), "--max-problems", "none")
    done = run(str(BAD), "--schema", "--max-problems", "none")
    assert done.returncode == plain.returncode == 1
    assert done.stdout == plain.stdout
    assert problems_of(done.stdout, str(BAD)) == _expected_columns()


def test_the_schema_checks_every_member(tmp_path, backend_id):
    # The schema knows every member, not only those the spec digest names.
    frame = B.notification(
        "session/update",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "image", "data": "x", "mimeType": "image/png", "uri": 7},
            },
        },
    )
    path = tmp_path / "s.ndjson"
    path.write_bytes(frame)
    done = run(str(path), backend_id=backend_id)
    assert done.returncode == 1
    col = frame.index(b"7}") + 1
    assert problems_of(done.stdout, str(path)) == [
        (1, col, "schema", 'session/update: expected "params.update.content.uri" to be string or null, found number 7')
    ]


def test_max_problems_and_quiet(tmp_path):
    done = run(str(BAD), "--max-problems", "3")
    out = done.stdout.decode().splitlines()
    assert len(problems_of(done.stdout, str(BAD))) == 3
    assert out[-2] == "... 28 more problems not shown (--max-problems)"
    quiet = run(str(BAD), "-q")
    assert quiet.returncode == 1 and len(quiet.stdout.decode().splitlines()) == 1


# --------------------------------------------------------------------------------------------
# valid streams
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_generated_traffic_is_valid(tmp_path, backend_id, profile):
    path = tmp_path / f"{profile}.ndjson"
    path.write_bytes(traffic.generate(profile, 400, seed=11))
    done = run(str(path), "--schema", backend_id=backend_id)
    assert done.returncode == 0, done.stdout.decode()
    version = traffic.PROTOCOL_VERSIONS[profile]
    assert done.stdout.decode() == (
        f"{path}: ndjson, 400 lines, 400 frames, protocol v{version} (negotiated): no problems\n"
    )


def test_stdin_and_crlf_blank_lines(backend_id):
    data = (
        B.request(0, "initialize", {"protocolVersion": 1}).replace(b"\n", b"\r\n")
        + b"\n  \n"
        + B.response(0, {"protocolVersion": 1})
    )
    done = run("-", stdin=data, backend_id=backend_id)
    assert done.returncode == 0
    assert done.stdout.decode() == "<stdin>: ndjson, 4 lines, 2 frames, protocol v1 (negotiated): no problems\n"


def test_version_learned_from_initialize(codec):
    v2_update = B.tool_call_content_chunk("s", "c", B.text_content("x"))
    # before initialize: protocol v1, where tool_call_content_chunk does not exist
    v = V.Validator()
    v.run([v2_update])
    assert [p.kind for p in v.problems] == ["schema"]
    assert v.problems[0].message.endswith('found string "tool_call_content_chunk"')
    # an initialize answered with 2 switches to v2
    v = V.Validator()
    v.run(
        [
            B.request(0, "initialize", {"protocolVersion": 2, "info": {"name": "e", "version": "1"}}),
            B.response(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}),
            v2_update,
        ]
    )
    assert v.ok and v.version == 2 and v.negotiated_version == 2
    # v1-only updates are flagged in v2 (the v2 schema accepts any name as a future update), with a hint
    v.run([B.tool_call("s", "c2", "Read")])
    assert [p.kind for p in v.problems] == ["acp"]
    assert "v2 creates tool calls with tool_call_update" in v.problems[0].message


def test_initialize_checked_by_the_version_it_asks_for(codec):
    v = V.Validator()
    v.run([B.request(0, "initialize", {"protocolVersion": 2})])  # v2 requires "info"
    assert [p.message for p in v.problems] == [
        'initialize: expected "params.info" (required by InitializeRequest), found none'
    ]


def test_fixed_protocol_disagreeing_with_initialize(codec):
    v = V.Validator(protocol_version=1)
    frames = [
        B.request(0, "initialize", {"protocolVersion": 2, "info": {"name": "e", "version": "1"}}),
        B.response(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}),
    ]
    v.run(frames)
    assert [(p.kind, p.message) for p in v.problems] == [
        ("protocol", "expected protocol version 1 (--protocol), found 2 in the initialize response")
    ]
    assert v.version == 1


def test_v2_checks(codec):
    v = V.Validator(protocol_version=2)
    frames = [
        B.terminal_output_chunk("s", "t", b"ok"),
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"terminal_output_chunk","terminalId":"t","data":"abc"}}}\n',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","options":[]}}\n',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"_vendor_thing","x":1}}}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}\n',
    ]
    v.run(frames)
    assert [(p.line, p.message) for p in v.problems] == [
        (2, 'session/update: expected "params.update.data" to be base64 text, found string "abc"'),
        (3, 'session/update: expected "params.update.messageId" (required by ContentChunk), found none'),
        (4, 'session/request_permission: expected "params.title" (required by RequestPermissionRequest), found none'),
        (4, 'session/request_permission: expected "params.options" to hold at least 1 item, found 0'),
        (
            6,
            (
                'expected "method" to be a protocol v2 method or an extension method starting with "_", '
                'found string "fs/read_text_file" (a protocol v1 method)'
            ),
        ),
    ]
    assert [p.kind for p in v.problems] == ["acp", "schema", "schema", "schema", "schema"]


def test_batches(codec):
    v = V.Validator(protocol_version=1)  # v1: batches
    batch = b'[{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}, 7, {"jsonrpc":"2.0","id":3,"result":{}}]\n'
    v.run([batch])
    col_7 = batch.index(b"7") + 1
    col_id = batch.index(b"3,") + 1
    assert [(p.column, p.kind, p.message) for p in v.problems] == [
        (col_7, "jsonrpc", "expected a JSON-RPC message object, found number"),
        (
            col_id,
            "protocol",
            "expected a response to a request that was made, found one for id 3 (no such request pending)",
        ),
        (1, "acp", "expected a batch of calls or a batch of responses, found both"),
    ]
    assert (v.frames, v.messages, v.batches) == (1, 2, 1)
    v2 = V.Validator(protocol_version=2)
    v2.run([b'[{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}]\n'])
    assert [p.message for p in v2.problems] == [
        "expected one message per line, found a batch array (batches exist in protocol v1 only)"
    ]


def test_v2_custom_values_need_the_prefix(codec):
    # A protocol rule the schema cannot express (issue 17), now checked by default.
    frame = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c","title":"t","kind":"vendor_kind"}}}\n'
    )
    v = V.Validator(protocol_version=2)
    v.run([frame, frame.replace(b'"vendor_kind"', b'"_vendor_kind"')])
    assert [(p.line, p.column, p.kind, p.severity, p.code) for p in v.problems] == [
        (1, frame.index(b'"vendor_kind"') + 1, "acp", "error", -32602)
    ]
    assert v.problems[0].message.startswith('session/update: expected "params.update.kind" to be one of "read"')
    assert 'or a custom value beginning with "_", found string "vendor_kind"' in v.problems[0].message


def test_tool_call_title_is_a_warning(tmp_path, backend_id):
    frame = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"in_progress"}}}\n'
    )
    path = tmp_path / "w.ndjson"
    path.write_bytes(frame + frame)  # the second report of "c" needs no title
    done = run(str(path), "--protocol", "2", backend_id=backend_id)
    assert done.returncode == 0, done.stdout  # a warning does not fail the stream
    col = frame.index(b'{"sessionUpdate"') + 1
    assert problems_of(done.stdout, str(path)) == [
        (
            1,
            col,
            "protocol",
            (
                'warning: session/update: expected "params.update.title" the first time tool call "c" is reported '
                "(an agent SHOULD give a title), found none"
            ),
        )
    ]
    assert done.stdout.decode().splitlines()[-1].endswith(": 1 problem (protocol 1; 1 warning)")
    report = json.loads(run(str(path), "--protocol", "2", "--format", "json", backend_id=backend_id).stdout)
    assert (report["ok"], report["problemCount"], report["warningCount"]) == (True, 1, 1)
    assert report["problems"][0]["severity"] == "warning" and report["problems"][0]["column"] == col


def test_requests_pending_across_the_negotiation(codec):
    # The schema validator of the negotiated version still knows the requests made before it.
    v = V.Validator()
    v.run(
        [
            B.request(5, "_acme/ping", {}),
            B.request(0, "initialize", {"protocolVersion": 2, "info": {"name": "e", "version": "1"}}),
            B.request(6, "session/new", {"cwd": "/r", "mcpServers": []}),  # checked by v1: not yet negotiated
            B.response(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}),
            B.response(5, {}),
            B.response(6, {"sessionId": 7}),
        ]
    )
    assert v.version == 2
    assert [(p.line, p.message) for p in v.problems] == [
        (6, 'result of session/new (request on line 3): expected "result.sessionId" to be string, found number 7')
    ]


def test_ids_are_json_values_and_extensions_pass(codec):
    v = V.Validator()
    v.run(
        [
            B.request("1", "_acme/ping", {}),
            B.response(1, {}),
            B.response("1", {"anything": True}),
            B.notification("_acme/event", [1, 2]),
            B.notification("$/cancel_request", {"requestId": 4}),
        ]
    )
    assert [p.message for p in v.problems] == [
        "expected a response to a request that was made, found one for id 1 (no such request pending)"
    ]


def test_unstable_methods(codec):
    frame = B.request(1, "session/fork", {"sessionId": "s", "cwd": "/r"})
    v = V.Validator()
    v.run([frame])
    assert v.problems[0].message == (
        'expected "method" to be a protocol v1 method or an extension method starting with "_", '
        'found string "session/fork" (unstable; pass --unstable to accept it)'
    )
    v = V.Validator(unstable=True)
    v.run([frame])
    assert v.ok


# --------------------------------------------------------------------------------------------
# recordings: embedded frames checked, the recording's line numbers and columns
# --------------------------------------------------------------------------------------------


def _recording(records: List[Tuple[str, bytes, Dict]], exit_status: Optional[int] = 0) -> bytes:
    """A recording written by the proxy's own writer."""
    import io

    out = io.BytesIO()
    writer = recording.RecordWriter(out, ["acp-fast", "demo-agent"], "0.1.0")
    for i, (side, line, flags) in enumerate(records):
        if flags.get("too_large"):
            writer.too_large(side, flags["too_large"], 1000.0 + i)
            continue
        try:
            acp_fast.loads(line)
            is_json = True
        except acp_fast.DecodeError:
            is_json = False
        writer.line(
            side,
            line,
            is_json,
            1000.0 + i,
            crlf=flags.get("crlf", False),
            eol=flags.get("eol", True),
            action=flags.get("action"),
        )
    if exit_status is not None:
        writer.exit(exit_status)
    return out.getvalue()


def test_recording_problems_at_the_recording_lines_and_columns(tmp_path, backend_id):
    bad_update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c1"}}}'
    rec = _recording(
        [
            ("editor", B.request(0, "initialize", {"protocolVersion": 1}).rstrip(b"\n"), {}),
            ("agent", B.response(0, {"protocolVersion": 1}).rstrip(b"\n"), {"crlf": True}),
            ("agent", bad_update, {}),
            ("agent", b"Traceback (most recent call last): caf\xc3\xa9", {"action": "diverted"}),
            ("agent", b"\x00\xff binary", {"action": "diverted"}),
            ("editor", B.tool_call("s1", "c2", "Oops").rstrip(b"\n"), {}),
            ("agent", b"", {"too_large": 123456789}),
            ("agent", B.message_chunk("s1", "last").rstrip(b"\n"), {"eol": False}),
        ]
    )
    path = tmp_path / "rec.ndjson"
    path.write_bytes(rec)
    done = run(str(path), "--max-problems", "none", backend_id=backend_id)
    assert done.returncode == 1
    lines = rec.split(b"\n")
    found = problems_of(done.stdout, str(path))
    # record 4 (line 4) holds the bad tool_call: the column points into the recording line
    assert found[0][:3] == (4, lines[3].index(b'{"sessionUpdate"') + 1, "schema")
    # required by the v1 schema: the error only, not also the tool-call-title warning
    assert found[0][3] == 'session/update: expected "params.update.title" (required by ToolCall), found none'
    assert found[1] == (5, lines[4].index(b"Traceback") + 1, "json", "expected a JSON value, found 'T'")
    assert found[2] == (
        6,
        lines[5].index(b'"base64":"') + 10,
        "json",
        "invalid UTF-8 byte 0xFF (byte 1 of the recorded line)",
    )
    assert found[3] == (
        7,
        lines[6].index(b'"session/update"') + 1,
        "protocol",
        'expected "session/update" to be sent by the agent, found it from the client (editor)',
    )
    assert found[4] == (
        8,
        1,
        "json",
        "expected a frame within the proxy's limit, found a line of 123456789 bytes (not recorded)",
    )
    assert len(found) == 5
    text = done.stdout.decode()
    assert (
        "recording: 2 lines from the editor, 6 from the agent, 2 not forwarded (2 diverted), 1 with CRLF, agent exit status 0"
        in text
    )
    assert f"{path}: recording, 10 lines, 5 frames, protocol v1 (negotiated): 5 problems" in text


_REWRITE_PROMPT = """
import sys
from acp_fast.proxy import Proxy
def rewrite(message, sender, ctx):
    if message.method == "session/prompt":
        ctx.reason("prompt rewritten")
        params = {"sessionId": message.params["sessionId"], "prompt": [{"type": "text", "text": "be brief"}]}
        return {"jsonrpc": "2.0", "id": message.id, "method": "session/prompt", "params": params}
    return message
sys.exit(Proxy(sys.argv[2:], middleware=[rewrite], record=sys.argv[1]).run())
"""


def test_a_request_a_middleware_replaced_is_pending_once(tmp_path, backend_id):
    """The real proxy with a middleware that replaces the editor's session/prompt by another of
    the same id: the agent got the replacement only, so the recording has no request id reused
    while pending, and the prompt is answered once."""
    runner = tmp_path / "runner.py"
    runner.write_text(_REWRITE_PROMPT)
    rec = tmp_path / "rec.ndjson"
    client = (
        B.request(0, "initialize", {"protocolVersion": 1})
        + B.request(1, "session/new", {"cwd": "/repo", "mcpServers": []})
        + B.request(2, "session/prompt", {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "go"}]})
    )
    agent = [PY, "-m", "acp_fast.cli", "demo-agent", "--no-permission"]
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    done = subprocess.run([PY, str(runner), str(rec), *agent], input=client, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    prompts = [(r.side, r.action) for r in records if b'"session/prompt"' in r.data]
    assert prompts == [("editor", "replaced"), ("editor", "injected")]
    checked = run(str(rec), "--format", "json", backend_id=backend_id)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0, report["problems"]
    assert report["problemCount"] == 0 and report["unanswered"] == []
    assert report["recording"]["notForwarded"] == {"replaced": 1}


_PERMISSION = B.request(
    5,
    "session/request_permission",
    {
        "sessionId": "s",
        "toolCall": {"toolCallId": "c"},
        "options": [{"optionId": "y", "name": "Y", "kind": "allow_once"}],
    },
).rstrip(b"\n")
_ALLOW = B.response(5, {"outcome": {"outcome": "selected", "optionId": "y"}}).rstrip(b"\n")
_CANCELLED = B.response(5, {"outcome": {"outcome": "cancelled"}}).rstrip(b"\n")
_INIT = [
    ("editor", B.request(0, "initialize", {"protocolVersion": 1}).rstrip(b"\n"), {}),
    ("agent", B.response(0, {"protocolVersion": 1}).rstrip(b"\n"), {}),
]
_NEW = B.request(3, "session/new", {"cwd": "/r", "mcpServers": []}).rstrip(b"\n")
_NEW_BAD = B.request(3, "session/new", {"cwd": "/r"}).rstrip(b"\n")


@pytest.mark.parametrize(
    "records, unanswered",
    [
        # a middleware replaced the editor's request by another of the same id: the agent got one
        ([("editor", _NEW_BAD, {"action": "replaced"}), ("editor", _NEW, {"action": "injected"})], [5]),
        # ... and the agent answered it
        (
            [
                ("editor", _NEW, {"action": "replaced"}),
                ("editor", _NEW, {"action": "injected"}),
                ("agent", B.response(3, {"sessionId": "s"}).rstrip(b"\n"), {}),
            ],
            [],
        ),
        # a middleware replaced the editor's answer to a permission request
        (
            [
                ("agent", _PERMISSION, {}),
                ("editor", _ALLOW, {"action": "replaced"}),
                ("editor", _CANCELLED, {"action": "injected"}),
            ],
            [],
        ),
        # the proxy answered a permission request (--answer-cancelled-permissions); the editor's
        # late answer was dropped
        (
            [
                ("agent", _PERMISSION, {}),
                ("editor", _CANCELLED, {"action": "injected"}),
                ("editor", _ALLOW, {"action": "dropped"}),
            ],
            [],
        ),
        # a middleware dropped the agent's request and answered it (AutoApprove): still pending
        # until the answer
        ([("agent", _PERMISSION, {"action": "dropped"}), ("editor", _ALLOW, {"action": "injected"})], []),
        # the proxy answered the editor's request itself (--strict-schema): the id is free again
        ([("editor", _NEW_BAD, {"action": "answered"}), ("editor", _NEW, {})], [5]),
    ],
    ids=[
        "replaced-request",
        "replaced-request-answered",
        "replaced-response",
        "late-answer",
        "auto-approved",
        "answered",
    ],
)
def test_the_conversation_is_what_the_other_side_received(codec, records, unanswered):
    v = V.Validator()
    v.run([_recording(_INIT + records)])
    # no protocol problem; a replaced or answered request keeps the problem of its own params
    assert [(p.line, p.kind) for p in v.problems] == ([(4, "schema")] if records[0][1] == _NEW_BAD else [])
    assert [u["line"] for u in v.unanswered()] == unanswered


def test_a_request_id_reused_while_pending_is_still_reported(codec):
    for first, second in (({}, {}), ({"action": "injected"}, {}), ({}, {"action": "injected"})):
        v = V.Validator()
        v.run([_recording(_INIT + [("editor", _NEW, first), ("editor", _NEW, second)])])
        assert [(p.line, p.kind, p.message) for p in v.problems] == [
            (
                5,
                "protocol",
                'expected a request id not already pending, found id 3 (still pending: "session/new" from line 4)',
            )
        ], (first, second)


def test_a_response_that_did_not_reach_the_other_side_is_still_checked(codec):
    bogus = B.response(5, {"outcome": {"outcome": "bogus"}}).rstrip(b"\n")
    v = V.Validator()
    v.run(
        [
            _recording(
                _INIT
                + [("agent", _PERMISSION, {}), ("editor", bogus, {"action": "dropped"}), ("editor", _CANCELLED, {})]
            )
        ]
    )
    assert [(p.line, p.kind) for p in v.problems] == [(5, "schema")]
    assert v.problems[0].message.startswith(
        'result of session/request_permission (request on line 4): expected "result.outcome.outcome" to be one of'
    )
    assert v.unanswered() == []


def test_text_payload_column_points_at_the_character(codec):
    rec = _recording([("agent", 'é "q" {x'.encode(), {})])
    v = V.Validator()
    v.run([rec])
    record_line = rec.split(b"\n")[1]
    (problem,) = v.problems
    assert (problem.line, problem.kind, problem.message) == (2, "json", "expected a JSON value, found U+00E9")
    assert record_line[problem.column - 1 :].startswith("é".encode())


def test_text_payload_column_after_escapes(codec):
    line = b'{"a":1} trailing'
    rec = _recording([("agent", b'x\t"' + line, {})])  # not JSON: error at the "x"
    v = V.Validator()
    v.run([rec])
    assert v.problems[0].column == rec.split(b"\n")[1].index(b'"text":"') + 9
    rec2 = _recording([("agent", b'\t"q\\"" x', {})])  # a JSON string then "x": every byte before it escaped
    v = V.Validator()
    v.run([rec2])
    record_line = rec2.split(b"\n")[1]
    assert v.problems[0].message == "expected end of input, found 'x'"
    assert record_line[v.problems[0].column - 1 : v.problems[0].column] == b"x"


def test_malformed_recordings(codec):
    header = b'{"acp-fast-recording":1,"t":1.0,"argv":["a"],"version":"1"}\n'
    good = b'{"t":1.1,"from":"agent","frame":{"jsonrpc":"2.0","method":"_x"}}\n'
    data = (
        header
        + b'{"t":1.2,"from":"agent"}\n'
        + b'{"t":1.3,"from":"proxy","frame":{}}\n'
        + b'{"t":1.4,"from":"agent","base64":"%%%"}\n'
        + b'{"t":1.5,"from":"agent","text":"{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"_x\\"}"}\n'
        + b"\n"
        + b'{"t":1.6,"from":"agent","frame":{},"crlf":false}\n'
        + b"[1,2]\n"
        + good
        + b'{"t":2.0,"event":"exit","status":0}\n'
        + good
    )
    v = V.Validator()
    v.run([data])
    assert [(p.line, p.kind, p.message) for p in v.problems] == [
        (2, "recording", 'expected one payload ("frame", "text" or "base64"), found none'),
        (3, "recording", 'expected "from" to be "editor" or "agent", found "proxy"'),
        (4, "recording", 'expected "base64" to be base64 text (RFC 4648)'),
        (5, "recording", 'expected "frame" for a line that is valid JSON, found "text"'),
        (6, "recording", "expected a record, found a blank line"),
        (7, "recording", 'expected "crlf" to be true when present'),
        (8, "recording", "expected a record object, found array"),
        (11, "recording", "expected no record after the exit footer (line 10)"),
    ]
    v = V.Validator()
    v.run([b'{"acp-fast-recording":2,"t":1,"argv":[],"version":"1"}\n' + good])
    assert [(p.line, p.message) for p in v.problems] == [(1, 'expected "acp-fast-recording": 1, found 2')]


def test_input_option_forces_the_format(tmp_path):
    path = tmp_path / "r.ndjson"
    path.write_bytes(_recording([("agent", B.message_chunk("s", "x").rstrip(b"\n"), {})]))
    assert run(str(path)).returncode == 0
    as_stream = run(str(path), "--input", "ndjson")
    assert as_stream.returncode == 1  # records are not JSON-RPC messages
    assert b'[jsonrpc] expected "jsonrpc": "2.0", found no "jsonrpc" member' in as_stream.stdout


# --------------------------------------------------------------------------------------------
# robustness: never crash, bounded memory, clear errors
# --------------------------------------------------------------------------------------------


def test_garbage_never_crashes(tmp_path, backend_id):
    rng = random.Random(5)
    blobs = [
        bytes(rng.randrange(256) for _ in range(20000)),
        b"[" * 5000 + b"\n" + b'{"a":' * 3000 + b"\n",
        b'{"jsonrpc":"2.0","method":"x","params":"\\ud800"}\n\x00\x00\n\xef\xbb\xbf{}\n',
        b'{"acp-fast-recording":1}\n' + bytes(rng.randrange(256) for _ in range(5000)),
        b'{"acp-fast-recording":1,"t":1,"argv":[],"version":"x"}\n{"t":1,"from":"agent","frame":' + b"[" * 2000 + b"\n",
        b"\n\n\r\n",
    ]
    for i, blob in enumerate(blobs):
        path = tmp_path / f"g{i}.bin"
        path.write_bytes(blob)
        for fmt in ("text", "json"):
            done = run(str(path), "--schema", "--format", fmt, backend_id=backend_id)
            assert done.returncode in (0, 1), (i, done.stderr)
            assert b"Traceback" not in done.stderr, done.stderr
    last = run(str(tmp_path / "g5.bin"))
    assert last.returncode == 0


def test_huge_line_over_the_limit(tmp_path, backend_id):
    big = B.message_chunk("s", "x" * 300_000)
    path = tmp_path / "big.ndjson"
    path.write_bytes(B.message_chunk("s", "a") + big + B.message_chunk("s", "b"))
    done = run(str(path), "--max-frame-bytes", "100000", backend_id=backend_id)
    assert done.returncode == 1
    assert problems_of(done.stdout, str(path)) == [
        (
            2,
            100001,
            "json",
            "expected a frame of at most 100000 bytes, found a longer line; skipped to the next newline",
        )
    ]
    assert run(str(path), backend_id=backend_id).returncode == 0


def test_usage_errors(tmp_path):
    assert run().returncode == 2
    assert run(str(BAD), "--protocol", "3").returncode == 2
    missing = run(str(tmp_path / "nope.ndjson"))
    assert missing.returncode == 2
    assert b"acp-fast validate: error: cannot read" in missing.stderr and b"No such file" in missing.stderr
    assert run(str(BAD), "--max-frame-bytes", "0").returncode == 2
    helped = run("--help")
    assert helped.returncode == 0 and b"FILE:LINE:COLUMN" in helped.stdout


def _without_jsonschema(backend: str, *options: str) -> subprocess.CompletedProcess[bytes]:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('jsonschema', 'jsonschema_rs'):\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from acp_fast.cli import main\n"
        f"sys.exit(main(['validate', *{list(options)!r}, {str(BAD)!r}]))\n"
    )
    env = {**os.environ, "ACP_FAST_BACKEND": backend}
    return subprocess.run([PY, "-c", code], capture_output=True, timeout=60, env=env)


@pytest.mark.parametrize("options", [(), ("--schema",)])
def test_without_jsonschema_the_python_backend_is_a_clear_usage_error(tmp_path, options):
    # The pure-Python backend validates with jsonschema-rs or jsonschema (issue 17), always.
    done = _without_jsonschema("python", *options)
    assert done.returncode == 2
    assert b"pip install jsonschema" in done.stderr and b"Traceback" not in done.stderr
    assert done.stdout == b""


def test_the_rust_core_needs_no_jsonschema():
    require_native()
    done = _without_jsonschema("rust")
    assert done.returncode == 1, done.stderr
    assert b"31 problems" in done.stdout


def test_progress_only_when_asked(tmp_path):
    path = tmp_path / "t.ndjson"
    path.write_bytes(traffic.generate("large", 300, seed=2))
    quiet = run(str(path))
    assert quiet.returncode == 0 and quiet.stderr == b""  # stderr is not a terminal here
    shown = run(str(path), "--progress")
    assert shown.returncode == 0
    assert b"validate " in shown.stderr and b"MiB" in shown.stderr and b"%" in shown.stderr
    assert shown.stdout == quiet.stdout


def test_main_in_process(capsys, codec):
    assert V.main([str(BAD), "-q"]) == 1
    out = capsys.readouterr().out
    assert out.endswith("31 problems (json 3, jsonrpc 3, schema 22, protocol 3; 1 warning)\n")
    from acp_fast.cli import main

    assert main(["validate", str(DATA / "bad_frames.ndjson"), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["problemCount"] == 31


# --------------------------------------------------------------------------------------------
# docs/CLI.md: every console example runs as written
# --------------------------------------------------------------------------------------------


def _console_steps(text: str) -> List[Tuple[str, str]]:
    steps: List[Tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines(keepends=True):
            if line.startswith("$ "):
                steps.append((line[2:].rstrip("\n"), ""))
            else:
                command, output = steps[-1]
                steps[-1] = (command, output + line)
    return steps


def test_cli_md_examples(tmp_path):
    """The console examples of docs/CLI.md, in order, in an empty directory with tests/data."""
    steps = _console_steps((DATA.parent.parent / "docs" / "CLI.md").read_text())
    assert len(steps) >= 12
    shutil.copytree(DATA, tmp_path / "tests" / "data")
    bindir = os.path.dirname(sys.executable)
    assert os.path.exists(os.path.join(bindir, "acp-fast")), "the acp-fast script is not installed next to python"
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ACP_FAST_BACKEND", None)
    for command, expected in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert done.stderr == b"", (command, done.stderr.decode())
        assert done.stdout.decode() == expected, command


def test_cli_md_documents_every_command_and_the_export_options():
    from acp_fast import cli

    text = (DATA.parent.parent / "docs" / "CLI.md").read_text()
    for name in cli.COMMANDS:
        assert f"| `{name}` |" in text, name
    section = text[text.index("## `acp-fast export`") : text.index("## Recording format")]
    helped = subprocess.run(
        [PY, "-m", "acp_fast.cli", "export", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", helped)) - {"--help"}
    assert options >= {"--to", "--table", "--compression", "--force", "--progress", "--no-progress"}
    for option in options:
        assert option in section, option


# --------------------------------------------------------------------------------------------
# property: no input makes validate or inspect raise
# --------------------------------------------------------------------------------------------

_SEED_RECORDING = (
    b'{"acp-fast-recording":1,"t":1.5,"argv":["a"],"version":"1"}\n'
    b'{"t":1.6,"from":"editor","frame":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}},"crlf":true}\n'
    b'{"t":1.7,"from":"agent","frame":[{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}]}\n'
    b'{"t":1.8,"from":"agent","text":"caf\\u00e9 \\"x\\" \\ud83d\\ude00"}\n'
    b'{"t":1.9,"from":"agent","base64":"/w==","action":"diverted"}\n'
    b'{"t":2.0,"event":"exit","status":0}\n'
)


@st.composite
def _mutated(draw, seed: bytes):
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "drop", "insert"]))
        if op == "flip":
            data[i] = draw(st.integers(0, 255))
        elif op == "drop":
            del data[i : i + draw(st.integers(1, 8))]
        else:
            data[i:i] = draw(st.sampled_from([b"\n", b'"', b"{", b"}", b"[", b"\\", b",", b"\xff", b"\xc3", b"null"]))
    return bytes(data)


@given(st.one_of(st.binary(max_size=400), _mutated(_SEED_RECORDING), _mutated(BAD.read_bytes()[:1500])))
def test_no_input_makes_validate_or_inspect_raise(codec, data):
    from acp_fast.cli import inspect as inspector

    for schema in (False, True):
        v = V.Validator(schema=schema)
        v.run([data])
        assert v.problem_count >= 0 and all(p.line >= 1 and p.column >= 1 for p in v.problems)
    result = inspector.replay_file(data)
    inspector.render("x", result)
    inspector.to_json("x", result)


def test_locate_follows_a_path_with_the_backends_scanner():
    from acp_fast.cli.validate import locate

    raw = b' {"a": [10, {"b": 1, "b": [true]}], "c\\u0022": null}'
    assert locate(raw, ()) == 1
    assert locate(raw, ("a",)) == raw.index(b"[10")
    assert locate(raw, ("a", 1, "b")) == raw.index(b"[true")  # a duplicated key: the last one
    assert locate(raw, ("a", 1, "b", 0)) == raw.index(b"true")
    assert locate(raw, ('c"',)) == raw.index(b"null")
    assert locate(raw, ("a", 2)) == raw.index(b"[10")  # no such entry: the array
    assert locate(raw, ("a", -1)) == raw.index(b"[10")
    assert locate(raw, ("a", 1, "z")) == raw.index(b'{"b"')  # no such member: the object
    assert locate(raw, ("a", 0, "x")) == raw.index(b"10")  # not an object: the value reached


def test_requests_pipelined_behind_initialize_use_the_version_asked(tmp_path):
    """A client may send session/new before the initialize answer arrives: its requests are
    checked against the version it asked for (docs/CLI.md's own client2.ndjson), the agent's
    frames against the negotiated one; an answer that settles on v1 applies from then on."""
    text = (DATA.parent.parent / "docs" / "CLI.md").read_text()
    line = next(x for x in text.splitlines() if "> client2.ndjson" in x)
    frames = re.findall(r"'(\{.*?\})'", line)
    assert len(frames) == 3 and '"protocolVersion":2' in frames[0]
    client = tmp_path / "client2.ndjson"
    client.write_text("\n".join(frames) + "\n")
    done = run(str(client))
    assert done.returncode == 0, done.stdout
    # the same session/new before the answer, when v1 was asked for: v1 requires mcpServers
    v1 = tmp_path / "client1.ndjson"
    v1.write_text("\n".join([frames[0].replace('"protocolVersion":2', '"protocolVersion":1'), frames[1]]) + "\n")
    done = run(str(v1))
    assert done.returncode == 1 and b'"params.mcpServers" (required by NewSessionRequest)' in done.stdout
    # a recording: the editor's pipelined request is checked as v2, the agent's answer of v1
    # makes the next editor request v1 again
    v = V.Validator()
    for frame, sender in [
        (frames[0], "editor"),
        (frames[1], "editor"),
        ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}', "agent"),
        ('{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/repo"}}', "editor"),
    ]:
        v._message(acp_fast.decode(frame.encode()), 1, None, sender)
    messages = [p.message for p in v.problems]
    assert len(messages) == 1 and "mcpServers" in messages[0], messages


def test_draft_option(tmp_path, backend_id):
    """``--draft``: v2 checked against the newest draft (default) or alpha.5, the draft of the
    Python SDK 1.0.0rc3, which has no terminal/cancel."""
    path = tmp_path / "cancel.ndjson"
    path.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"terminal/cancel","params":{"sessionId":"s","terminalId":"t"}}\n'
    )
    assert run(str(path), "--protocol", "2", backend_id=backend_id).returncode == 0
    done = run(str(path), "--protocol", "2", "--draft", "alpha.5", backend_id=backend_id)
    assert done.returncode == 1 and b'expected "method" to be a protocol v2 method' in done.stdout
    done = run(str(path), "--draft", "alpha.6", backend_id=backend_id)
    assert done.returncode == 2 and b"invalid choice: 'alpha.6'" in done.stderr
    from acp_fast import _fallback

    for backend in (acp_fast, _fallback):  # the package's backend (native when built) and the fallback
        with pytest.raises(ValueError, match=r"^expected draft to be 'latest' or 'alpha.5', found 'alpha.6'$"):
            backend.SchemaValidator(draft="alpha.6")
        with pytest.raises(ValueError, match=r"^expected draft to be 'latest' or 'alpha.5', found 5$"):
            backend.FrameDecoder(draft=5)
        assert backend.SchemaValidator(protocol_version=2, draft="alpha.5").draft == "alpha.5"
        assert backend.SchemaValidator().draft == "latest"


# -- issue 32: a correct error reply with "id": null; one direction of a conversation ------------


def test_an_error_reply_with_a_null_id_answers_no_request_and_is_no_problem(codec):
    """JSON-RPC 2.0 answers a frame whose id could not be read (a parse error, an invalid request)
    with ``"id": null``: nothing to pair it with, nothing wrong. A result with a null id still is."""
    v = V.Validator()
    v.run(
        [
            B.request(0, "initialize", {"protocolVersion": 1}),
            B.error_response(None, -32700, "expected a JSON value, found 'h'"),
            B.error_response(None, -32600, "expected a JSON-RPC message object"),
            b'{"jsonrpc":"2.0","id":null,"result":{}}\n',
        ]
    )
    assert [(p.line, p.message) for p in v.problems] == [
        (4, "expected a response to a request that was made, found one for id null (no such request pending)")
    ]


def test_the_proxy_answer_to_a_bad_line_validates(tmp_path, backend_id):
    """The README's proxy example with a line of garbage typed by the editor: the agent's error
    reply (``id: null``) is correct, the one problem is the garbage line itself."""
    agent = [PY, "-m", "acp_fast.cli", "demo-agent", "--no-permission"]
    editor = (
        B.request(0, "initialize", {"protocolVersion": 1})
        + b"hello\n"
        + B.request(1, "session/new", {"cwd": "/repo", "mcpServers": []})
    )
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    rec = tmp_path / "session.ndjson"
    done = subprocess.run(
        [PY, "-m", "acp_fast.cli", "proxy", "--quiet", "--record", str(rec), "--", *agent],
        input=editor,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert b'"id":null,"error"' in done.stdout
    checked = run(str(rec), backend_id=backend_id)
    assert [p[2:] for p in problems_of(checked.stdout, str(rec))] == [("json", "expected a JSON value, found 'h'")]


def test_one_direction_of_a_conversation_gets_a_hint(tmp_path, backend_id):
    """The agent's side alone (what the proxy writes to the editor): its responses answer requests
    the file does not hold; the summary says what the file looks like."""
    agent = tmp_path / "agent.ndjson"
    agent.write_bytes(
        B.response(0, {"protocolVersion": 1})
        + B.response(1, {"sessionId": "sess_1"})
        + B.session_update(
            "sess_1", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
        )
        + B.response(2, {"stopReason": "end_turn"})
    )
    done = run(str(agent), backend_id=backend_id)
    assert done.returncode == 1
    last = done.stdout.decode().splitlines()[-1]
    assert last.startswith(f"hint: none of the 3 responses in {agent} answers a request it holds: ")
    assert "looks like one direction of a conversation" in last and "acp-fast proxy --record" in last
    report = json.loads(run(str(agent), "--format", "json", backend_id=backend_id).stdout)
    assert report["hint"] == last
    # both directions: no hint
    both = tmp_path / "both.ndjson"
    both.write_bytes(B.request(0, "initialize", {"protocolVersion": 1}) + B.response(0, {"protocolVersion": 1}))
    assert "hint" not in run(str(both), backend_id=backend_id).stdout.decode()
