"""Columnar frames and tool calls (acp_fast.arrow; docs/ANALYTICS.md).

frames() is checked row by row and column by column against decoding each line with the
backend's ``decode``; tool_calls() against the final state of a ``ToolCallStore`` fed the same
stream. Each runs on both backends: the backend's ``FrameColumns``, ``FrameDecoder`` and
``ToolCallStore`` are put in place of the package's.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import acp_fast
from acp_fast import arrow, traffic
from acp_fast.cli import main as cli_main
from acp_fast.recording import RecordWriter
from conftest import get_backend

PYTHONPATH = str(Path(acp_fast.__file__).resolve().parent.parent)

# Lines no generator writes: invalid ones, batches, escapes, odd ids and updates, line endings.
ODD_LINES = [
    b"nope",
    b"{}",
    b'{"jsonrpc":"2.0"}',
    b"[]",
    b"[1]",
    b'[{"jsonrpc":"2.0","method":"m"}]',
    b"\xff\xfe",
    b"\xef\xbb\xbf{}",
    b'"just a string"',
    b'{"jsonrpc":"2.0","id":1.5,"method":"m"}',
    b'{"jsonrpc":"2.0","id":-0,"result":{}}',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}',
    b'{"jsonrpc":"2.0","id":"\\u0041\\"\\n","method":"a\\/b","params":{"sessionId":"s\\u00e9"}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":7}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"status":"failed","st\\u0061tus":"completed"}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"status":"x"}},"params":[1]}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":"status"}}',
    b'{"jsonrpc":"2.0","method":"m","params":{"sessionId":1,"update":{"sessionUpdate":2,"toolCallId":null}}}',
    b'  {"jsonrpc":"2.0","method":"spaced"}  ',
    b'{"jsonrpc":"2.0","method":"cr"}\r',
    b"   ",
    b"",
    b'{"jsonrpc":"2.0","method":"m","params":{"deep":' + b"[" * 1100 + b"]" * 1100 + b"}}",
]
STREAM_TAIL = b"\n".join(ODD_LINES) + b'\n{"jsonrpc":"2.0","method":"last line without a newline"}'
PROFILE_FRAMES = {"mixed": 1500, "large": 60, "tiny": 1500, "v2": 1500}


@pytest.fixture
def on_backend(backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """acp_fast.arrow running on ``backend``."""
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_FrameDecoder", backend.FrameDecoder)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    monkeypatch.setattr(arrow, "_ToolCallColumns", backend.ToolCallColumns)
    return backend


def _status(message: Any) -> Optional[str]:
    params = message.params
    update = params.get("update") if isinstance(params, dict) else None
    status = update.get("status") if isinstance(update, dict) else None
    return status if isinstance(status, str) else None


def expected_row(backend: Any, line: int, data: bytes) -> Dict[str, Any]:
    """The row of one line, from ``backend.decode``."""
    row: Dict[str, Any] = dict.fromkeys(arrow.FRAME_COLUMNS)
    row.update(line=line, bytes=len(data), raw=data)
    try:
        frame = backend.decode(data)
    except acp_fast.DecodeError as exc:
        row.update(kind="invalid", error=exc.kind)
        return row
    if isinstance(frame, acp_fast.Batch):
        row["kind"] = "batch"
        return row
    row.update(
        kind=frame.kind,
        method=frame.method,
        id=None if frame.kind == "notification" else backend.dumps(frame.id).decode(),
        session_id=frame.session_id,
        update_kind=frame.update_kind,
        tool_call_id=frame.tool_call_id,
        status=_status(frame),
    )
    return row


def expected_rows(
    backend: Any, data: bytes, max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES
) -> List[Dict[str, Any]]:
    """A row per line the backend's Framer cuts, each from ``decode`` (too large: an invalid row)."""
    framer = backend.Framer(max_frame_bytes=max_frame_bytes)
    rows = []
    for event in [*framer.feed(data), *framer.finish()]:
        if isinstance(event, acp_fast.DecodeError):
            row: Dict[str, Any] = dict.fromkeys(arrow.FRAME_COLUMNS)
            row.update(line=event.line, kind="invalid", error="frame_too_large")
            rows.append(row)
        else:
            line, data = event
            stripped = data[:-1] if data.endswith(b"\r") else data  # decode strips what the framer left
            rows.append(expected_row(backend, line, stripped))
    return rows


