"""Traces in the ACP conductor's format (``acp_fast.trace``, docs/CLI.md "Traces"): every event
checked field by field against the format of the conductor's ``trace.rs`` (the members, their
order and their JSON types), the route of each action of a recording, ``acp-fast proxy --trace``
against ``--record`` of the same run, and ``acp-fast export RECORDING --to OUT.jsons``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from acp_fast import recording, trace

PY = sys.executable

#: The members of each event, in the order the conductor writes them (``session`` only when known).
FIELDS = {
    "request": ["type", "ts", "protocol", "from", "to", "id", "method", "session", "params"],
    "response": ["type", "ts", "from", "to", "id", "is_error", "payload"],
    "notification": ["type", "ts", "protocol", "from", "to", "method", "session", "params"],
}


def check_event(line: bytes) -> Dict[str, Any]:
    """One event line as the format says it is; the event."""
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    event = json.loads(line)
    kind = event["type"]
    expected = [k for k in FIELDS[kind] if k != "session" or "session" in event]
    assert list(event) == expected
    assert isinstance(event["ts"], float) and event["ts"] >= 0
    assert event["from"] in ("Client", "Agent", "Proxy(0)") and event["to"] in ("Client", "Agent", "Proxy(0)")
    assert event["from"] != event["to"]
    if kind != "response":
        assert event["protocol"] == "acp"
        assert isinstance(event["method"], str)
        assert "session" not in event or isinstance(event["session"], str)
    else:
        assert isinstance(event["is_error"], bool)
    if "id" in event:
        assert event["id"] is None or isinstance(event["id"], (str, int))
    return event


def test_a_request_field_by_field(backend: Any) -> None:
    frame = b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"h\\u00e9"}]}}'
    [line] = trace.events(frame, 1.25, "Client", "Agent", backend)
    event = check_event(line)
    assert event == {
        "type": "request",
        "ts": 1.25,
        "protocol": "acp",
        "from": "Client",
        "to": "Agent",
        "id": 7,
        "method": "session/prompt",
        "session": "s1",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hé"}]},
    }
    assert line.endswith(b',"params":{"sessionId":"s1","prompt":[{"type":"text","text":"h\\u00e9"}]}}\n')  # verbatim


def test_a_notification_without_session_or_params(backend: Any) -> None:
    [line] = trace.events(b'{"jsonrpc":"2.0","method":"x/ping"}', 0.0, "Agent", "Client", backend)
    event = check_event(line)
    assert event == {"type": "notification", "ts": 0.0, "protocol": "acp", "from": "Agent", "to": "Client",
                     "method": "x/ping", "params": None}  # fmt: skip


@pytest.mark.parametrize(
    "frame, rid, is_error, payload",
    [
        (b'{"jsonrpc":"2.0","id":"a","result":{"sessionId":"s"}}', "a", False, {"sessionId": "s"}),
        (b'{"jsonrpc":"2.0","id":3,"result":null}', 3, False, None),
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}', None, True,
         {"code": -32700, "message": "Parse error"}),
    ],
)  # fmt: skip
def test_responses(backend: Any, frame: bytes, rid: Any, is_error: bool, payload: Any) -> None:
    [line] = trace.events(frame, 2.5, "Agent", "Client", backend)
    event = check_event(line)
    assert (event["id"], event["is_error"], event["payload"]) == (rid, is_error, payload)


def test_a_batch_gives_one_event_per_message(backend: Any) -> None:
    batch = (
        b'[{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}},'
        b' {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}]'
    )
    lines = trace.events(batch, 3.0, "Agent", "Client", backend)
    assert [check_event(x)["type"] for x in lines] == ["request", "notification"]


@pytest.mark.parametrize("frame", [b'{"a":1}', b"[]", b"[1,2]", b'"text"', b'{"jsonrpc":"2.0"}'])
def test_what_is_not_json_rpc_gives_no_event(backend: Any, frame: bytes) -> None:
    assert trace.events(frame, 0.0, "Client", "Agent", backend) == []


@pytest.mark.parametrize(
    "side, action, route",
    [
        ("editor", None, ("Client", "Agent")),
        ("agent", None, ("Agent", "Client")),
        ("agent", "injected", ("Proxy(0)", "Client")),
        ("editor", "injected", ("Proxy(0)", "Agent")),
        ("agent", "diverted", ("Agent", "Proxy(0)")),
        ("editor", "answered", ("Client", "Proxy(0)")),
        ("agent", "dropped", ("Agent", "Proxy(0)")),
        ("agent", "replaced", ("Agent", "Proxy(0)")),
        ("agent", "coalesced", ("Agent", "Proxy(0)")),
    ],
)
def test_routes(side: str, action: Any, route: Any) -> None:
    assert trace.route(side, action) == route


def test_writer_skips_what_the_format_cannot_hold(tmp_path: Path) -> None:
    out = tmp_path / "t.jsons"
    with open(out, "wb") as f:
        w = trace.TraceWriter(f, 100.0)
        w.line("editor", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', True, 100.5)
        w.line("agent", b"not json", False, 100.6)
        w.line("agent", b'{"jsonrpc":"2.0","id":1,"result":{}}', True, 100.7, withheld=True, action="dropped")
        w.too_large("agent", 10**9, 100.8)
        w.line("agent", b'{"jsonrpc":"2.0","id":1,"result":{}}', True, 99.0)  # a clock step back: ts 0
        w.exit(0)
        w.close()
    lines = out.read_bytes().splitlines(keepends=True)
    assert [check_event(x)["ts"] for x in lines] == [0.5, 0.0]
    assert w.skipped == 3


def _run_proxy(tmp_path: Path, backend_id: str, extra: List[str]) -> subprocess.CompletedProcess[bytes]:
    editor = "\n".join(
        [
            '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}',
            '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}',
            "this is not JSON",
            '{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"run ls"}]}}',
        ]
    )
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    return subprocess.run(
        [PY, "-m", "acp_fast.cli", "proxy", *extra, "--", PY, "-m", "acp_fast.cli", "demo-agent", "--no-permission"],
        input=editor.encode() + b"\n",
        capture_output=True,
        env=env,
        timeout=60,
    )


def test_proxy_trace_is_the_recording_as_a_trace(tmp_path: Path, backend_id: str) -> None:
    rec, out = tmp_path / "r.ndjson", tmp_path / "t.jsons"
    run = _run_proxy(tmp_path, backend_id, ["--record", str(rec), "--trace", str(out)])
    assert run.returncode == 0, run.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    lines = out.read_bytes().splitlines(keepends=True)
    events = [check_event(x) for x in lines]
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    # the same events as the recording converted afterwards (ts aside: each counts from its start)
    converted = tmp_path / "c.jsons"
    with open(converted, "wb") as f:
        trace.from_recording([rec.read_bytes()], f)
    again = [json.loads(x) for x in converted.read_bytes().splitlines()]
    for e in events + again:
        e.pop("ts")
    assert events == again
    # every JSON-RPC line of the recording is in the trace, once, in order, with its route
    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record) and r.is_json]
    assert len(events) == len(records)
    for r, e in zip(records, events):
        assert (e["from"], e["to"]) == trace.route(r.side, r.action)
    methods = [e.get("method") for e in events if e["from"] == "Client"]
    assert methods == ["initialize", "session/new", "session/prompt"]
    assert {e["session"] for e in events if e["type"] == "notification"} == {"sess_1"}
    answers = [e for e in events if e["type"] == "response"]
    assert [(e["from"], e["id"], e["is_error"]) for e in answers] == [
        ("Agent", 0, False),
        ("Agent", 1, False),
        ("Agent", None, True),  # the agent's answer to the editor's line that is not JSON
        ("Agent", 2, False),
    ]
    assert answers[-1]["payload"] == {"stopReason": "end_turn"}
    updates = [e for e in events if e["type"] == "notification"]
    assert updates and all(e["method"] == "session/update" and e["from"] == "Agent" for e in updates)


def test_proxy_trace_refuses_an_existing_file_and_the_recording_path(tmp_path: Path, backend_id: str) -> None:
    out = tmp_path / "t.jsons"
    out.write_bytes(b"keep")
    run = _run_proxy(tmp_path, backend_id, ["--trace", str(out)])
    assert run.returncode == 2 and b"--trace" in run.stderr and b"exists" in run.stderr
    assert out.read_bytes() == b"keep"
    same = tmp_path / "same"
    run = _run_proxy(tmp_path, backend_id, ["--record", str(same), "--trace", str(same)])
    assert run.returncode == 2 and b"--record and --trace name the same file" in run.stderr
    assert not same.exists()
    link = tmp_path / "link.jsons"
    link.symlink_to(tmp_path / "elsewhere")
    run = _run_proxy(tmp_path, backend_id, ["--trace", str(link), "--force"])
    assert run.returncode == 2 and not (tmp_path / "elsewhere").exists()


def _export(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([PY, "-m", "acp_fast.cli", "export", *args], capture_output=True, timeout=60)


def test_export_to_jsons(tmp_path: Path, backend_id: str) -> None:
    rec = tmp_path / "r.ndjson"
    assert _run_proxy(tmp_path, backend_id, ["--record", str(rec)]).returncode == 0
    out = tmp_path / "out.jsons"
    run = _export(str(rec), "--to", str(out))
    assert run.returncode == 0, run.stderr
    assert b"events" in run.stderr
    expected = tmp_path / "expected.jsons"
    with open(expected, "wb") as f:
        trace.from_recording([rec.read_bytes()], f)
    assert out.read_bytes() == expected.read_bytes()
    for line in out.read_bytes().splitlines(keepends=True):
        check_event(line)
    # two recordings: one trace, ts counted from the first one's start
    both, copy = tmp_path / "both.jsons", tmp_path / "r2.ndjson"
    copy.write_bytes(rec.read_bytes())
    assert _export(str(rec), str(copy), "--to", str(both)).returncode == 0
    assert both.read_bytes().count(b"\n") == 2 * out.read_bytes().count(b"\n")


def test_export_to_jsons_refusals(tmp_path: Path) -> None:
    plain = tmp_path / "plain.ndjson"
    plain.write_bytes(b'{"jsonrpc":"2.0","method":"x"}\n')
    out = tmp_path / "out.jsons"
    run = _export(str(plain), "--to", str(out))
    assert run.returncode == 2 and b"is not a recording" in run.stderr and not out.exists()
    a_trace = tmp_path / "t.jsons"
    a_trace.write_bytes(b'{"type":"notification","ts":0.1,"protocol":"acp","from":"Agent","to":"Client",'
                        b'"method":"x","session":null,"params":null}\n')  # fmt: skip
    run = _export(str(a_trace), "--to", str(out))
    assert run.returncode == 2 and b"t.jsons is a trace, not a recording" in run.stderr and not out.exists()
    run = _export(str(plain), "--to", str(out), "--table", "tool_calls")
    assert run.returncode == 2 and b"a trace (.jsons) holds the frames" in run.stderr
    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(b'{"acp-fast-recording":1,"t":1.0,"argv":[],"version":"x"}\n{"t":"soon","from":"editor"}\n')
    run = _export(str(bad), "--to", str(out))
    assert run.returncode == 1 and b"line 2" in run.stderr and not out.exists()
    assert list(tmp_path.glob(".out.jsons*")) == []  # no partial file left


# -- reading a trace as a recording (validate, inspect) ---------------------------------------


def _inspect_json(path: Path, backend_id: str, *extra: str) -> Dict[str, Any]:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    run = subprocess.run(
        [PY, "-m", "acp_fast.cli", "inspect", "--json", *extra, str(path)], capture_output=True, env=env, timeout=60
    )
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def test_a_trace_reads_as_its_recording(tmp_path: Path, backend_id: str) -> None:
    """The proxy's trace and its recording replay to the same state and the same frames."""
    rec, out = tmp_path / "r.ndjson", tmp_path / "t.jsons"
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    editor = tmp_path / "editor.ndjson"
    editor.write_bytes(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"go"}]}}\n'
    )
    with open(editor, "rb") as stdin:
        run = subprocess.run(
            [PY, "-m", "acp_fast.cli", "proxy", "--record", str(rec), "--trace", str(out), "--",
             PY, "-m", "acp_fast.cli", "demo-agent", "--no-permission"],
            stdin=stdin, capture_output=True, env=env, timeout=60,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    from_rec, from_trace = _inspect_json(rec, backend_id), _inspect_json(out, backend_id)
    assert from_trace["format"] == "trace" and from_rec["format"] == "recording"
    assert from_trace["state"] == from_rec["state"]
    assert from_trace["state"]["sessions"], "the demo's tool calls are in the state"
    assert from_trace["summary"]["frames"] == from_rec["summary"]["frames"] > 10
    assert from_trace["errors"] == from_rec["errors"] == []
    # and validate agrees that both are clean
    for path in (rec, out):
        check = subprocess.run(
            [PY, "-m", "acp_fast.cli", "validate", "--format", "json", str(path)],
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert check.returncode == 0, check.stdout
        assert json.loads(check.stdout)["problemCount"] == 0


def test_arrow_and_export_read_a_trace_as_its_recording(tmp_path: Path, backend_id: str) -> None:
    """`acp_fast.arrow` (frames, tool_calls) and `acp-fast export` read a trace as the recording
    it was made from: the same rows, sides and routing fields (lines and times are the trace's)."""
    pa = pytest.importorskip("pyarrow")
    from acp_fast import arrow

    rec = tmp_path / "r.ndjson"
    run = subprocess.run(
        [PY, "-m", "acp_fast.cli", "proxy", "--record", str(rec), "--",
         PY, "-m", "acp_fast.cli", "demo-agent", "--no-permission"],
        input=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"go"}]}}\n',
        capture_output=True, env=dict(os.environ, ACP_FAST_BACKEND=backend_id), timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = tmp_path / "t.jsons"
    with open(out, "wb") as f:
        trace.from_recording([rec.read_bytes()], f)
    assert arrow.is_recording_file(str(out))
    keep = ["method", "id", "session_id", "update_kind", "tool_call_id", "status", "kind", "side"]
    from_rec, from_trace = arrow.frames(str(rec)), arrow.frames(out.read_bytes())
    assert set(keep) <= set(from_trace.column_names)
    assert from_trace.select(keep).to_pylist() == from_rec.select(keep).to_pylist()
    assert len(from_trace) > 10 and from_trace.column("time").null_count == 0
    # a trace's lines are its own: line n of the trace is the event of row n
    assert from_trace.column("line").to_pylist() == list(range(1, len(from_trace) + 1))
    calls = ["session_id", "tool_call_id", "kind", "title", "status", "updates", "content_items"]
    rec_calls, trace_calls = arrow.tool_calls(str(rec)), arrow.tool_calls(str(out))
    assert len(rec_calls) > 0 and "first_time" in trace_calls.column_names
    assert trace_calls.select(calls).to_pylist() == rec_calls.select(calls).to_pylist()
    # export: a trace beside a recording in one Parquet file
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "both.parquet"
    done = _export(str(rec), str(out), "--to", str(parquet))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(parquet)
    assert table.column("file").to_pylist() == [str(rec)] * len(from_rec) + [str(out)] * len(from_trace)
    assert table.filter(pa.compute.equal(table.column("file"), str(out))).select(keep).to_pylist() == (
        from_trace.select(keep).to_pylist()
    )


