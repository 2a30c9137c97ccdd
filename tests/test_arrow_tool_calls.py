"""tool_calls() through the backend's ``ToolCallColumns`` (docs/ANALYTICS.md, issue 29): its table
is the one the earlier Python replay built (``reference`` below: each frame of ``FrameDecoder``
applied with ``ToolCallStore.apply``, the returned ``Change``s followed, the table built from
``snapshot`` and ``permissions``), on the stream, recording and generated inputs, for any
``threads`` and wherever the chunks are cut. Each runs on both backends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acp_fast
from acp_fast import arrow, traffic
from acp_fast.recording import RecordingError, record_limit
from conftest import BACKEND_IDS, get_backend
from test_arrow import PROFILE_FRAMES, STREAM_TAIL, make_recording
from test_arrow_threads import INPUTS

THREADS = (1, 2, 3)


class Tracker:
    """The Python replay tool_calls() had before ``ToolCallColumns`` (the reference)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.seen: Dict[Tuple[Any, Any], List[Any]] = {}
        self.permission: Dict[Tuple[Any, Any], List[Any]] = {}

    def _touch(self, key: Tuple[Any, Any], line: int, t: Optional[float]) -> None:
        seen = self.seen.get(key)
        if seen is None:
            self.seen[key] = [line, t, line, t, 1]
        else:
            seen[2] = line
            seen[3] = t
            seen[4] += 1

    def apply(self, store: Any, frame: Any, line: int, t: Optional[float], source: Optional[str]) -> None:
        try:
            result = store.apply(frame, source=source)
        except acp_fast.DecodeError:
            return
        for change in result if isinstance(result, list) else (result,):
            if change is None or isinstance(change, acp_fast.DecodeError):
                continue
            if change.target == "tool_call":
                self._touch((change.session_id, change.id), line, t)
            elif change.target == "permission" and change.tool_call_id is not None:
                key = (change.session_id, change.tool_call_id)
                if change.action == "requested":
                    self._touch(key, line, t)
                    self.permission[key] = [change.id, line, t, None, None]
                else:
                    p = self.permission.get(key)
                    if p is not None and type(p[0]) is type(change.id) and p[0] == change.id:
                        p[3], p[4] = line, t

    def table(self, store: Any, times: bool) -> pa.Table:
        names = arrow.TOOL_CALL_COLUMNS + (arrow.TIME_COLUMNS if times else ())
        columns: Dict[str, List[Any]] = {name: [] for name in names}
        dumps = self.backend.dumps
        for sid, calls in store.snapshot().items():
            outcomes = {}
            for p in store.permissions(sid):
                if "toolCallId" in p:
                    outcomes[p["toolCallId"]] = p
            for tcid, record in calls.items():
                seen = self.seen.get((sid, tcid), [None] * 5)
                perm = self.permission.get((sid, tcid), [None] * 5)
                outcome = outcomes.get(tcid)
                content = record.get("content")

                def text(value: Any) -> Optional[str]:
                    return value if value is None or isinstance(value, str) else dumps(value).decode()

                row = {
                    "session_id": sid,
                    "tool_call_id": tcid,
                    "kind": text(record.get("kind")),
                    "title": text(record.get("title")),
                    "status": text(record.get("status")),
                    "first_line": seen[0],
                    "last_line": seen[2],
                    "updates": seen[4],
                    "content_items": len(content) if isinstance(content, list) else 0,
                    "content_bytes": sum(len(dumps(item)) for item in content) if isinstance(content, list) else 0,
                    "permission_outcome": None if outcome is None else outcome.get("outcome"),
                    "permission_approved": None if outcome is None else outcome.get("approved"),
                    "permission_line": perm[1],
                    "permission_resolved_line": perm[3],
                    "first_time": seen[1],
                    "last_time": seen[3],
                    "permission_time": perm[2],
                    "permission_resolved_time": perm[4],
                }
                for name, values in columns.items():
                    values.append(row[name])
        return pa.table(columns, schema=arrow.tool_calls_schema(recording=times))


def reference(backend: Any, data: bytes, source: Optional[str] = None) -> pa.Table:
    """The table of a plain stream or a recording as the Python replay built it."""
    store = backend.ToolCallStore(max_tool_calls=None, max_sessions=None)
    tracker = Tracker(backend)
    records = arrow._records_of(data[:64])
    if records is not None:
        for number, record in records(iter([data]), record_limit(acp_fast.DEFAULT_MAX_FRAME_BYTES)):
            if record is None or isinstance(record, RecordingError) or record.kind != "line":
                continue
            if record.data is not None:
                tracker.apply(store, record.data, number, float(record.value["t"]), record.source)
        return tracker.table(store, True)
    decoder = backend.FrameDecoder()
    for item in [*decoder.feed(data), *decoder.finish()]:
        if not isinstance(item, acp_fast.DecodeError):
            tracker.apply(store, item, item.line or 0, None, source)
    return tracker.table(store, False)