def assert_rows(table: pa.Table, expected: List[Dict[str, Any]]) -> None:
    assert table.num_rows == len(expected)
    got = table.to_pylist()
    for name in table.column_names:
        column = [row[name] for row in got]
        want = [row.get(name) for row in expected]
        if column != want:
            i = next(i for i, (a, b) in enumerate(zip(column, want)) if a != b)
            pytest.fail(f"column {name}, row {i} (line {got[i]['line']}): {column[i]!r} != {want[i]!r}")


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_frames_agree_with_decode(on_backend: Any, profile: str) -> None:
    data = traffic.generate(profile, PROFILE_FRAMES[profile], seed=7) + STREAM_TAIL
    table = arrow.frames(data)
    assert table.schema == arrow.frames_schema()
    assert_rows(table, expected_rows(on_backend, data))
    kinds = set(table.column("kind").to_pylist())
    assert {"invalid", "batch", "request", "notification", "response", "error"} <= kinds


def test_frames_in_any_pieces_and_from_a_path(on_backend: Any, tmp_path: Path) -> None:
    data = traffic.generate("mixed", 400, seed=3) + STREAM_TAIL
    whole = arrow.frames(data)
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    assert arrow.frames(path).equals(whole)
    assert arrow.frames(str(path)).equals(whole)
    assert arrow.frames(bytearray(data)).equals(whole)
    cols = on_backend.FrameColumns()
    for i in range(0, len(data), 777):
        cols.feed(data[i : i + 777])
    assert arrow._table(pa, cols.finish()).equals(whole)


def test_lines_over_the_limit(on_backend: Any) -> None:
    long = b'{"jsonrpc":"2.0","method":"' + b"x" * 300 + b'"}'
    data = b'{"jsonrpc":"2.0","method":"a"}\n' + long + b"\n" + long + b'\n{"jsonrpc":"2.0","method":"b"}\n' + long
    table = arrow.frames(data, max_frame_bytes=100)
    assert_rows(table, expected_rows(on_backend, data, 100))
    assert table.column("error").to_pylist() == [None, "frame_too_large", "frame_too_large", None, "frame_too_large"]
    assert table.column("raw").to_pylist()[1] is None
    with pytest.raises(ValueError, match="at most 1073741824"):
        on_backend.FrameColumns(max_frame_bytes=(1 << 30) + 1)
    with pytest.raises(ValueError, match="max_frame_bytes must be between"):
        on_backend.FrameColumns(max_frame_bytes=0)


def test_ranges_give_the_rows_of_the_whole(on_backend: Any, tmp_path: Path) -> None:
    data = b"\n\n" + traffic.generate("mixed", 600, seed=5) + STREAM_TAIL
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    whole = arrow.frames(path)
    for blocksize in (1, 5000, 40000, len(data) + 10):
        ranges = arrow.byte_ranges(str(path), blocksize)
        assert ranges[0][0] == 0 and ranges[-1][1] is None
        parts, before = [], 0
        for start, end in ranges:
            assert start == 0 or data[start - 1 : start] == b"\n"
            parts.append(arrow.range_frames(str(path), start, end, before))
            before += arrow.count_lines(str(path), start, end)
        assert pa.concat_tables(parts).equals(whole), blocksize


