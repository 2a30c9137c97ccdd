"""frames(columns=...) (docs/ANALYTICS.md, "Only some columns"): the table of the columns named is
that of every column with those selected, on any input, any thread count and however it is fed,
from a stream, a path or a recording; ``columns`` is checked with the same errors on both
backends. Each runs on both backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pyarrow as pa
import pytest

from acp_fast import arrow, traffic
from conftest import get_backend
from test_arrow import make_recording
from test_arrow_threads import INPUTS, STREAM_TAIL

ROUTING = ["method", "id", "session_id", "update_kind", "tool_call_id", "status"]


@pytest.fixture
def on_backend(backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """acp_fast.arrow running on ``backend``."""
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_FrameDecoder", backend.FrameDecoder)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    return backend


SELECTIONS: List[List[str]] = [
    ROUTING,
    ["status", "method"],
    ["raw"],
    ["line", "error"],
    ["bytes", "kind", "id"],
    list(reversed(arrow.FRAME_COLUMNS)),
]


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_columns_select_the_table_of_every_column(on_backend: Any, name: str) -> None:
    data = INPUTS[name]
    for max_frame_bytes in (100, 1 << 26):
        full = arrow.frames(data, threads=1, max_frame_bytes=max_frame_bytes)
        for columns in SELECTIONS:
            expected = full.select(columns)
            for threads in (1, 3):
                got = arrow.frames(data, threads=threads, max_frame_bytes=max_frame_bytes, columns=columns)
                assert got.schema == expected.schema, (columns, threads)
                assert got.equals(expected), (columns, threads, max_frame_bytes)
            cols = on_backend.FrameColumns(max_frame_bytes=max_frame_bytes, threads=2, columns=tuple(columns))
            for i in range(0, len(data), 333):
                cols.feed(data[i : i + 333])
            assert arrow._table(pa, cols.finish()).equals(expected), columns


def test_columns_from_a_path_a_recording_and_a_source(on_backend: Any, tmp_path: Path) -> None:
    path = tmp_path / "s.ndjson"
    path.write_bytes(INPUTS["mixed"])
    for threads in (1, 2):
        got = arrow.frames(path, threads=threads, columns=ROUTING)
        assert got.equals(arrow.frames(path, threads=1).select(ROUTING))
    sided = arrow.frames(INPUTS["mixed"], source="agent", columns=["status"])
    assert sided.equals(arrow.frames(INPUTS["mixed"], source="agent").select(["status", "side"]))
    recording = make_recording(traffic.generate("mixed", 40, seed=3).splitlines(keepends=True))
    for columns in SELECTIONS:
        got = arrow.frames(recording, columns=columns)
        assert got.equals(arrow.frames(recording).select([*columns, "time", "side"])), columns


def test_columns_of_files_read_in_steps(on_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = INPUTS["mixed"] + INPUTS["crlf"] + INPUTS["oversized"]
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    full = arrow.frames(path, threads=1, max_frame_bytes=100)
    monkeypatch.setattr(arrow, "FILE_STEP_BYTES", 777)  # many steps read by the core, lines cut by their ends
    for threads in (1, 2, 3):
        for columns in (ROUTING, ["line", "bytes", "error"]):
            got = arrow.frames(path, threads=threads, max_frame_bytes=100, columns=columns)
            assert got.equals(full.select(columns)), (threads, columns)


def test_columns_empty_input_keeps_the_schema(on_backend: Any) -> None:
    got = arrow.frames(b"", columns=["id", "line"])
    assert got.num_rows == 0
    assert got.schema == arrow.frames(b"").select(["id", "line"]).schema


@pytest.mark.parametrize(
    ("columns", "error", "message"),
    [
        ("method", TypeError, "columns must be a list or tuple of column names, found str"),
        ({"method"}, TypeError, "columns must be a list or tuple of column names, found set"),
        (["method", 1], TypeError, "columns must be a list or tuple of column names, found int"),
        (["method", b"id"], TypeError, "columns must be a list or tuple of column names, found bytes"),
        (["methods"], ValueError, "columns: unknown column 'methods', expected some of line, kind, method, id"),
        (["time"], ValueError, "columns: unknown column 'time'"),
        (["id", "raw", "id"], ValueError, "columns: 'id' is named twice"),
        ([], ValueError, "columns must name at least one column"),
    ],
)
def test_columns_are_checked(on_backend: Any, columns: Any, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        arrow.frames(b"{}\n", columns=columns)
    assert message in str(info.value)
    with pytest.raises(error) as again:
        on_backend.FrameColumns(columns=columns)
    assert str(again.value) == str(info.value)


def test_backends_build_the_same_selected_tables() -> None:
    native, fallback = get_backend("rust"), get_backend("python")
    data = INPUTS["mixed"] + INPUTS["crlf"]
    for columns in SELECTIONS:
        tables = []
        for backend in (native, fallback):
            cols = backend.FrameColumns(first_line=10, threads=2, columns=columns)
            cols.feed(data)
            cols.line(1, b'{"jsonrpc":"2.0","method":"m"}\r\n')
            cols.too_large(2, 5)
            cols.invalid(3, "invalid_record", b"raw")
            tables.append(arrow._table(pa, cols.finish()))
        assert tables[0].schema == tables[1].schema
        assert tables[0].equals(tables[1]), columns


@pytest.mark.parametrize("threads", [1, 2])
def test_reserve_is_only_a_hint(on_backend: Any, threads: int) -> None:
    # Over 512 KB fed at once: Rust sizes its columns from a sample of the first rows, for the
    # bytes `reserve` announced (none, too few, about right, far too many) or the feed holds.
    data = (traffic.generate("mixed", 3000, seed=11) + STREAM_TAIL) * 2
    assert len(data) > 1 << 20
    for columns in (None, ROUTING, ["line", "error", "raw"]):
        expected = arrow._table(pa, feed_in(on_backend, data, threads, columns, 4096, None))
        for piece, hint in ((len(data), None), (len(data), 10), (700_000, len(data)), (len(data), 1 << 40)):
            got = arrow._table(pa, feed_in(on_backend, data, threads, columns, piece, hint))
            assert got.equals(expected), (columns, piece, hint)


def feed_in(backend: Any, data: bytes, threads: int, columns: Any, piece: int, hint: Any) -> Any:
    """``FrameColumns.finish`` of ``data`` fed in pieces of ``piece`` bytes after ``reserve(hint)``."""
    cols = backend.FrameColumns(threads=threads, columns=columns)
    if hint is not None:
        cols.reserve(hint)
    for i in range(0, len(data), piece):
        cols.feed(data[i : i + piece])
    return cols.finish()