def table_of(backend: Any, data: bytes, threads: int, cuts: List[int], source: Optional[str] = None) -> pa.Table:
    """``backend.ToolCallColumns`` fed ``data`` cut at ``cuts``."""
    cols = backend.ToolCallColumns(threads=threads, source=source)
    at = 0
    for cut in sorted(cuts) + [len(data)]:
        cols.feed(memoryview(data[at:cut]).toreadonly() if cut % 2 else data[at:cut])
        at = cut
    return arrow._table(pa, cols.finish())


def same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


PROFILES = {
    name: traffic.generate(name, PROFILE_FRAMES[name] * 2, seed=11) + STREAM_TAIL for name in ("mixed", "v2", "large")
}
DATA = {**PROFILES, **INPUTS}


@pytest.fixture
def on_backend(backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """acp_fast.arrow running on ``backend``."""
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    monkeypatch.setattr(arrow, "_ToolCallColumns", backend.ToolCallColumns)
    return backend


@pytest.mark.parametrize("name", sorted(DATA))
def test_the_table_is_the_python_replays(on_backend: Any, name: str) -> None:
    data = DATA[name]
    want = reference(on_backend, data)
    same(arrow.tool_calls(data), want)
    for threads in THREADS:
        for cuts in ([], [len(data) // 3, len(data) // 2], list(range(0, len(data), max(1, len(data) // 7)))):
            same(table_of(on_backend, data, threads, cuts), want)


def test_a_file_and_its_pieces(on_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = PROFILES["mixed"]
    path = tmp_path / "stream.ndjson"
    path.write_bytes(data)
    want = reference(on_backend, data)
    monkeypatch.setattr(arrow, "FILE_STEP_BYTES", 777)  # many steps read by the core, lines cut by their ends
    for threads in THREADS:
        same(arrow.tool_calls(path, threads=threads), want)
        same(arrow.read_tool_calls(path, threads=threads).drop_columns(["file"]), want)


def test_recordings_are_the_python_replays(on_backend: Any, tmp_path: Path) -> None:
    data = make_recording(traffic.frames("mixed", 400, seed=5))
    want = reference(on_backend, data)
    assert want.num_rows > 0
    for threads in THREADS:
        same(arrow.tool_calls(data, threads=threads), want)
    path = tmp_path / "session.rec"
    path.write_bytes(data)
    same(arrow.tool_calls(path), want)


@pytest.mark.parametrize("source", ["agent", "client"])
def test_source(on_backend: Any, source: str) -> None:
    data = PROFILES["mixed"]
    want = reference(on_backend, data, source)
    for threads in THREADS:
        same(arrow.tool_calls(data, source=source, threads=threads), want)
        same(table_of(on_backend, data, threads, [len(data) // 2], source), want)


def test_threads_and_source_are_checked(on_backend: Any) -> None:
    data = PROFILES["mixed"]
    for bad, error in ((0, ValueError), (1025, ValueError), (True, TypeError), ("2", TypeError), (1.0, TypeError)):
        with pytest.raises(error, match="threads must be"):
            arrow.tool_calls(data, threads=bad)
        with pytest.raises(error, match="threads must be"):
            on_backend.ToolCallColumns(threads=bad)
    with pytest.raises(ValueError, match="expected source to be 'agent', 'client' or None"):
        on_backend.ToolCallColumns(source="editor")
    with pytest.raises(ValueError, match="expected source to be 'agent', 'client' or None"):
        on_backend.ToolCallColumns().line(1, b"{}", 1.0, "editor")


# --------------------------------------------------------------------------------------------
# Generated streams: interleaved sessions, permissions asked and answered (ids shared across
# sessions, answered twice, by the wrong side), updates of unknown tool calls, content with
# numbers and escapes dumps rewrites, batches, bad lines.

SESSIONS = ["s1", "s2", "s\\u00e9"]
CALLS = ["c1", "c2", "c\\u0033", "c4"]
IDS = [1, 2, "p", -0]


def _update(sid: str, body: str) -> str:
    return '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + sid + '","update":' + body + "}}"


def _fill(template: str, **values: str) -> str:
    """``template`` with each ``<name>`` replaced by its value (the JSON's braces stay as they are)."""
    for name, value in values.items():
        template = template.replace(f"<{name}>", value)
    return template


PERMISSION = (
    '{"jsonrpc":"2.0","id":<id>,"method":"session/request_permission","params":{"sessionId":"<sid>",'
    '"toolCall":{"toolCallId":"<tcid>","title":"T"},"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}}'
)
CONTENTS = [
    "",
    ',"content":[]',
    ',"content":[{"type":"content","content":{"type":"text","text":"h\\u00e9 \\"x\\""}}]',
    ',"content":[{"type":"diff","path":"/a","oldText":null,"newText":"n","n":2.50,"m":1e16}]',
    ',"content":[{"type":"content","content":{"type":"text","text":"a"}},{"type":"terminal","terminalId":"t"}]',
    ',"content":[{"type":"content","content":{"type":"text","text":"\\ud83d\\ude00\\u2028","n":-0.0,"b":1234567890123456789012}}]',
]
ANSWERS = [
    '"result":{"outcome":{"outcome":"selected","optionId":"ok"}}',
    '"result":{"outcome":{"outcome":"cancelled"}}',
    '"error":{"code":-32000,"message":"no"}',
    '"result":{}',
]
TITLES = [
    '"Read"',
    "null",
    '{"a": 2.50, "a": 1E2}',
    '"\\u00e9\\/"',
    "[1, -0]",
    "[123456789012345678901234567890, -0.0, 1E-7, 18446744073709551615, -9223372036854775809]",
    '{"\\ud83d\\ude00": "\\u2028\\u0000\\t", "k": [true, false, {}]}',
]
BAD = ["nope", "", "  ", "{}", "[]", '{"jsonrpc":"2.0","method":"m"}\r', "\xff"]


@st.composite
def lines(draw: Any) -> str:
    sid = draw(st.sampled_from(SESSIONS))
    tcid = draw(st.sampled_from(CALLS))
    rid = json.dumps(draw(st.sampled_from(IDS)))
    kind = draw(st.integers(0, 9))
    if kind == 0:
        title = draw(st.sampled_from(TITLES))
        body = '{"sessionUpdate":"tool_call","toolCallId":"<tcid>","title":<title>,"kind":"read"}'
        return _update(sid, _fill(body, tcid=tcid, title=title))
    if kind == 1:
        status = draw(st.sampled_from(['"completed"', '"failed"', "7", "null"]))
        body = '{"sessionUpdate":"tool_call_update","toolCallId":"<tcid>","status":<status><content>}'
        return _update(sid, _fill(body, tcid=tcid, status=status, content=draw(st.sampled_from(CONTENTS))))
    if kind == 2:
        return _fill(PERMISSION, id=rid, sid=sid, tcid=tcid)
    if kind == 3:
        return _fill('{"jsonrpc":"2.0","id":<id>,<answer>}', id=rid, answer=draw(st.sampled_from(ANSWERS)))
    if kind == 4:
        body = '{"sessionUpdate":"tool_call_content_chunk","toolCallId":"<tcid>","content":{"type":"text","text":"x"}}'
        return _update(sid, _fill(body, tcid=tcid))
    if kind == 5:
        return draw(st.sampled_from(BAD))
    if kind == 6:
        inner = _update(sid, _fill('{"sessionUpdate":"tool_call","toolCallId":"<tcid>"}', tcid=tcid))
        return "[" + inner + ", 1, " + _update(sid, '{"sessionUpdate":"tool_call_update"}') + "]"
    if kind == 7:
        return _fill('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"<sid>"}}', sid=sid)
    if kind == 8:
        body = '{"sessionUpdate":"tool_call","toolCallId":"<tcid>","rawInput":{"x":[1,2]}}'
        return _update(sid, _fill(body, tcid=tcid))
    return _update(sid, '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}')


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(lines(), min_size=0, max_size=60),
    newline=st.sampled_from(["\n", "\r\n"]),
    last_newline=st.booleans(),
    cuts=st.lists(st.integers(0, 1 << 16), max_size=4),
    source=st.sampled_from([None, "agent", "client"]),
)
def test_generated_streams_are_the_python_replays(
    body: List[str], newline: str, last_newline: bool, cuts: List[int], source: Optional[str]
) -> None:
    text = newline.join(body) + (newline if last_newline else "")
    data = text.encode("utf-8", "surrogateescape").replace("\xff".encode(), b"\xff")
    for backend_id in BACKEND_IDS:
        backend = get_backend(backend_id)
        want = reference(backend, data, source)
        for threads in THREADS:
            same(table_of(backend, data, threads, [c % (len(data) + 1) for c in cuts], source), want)