def test_source_adds_the_side(on_backend: Any) -> None:
    data = traffic.generate("v2", 50, seed=1)
    assert arrow.frames(data, source="agent").column("side").to_pylist() == ["agent"] * 50
    table = arrow.frames(data, source="client")
    assert table.column("side").to_pylist() == ["editor"] * 50
    assert table.drop_columns(["side"]).equals(arrow.frames(data))
    with pytest.raises(ValueError, match="expected source to be 'agent', 'client' or None"):
        arrow.frames(data, source="editor")


def make_recording(frames: List[bytes]) -> bytes:
    """A recording of ``frames`` (alternating sides), a text line, a binary line, a line over the
    proxy's limit, a malformed record, and the footer."""
    out = io.BytesIO()
    writer = RecordWriter(out, ["acp-fast", "proxy"], "test")
    t = 1_700_000_000.0
    for i, frame in enumerate(frames):
        data = frame.rstrip(b"\n")
        writer.line(("editor", "agent")[i % 2], data, True, t + i * 0.25)
    writer.line("agent", b"not json at all", False, t + 1000)
    writer.line("editor", b"\xff\x00binary", False, t + 1001, crlf=True)
    writer.too_large("agent", 99999, t + 1002)
    out.write(b'{"t":"soon","from":"agent","frame":{}}\n')
    writer.exit(0)
    return out.getvalue()


def test_recordings(on_backend: Any, tmp_path: Path) -> None:
    frames = traffic.frames("mixed", 300, seed=2)
    data = make_recording(frames)
    table = arrow.frames(data)
    assert table.schema == arrow.frames_schema(recording=True)
    n = len(frames)
    assert table.num_rows == n + 4
    # A row per recorded line, numbered by its line in the recording (the header is line 1).
    assert table.column("line").to_pylist() == list(range(2, n + 6))
    expected = [expected_row(on_backend, 2 + i, f.rstrip(b"\n")) for i, f in enumerate(frames)]
    expected.append(expected_row(on_backend, n + 2, b"not json at all"))
    expected.append(expected_row(on_backend, n + 3, b"\xff\x00binary"))
    last: Dict[str, Any] = dict.fromkeys(arrow.FRAME_COLUMNS)
    expected.append({**last, "line": n + 4, "kind": "invalid", "error": "frame_too_large", "bytes": 99999})
    expected.append({**last, "line": n + 5, "kind": "invalid", "error": "invalid_record"})
    assert_rows(table.drop_columns(["time", "side"]), expected)
    assert table.column("side").to_pylist() == [("editor", "agent")[i % 2] for i in range(n)] + [
        "agent",
        "editor",
        "agent",
        None,
    ]
    times = table.column("time").to_pylist()
    assert times[:3] == [1_700_000_000.0, 1_700_000_000.25, 1_700_000_000.5] and times[-1] is None
    path = tmp_path / "session.rec"
    path.write_bytes(data)
    assert arrow.frames(path).equals(table)
    with pytest.raises(ValueError, match="a recording says who sent each line"):
        arrow.frames(data, source="agent")


def _text(value: Any) -> Optional[str]:
    return value if value is None or isinstance(value, str) else acp_fast.dumps(value).decode()