@pytest.mark.parametrize(
    "sender, receiver, side, action",
    [
        ("Client", "Agent", "editor", None),
        ("Agent", "Client", "agent", None),
        ("Client", "Proxy(0)", "editor", "replaced"),
        ("Agent", "Proxy(3)", "agent", "replaced"),
        ("Proxy(0)", "Agent", "editor", "injected"),
        ("Proxy(2)", "Client", "agent", "injected"),
        ("Proxy(0)", "Proxy(1)", None, None),
    ],
)
def test_sides_of_events(sender: str, receiver: str, side: Any, action: Any) -> None:
    expected = None if side is None else (side, action)
    assert trace.side_of(sender, receiver) == expected


def test_a_trace_of_a_proxy_chain(tmp_path: Path) -> None:
    """A conductor trace through two proxies: read at the ends, nothing twice as delivered."""
    lines = [
        b'{"type":"request","ts":0.1,"protocol":"acp","from":"Client","to":"Proxy(0)","id":0,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"type":"request","ts":0.2,"protocol":"acp","from":"Proxy(0)","to":"Proxy(1)","id":0,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"type":"request","ts":0.3,"protocol":"acp","from":"Proxy(1)","to":"Agent","id":0,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"type":"response","ts":0.4,"from":"Agent","to":"Proxy(1)","id":0,"is_error":false,"payload":{"protocolVersion":1}}',
        b'{"type":"response","ts":0.5,"from":"Proxy(0)","to":"Client","id":0,"is_error":false,"payload":{"protocolVersion":1}}',
    ]
    records = [r for _, r in trace.parse_lines([b"\n".join(lines) + b"\n"], 1 << 20)]
    assert [(r.line, r.direction, r.action, r.forwarded) for r in records] == [
        (1, "editor", "replaced", False),
        (3, "editor", "injected", True),
        (4, "agent", "replaced", False),
        (5, "agent", "injected", True),
    ]
    path = tmp_path / "chain.jsons"
    path.write_bytes(b"\n".join(lines) + b"\n")
    check = subprocess.run(
        [PY, "-m", "acp_fast.cli", "validate", "--format", "json", str(path)], capture_output=True, timeout=60
    )
    report = json.loads(check.stdout)
    assert report["format"] == "trace" and report["problemCount"] == 0 and report["negotiatedVersion"] == 1