@pytest.mark.parametrize("profile", ["mixed", "v2", "large"])
def test_tool_calls_agree_with_the_store(on_backend: Any, profile: str) -> None:
    data = traffic.generate(profile, PROFILE_FRAMES[profile] * 2, seed=11) + STREAM_TAIL
    table = arrow.tool_calls(data)
    assert table.schema == arrow.tool_calls_schema()
    store = on_backend.ToolCallStore()
    store.feed(data, changes=False)
    store.finish(changes=False)
    records = [(sid, tcid, r) for sid, calls in store.snapshot().items() for tcid, r in calls.items()]
    rows = table.to_pylist()
    assert len(rows) == len(records) > 0
    frames = {row["line"]: row for row in arrow.frames(data).to_pylist()}
    for row, (sid, tcid, record) in zip(rows, records):
        assert (row["session_id"], row["tool_call_id"]) == (sid, tcid)
        assert row["kind"] == _text(record.get("kind"))
        assert row["title"] == _text(record.get("title"))
        assert row["status"] == _text(record.get("status"))
        content = record.get("content")
        assert row["content_items"] == (len(content) if isinstance(content, list) else 0)
        items = content if isinstance(content, list) else []
        assert row["content_bytes"] == sum(len(acp_fast.dumps(item)) for item in items)
        permissions = [p for p in store.permissions(sid) if p.get("toolCallId") == tcid]
        if permissions:
            assert row["permission_outcome"] == permissions[-1]["outcome"]
            assert row["permission_approved"] == permissions[-1]["approved"]
            request = frames[row["permission_line"]]
            assert (request["method"], request["session_id"]) == ("session/request_permission", sid)
            assert row["permission_resolved_line"] is None or row["permission_resolved_line"] > row["permission_line"]
        else:
            assert row["permission_outcome"] is row["permission_line"] is None
        assert row["updates"] >= 1
        assert row["first_line"] <= row["last_line"]
        first = frames[row["first_line"]]
        assert first["tool_call_id"] == tcid or first["method"] == "session/request_permission"
    if profile == "mixed":
        assert {r["permission_outcome"] for r in rows} >= {None, "selected"}


def test_tool_calls_lines_and_permissions(on_backend: Any) -> None:
    def update(body: str) -> str:
        return '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":' + body + "}}"

    lines = [
        update('{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read","kind":"read"}'),
        update('{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Edit","kind":"edit"}'),
        '{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c2","status":"pending"},"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}}',
        update(
            '{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"hi"}}]}'
        ),
        "garbage",
        '{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}',
        update('{"sessionUpdate":"tool_call_update","toolCallId":"c2","status":"failed"}'),
    ]
    data = "\n".join(lines).encode()
    rows = arrow.tool_calls(data).to_pylist()
    assert rows == [
        {
            "session_id": "s1",
            "tool_call_id": "c1",
            "kind": "read",
            "title": "Read",
            "status": "completed",
            "first_line": 1,
            "last_line": 4,
            "updates": 2,
            "content_items": 1,
            "content_bytes": len(b'{"type":"content","content":{"type":"text","text":"hi"}}'),
            "permission_outcome": None,
            "permission_approved": None,
            "permission_line": None,
            "permission_resolved_line": None,
        },
        {
            "session_id": "s1",
            "tool_call_id": "c2",
            "kind": "edit",
            "title": "Edit",
            "status": "failed",
            "first_line": 2,
            "last_line": 7,
            "updates": 3,
            "content_items": 0,
            "content_bytes": 0,
            "permission_outcome": "selected",
            "permission_approved": True,
            "permission_line": 3,
            "permission_resolved_line": 6,
        },
    ]
    # A recording adds the times, and replays the editor's frames as the client's.
    recording = make_recording([line.encode() + b"\n" for line in lines[:4] + lines[5:]])
    table = arrow.tool_calls(recording)
    assert table.schema == arrow.tool_calls_schema(recording=True)
    c2 = table.to_pylist()[1]
    assert (c2["first_line"], c2["permission_line"], c2["permission_resolved_line"]) == (3, 4, 6)
    assert (c2["first_time"], c2["permission_time"], c2["permission_resolved_time"]) == (
        1_700_000_000.25,
        1_700_000_000.5,
        1_700_000_001.0,
    )
    assert c2["permission_outcome"] == "selected"


def test_backends_build_the_same_tables() -> None:
    native, fallback = get_backend("rust"), get_backend("python")
    data = traffic.generate("mixed", 500, seed=4) + STREAM_TAIL
    tables = []
    for backend in (native, fallback):
        cols = backend.FrameColumns(first_line=10)
        cols.feed(data)
        cols.line(1, b'{"jsonrpc":"2.0","method":"m"}\r\n')
        cols.too_large(2, 5)
        cols.invalid(3, "invalid_record", b"raw")
        cols.invalid(4, "invalid_record")
        tables.append(arrow._table(pa, cols.finish()))
    assert tables[0].schema == tables[1].schema == arrow.frames_schema()
    assert tables[0].equals(tables[1])
    assert len(native.FrameColumns().finish()) == 0


def test_many_files_and_parquet(on_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.ndjson").write_bytes(traffic.generate("mixed", 200, seed=1))
    (tmp_path / "d" / "b.rec").write_bytes(make_recording(traffic.frames("v2", 100, seed=1)))
    (tmp_path / "c.ndjson").write_bytes(traffic.generate("tiny", 100, seed=1))
    files = arrow.expand([tmp_path / "d", str(tmp_path / "*.ndjson")])
    assert [os.path.basename(f) for f in files] == ["a.ndjson", "b.rec", "c.ndjson"]
    table = arrow.read_frames([tmp_path / "d", str(tmp_path / "*.ndjson")])
    assert table.schema == arrow.frames_schema(recording=True, file=True)
    assert table.num_rows == 200 + 104 + 100
    a = table.filter(pa.compute.equal(table.column("file"), files[0]))
    assert a.drop_columns(["file", "time", "side"]).equals(arrow.frames(files[0]))
    assert a.column("time").null_count == 200
    out = tmp_path / "frames.parquet"
    assert cli_main(["export", str(tmp_path / "d"), str(tmp_path / "*.ndjson"), "--to", str(out), "--no-progress"]) == 0
    assert pq.read_table(out).equals(table)
    with pytest.raises(SystemExit) as exit:  # OUT exists: a usage error without --force
        cli_main(["export", str(tmp_path / "d"), "--to", str(out), "--no-progress"])
    assert exit.value.code == 2
    calls = tmp_path / "calls.parquet"
    assert cli_main(["export", str(tmp_path / "d"), "--to", str(calls), "--table", "tool_calls", "--force"]) == 0
    assert pq.read_table(calls).equals(arrow.read_tool_calls(tmp_path / "d"))
    with pytest.raises(FileNotFoundError):
        arrow.expand(str(tmp_path / "nothing*"))


def test_export_summary_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.ndjson"
    src.write_bytes(traffic.generate("mixed", 100, seed=1) + b"nope\n")
    out = tmp_path / "out.parquet"
    assert cli_main(["export", str(src), "--to", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 file" in err and "101 frames (1 invalid)" in err and str(out) in err
    for argv, expected in (
        (["export", str(tmp_path / "missing"), "--to", str(tmp_path / "x.parquet")], "no such file"),
        (["export", str(src), "--to", str(tmp_path / "no" / "x.parquet")], "no folder"),
    ):
        with pytest.raises(SystemExit) as exit:  # a usage error: one line, status 2
            cli_main(argv)
        assert exit.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and expected in err.lower(), err


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    # pyarrow made unimportable, as when the extra is not installed.
    blocker = "import sys; sys.modules['pyarrow'] = None; "
    return subprocess.run([sys.executable, "-c", blocker + code], env=env, capture_output=True, text=True, timeout=120)


def test_without_pyarrow() -> None:
    done = _run(
        'import acp_fast, acp_fast.arrow, acp_fast.dask, acp_fast.ray; print(acp_fast.decode(b\'{"jsonrpc":"2.0","method":"m"}\').method)'
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "m"
    done = _run("import acp_fast.arrow as a; a.frames(b'')")
    assert done.returncode != 0
    assert (
        "ImportError: acp_fast.arrow needs pyarrow, which is not installed: pip install 'acp-fast[arrow]'"
        in done.stderr
    )
    done = _run("from acp_fast.cli import main; raise SystemExit(main(['export', '-', '--to', 'x.parquet']))")
    assert done.returncode == 2
    assert "pip install 'acp-fast[arrow]'" in done.stderr