@pytest.mark.parametrize(
    "line, message",
    [
        (b"[1]", "expected a record object, found array"),
        (b'{"type":"log","ts":1}', 'expected "type" to be "request", "response" or "notification", found "log"'),
        (b'{"type":"request","ts":"x","from":"Client","to":"Agent","id":1,"method":"m","params":{}}', '"ts"'),
        (b'{"type":"request","ts":1,"from":"Client","to":"Client","id":1,"method":"m","params":{}}', '"from" and "to"'),
        (b'{"type":"request","ts":1,"from":"Client","to":"Agent","method":"m","params":{}}', "to have id"),
        (b'{"type":"response","ts":1,"from":"Agent","to":"Client","id":1,"payload":{}}', "is_error"),
        (
            b'{"type":"notification","ts":1,"from":"Agent","to":"Client","method":7,"params":{}}',
            '"method" to be a string',
        ),
    ],
)
def test_lines_that_are_not_events(line: bytes, message: str) -> None:
    data = (
        b'{"type":"notification","ts":0,"protocol":"acp","from":"Agent","to":"Client","method":"x","params":null}\n'
        + line
        + b"\n"
    )
    [(n1, first), (n2, error)] = list(trace.parse_lines([data], 1 << 20))
    assert n1 == 1 and first is not None and not isinstance(first, recording.RecordingError)
    assert n2 == 2 and isinstance(error, recording.RecordingError) and message in str(error) and error.line == 2


def test_a_bad_frame_in_a_trace_is_placed_in_the_trace_line(tmp_path: Path) -> None:
    """validate's column for a problem in the params is the column of the trace's line."""
    good = b'{"type":"request","ts":0,"protocol":"acp","from":"Client","to":"Agent","id":0,"method":"initialize","params":{"protocolVersion":1}}'
    bad = b'{"type":"notification","ts":1,"protocol":"acp","from":"Agent","to":"Client","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update"}}}'
    path = tmp_path / "bad.jsons"
    path.write_bytes(good + b"\n" + bad + b"\n")
    check = subprocess.run(
        [PY, "-m", "acp_fast.cli", "validate", "--format", "json", str(path)], capture_output=True, timeout=60
    )
    report = json.loads(check.stdout)
    assert check.returncode == 1 and report["format"] == "trace"
    [problem] = report["problems"]
    assert problem["line"] == 2
    column = problem["column"]
    assert bad.index(b'"update"') < column <= len(bad), problem  # inside the params of line 2


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":5,"method":"m","params":{"a":[1,{"b":"}"}]}}',
        b'{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":5}',  # params not last
        b'{"id":5,"params":{"a":1},"method":"m","jsonrpc":"2.0"}',  # another order
        b'{ "jsonrpc" : "2.0", "id" : 5, "method" : "m", "params" : {"a" : 1} }',  # spaces
        b'{"jsonrpc":"2.0","id":"a\\"b","method":"m\\u0041","params":[1,2]}',  # escapes
    ],
)
def test_members_are_found_in_any_layout(backend: Any, frame: bytes) -> None:
    expected = json.loads(frame)
    [line] = trace.events(frame, 0.5, "Client", "Agent", backend)
    event = check_event(line)
    assert (event["id"], event["method"], event["params"]) == (expected["id"], expected["method"], expected["params"])
    # and read back, the same frame as a value
    record = trace.parse_record(line.rstrip(b"\n"), 1)
    assert record is not None and json.loads(record.data) == {
        k: expected[k] for k in ("jsonrpc", "id", "method", "params")
    }


@pytest.mark.parametrize("name", ["proxy/initialize", "_proxy/initialize"])
def test_the_conductors_initialize_of_a_proxy_reads_as_initialize(name: str) -> None:
    line = (
        b'{"type":"request","ts":0.1,"protocol":"acp","from":"Client","to":"Proxy(0)","id":"u1","method":"'
        + name.encode()
        + b'","params":{"protocolVersion":1}}'
    )
    record = trace.parse_record(line, 1)
    assert record is not None and record.direction == "editor" and record.action == "replaced"
    assert json.loads(record.data) == {
        "jsonrpc": "2.0",
        "id": "u1",
        "method": "initialize",
        "params": {"protocolVersion": 1},
    }
