"""frames() on several threads (docs/ANALYTICS.md, "On every core"): the table of ``threads=N`` is
that of ``threads=1`` (rows, order, line numbers, error rows), whatever the input and however it
is fed; ``threads`` is checked. Each runs on both backends (the fallback cuts the same ranges and
parses them one after the other).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any, List

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fast import arrow, traffic
from acp_fast.cli import main as cli_main
from conftest import BACKEND_IDS, get_backend
from test_arrow import ODD_LINES, STREAM_TAIL, make_recording

THREADS = (2, 3, 4, 8)
LONG = b'{"jsonrpc":"2.0","method":"' + "é".encode() * 200 + b'"}'


@pytest.fixture
def on_backend(backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """acp_fast.arrow running on ``backend``."""
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_FrameDecoder", backend.FrameDecoder)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    return backend


def many_sessions() -> bytes:
    return b"".join(traffic.tool_calls(300, "mixed", seed=2, sessions=60))


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


INPUTS = {
    "mixed": traffic.generate("mixed", 500, seed=7) + STREAM_TAIL,
    "crlf": crlf(traffic.generate("v2", 300, seed=8)) + b"  \r\n\r\n" + LONG,
    "large": traffic.generate("large", 12, seed=9),
    "many_sessions": many_sessions(),
    "oversized": b"\n".join([LONG, b"{}", LONG, LONG, b'{"jsonrpc":"2.0","method":"m"}', LONG]),
    "empty": b"",
    "blank": b"\n\n \r\n\t\n",
    "one_line_no_newline": b'{"jsonrpc":"2.0","method":"m"}',
    # The first line is most of the data: the ranges that would cut it are left out.
    "line_longer_than_a_range": LONG * 50 + b"\n{}\n" + LONG + b"\n",
}


def table_of(backend: Any, data: bytes, threads: int, piece: int, max_frame_bytes: int, first_line: int = 0) -> Any:
    cols = backend.FrameColumns(first_line=first_line, max_frame_bytes=max_frame_bytes, threads=threads)
    for i in range(0, len(data), piece):
        cols.feed(data[i : i + piece])
    return arrow._table(pa, cols.finish())


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_threads_give_the_table_of_one_thread(on_backend: Any, name: str) -> None:
    data = INPUTS[name]
    for max_frame_bytes in (100, 1 << 26):
        one = arrow.frames(data, threads=1, max_frame_bytes=max_frame_bytes)
        assert one.equals(table_of(on_backend, data, 1, max(len(data), 1), max_frame_bytes))
        for threads in THREADS:
            assert arrow.frames(data, threads=threads, max_frame_bytes=max_frame_bytes).equals(one), threads
            for piece in (4096, 333):
                got = table_of(on_backend, data, threads, piece, max_frame_bytes)
                assert got.equals(one), (threads, piece, max_frame_bytes)


def test_threads_by_default_and_line_numbers_continue(on_backend: Any, tmp_path: Path) -> None:
    data = INPUTS["mixed"]
    one = arrow.frames(data, threads=1)
    assert arrow.frames(data).equals(one)  # None: every core
    assert arrow.frames(data, threads=None).equals(one)
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    assert arrow.frames(path, threads=4).equals(one)
    assert arrow.frames(data, threads=4, source="agent").equals(arrow.frames(data, threads=1, source="agent"))
    # Rows numbered after ``first_line``, as by one thread, and a range's rows after those before.
    got = table_of(on_backend, data, 4, 1000, 1 << 26, first_line=41)
    assert got.column("line").to_pylist() == [n + 41 for n in one.column("line").to_pylist()]
    lines = one.column("line").to_pylist()
    assert lines == sorted(lines) and len(set(lines)) == len(lines)


def test_recordings_and_ranges_with_threads(on_backend: Any, tmp_path: Path) -> None:
    rec = make_recording(traffic.frames("mixed", 200, seed=4) + ODD_LINES[:6])
    assert arrow.frames(rec, threads=4).equals(arrow.frames(rec, threads=1))
    data = INPUTS["mixed"]
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    whole = arrow.frames(path, threads=1)
    parts, before = [], 0
    for start, end in arrow.byte_ranges(str(path), 20000):
        parts.append(arrow.range_frames(str(path), start, end, before, threads=3))
        before += arrow.count_lines(str(path), start, end)
    assert pa.concat_tables(parts).equals(whole)


def test_read_frames_and_export_with_threads(on_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.ndjson").write_bytes(INPUTS["mixed"])
    (tmp_path / "d" / "b.ndjson").write_bytes(INPUTS["crlf"])
    (tmp_path / "d" / "c.rec").write_bytes(make_recording(traffic.frames("v2", 50, seed=1)))
    one = arrow.read_frames(tmp_path / "d", threads=1)
    assert arrow.read_frames(tmp_path / "d", threads=4).equals(one)
    outs = []
    for threads in ("1", "2", "8"):
        out = tmp_path / f"frames{threads}.parquet"
        assert cli_main(["export", str(tmp_path / "d"), "--to", str(out), "--threads", threads, "--no-progress"]) == 0
        assert pq.read_table(out).equals(one)
        outs.append(out.read_bytes())
    assert outs[1] == outs[0] and outs[2] == outs[0]
    calls = tmp_path / "calls.parquet"
    argv = ["export", str(tmp_path / "d"), "--to", str(calls), "--table", "tool_calls", "--threads", "2"]
    assert cli_main([*argv, "--no-progress"]) == 0
    assert pq.read_table(calls).equals(arrow.read_tool_calls(tmp_path / "d"))


@pytest.mark.parametrize(
    ("threads", "error", "message"),
    [
        (0, ValueError, "threads must be between 1 and 1024, found 0"),
        (-3, ValueError, "threads must be between 1 and 1024, found -3"),
        (1025, ValueError, "threads must be between 1 and 1024, found 1025"),
        (1 << 70, ValueError, f"threads must be between 1 and 1024, found {1 << 70}"),
        (2.0, TypeError, "threads must be an int or None, found float"),
        (True, TypeError, "threads must be an int or None, found bool"),
        ("2", TypeError, "threads must be an int or None, found str"),
    ],
)
def test_threads_are_checked(on_backend: Any, tmp_path: Path, threads: Any, error: type, message: str) -> None:
    with pytest.raises(error) as exc:
        on_backend.FrameColumns(threads=threads)
    assert str(exc.value) == message
    for call in (
        lambda: arrow.frames(b"{}\n", threads=threads),
        lambda: arrow.read_frames(tmp_path, threads=threads),
        lambda: arrow.range_frames(str(tmp_path / "missing"), 0, None, 0, threads=threads),
    ):
        with pytest.raises(error) as exc:
            call()
        assert str(exc.value) == message


def test_export_refuses_bad_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.ndjson"
    src.write_bytes(b"{}\n")
    for value in ("0", "-1", "x"):
        with pytest.raises(SystemExit) as exit:
            cli_main(["export", str(src), "--to", str(tmp_path / "o.parquet"), "--threads", value])
        assert exit.value.code == 2
        err = capsys.readouterr().err
        assert "--threads" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o.parquet").exists()


LINE_POOL = [*ODD_LINES[:-1], LONG, b'{"jsonrpc":"2.0","method":"m"}', *traffic.frames("mixed", 30, seed=11)]


@pytest.mark.parametrize("backend_id", BACKEND_IDS)
@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.tuples(st.sampled_from(LINE_POOL), st.sampled_from([b"\n", b"\r\n", b"\n\n"])), max_size=40),
    tail=st.sampled_from([b"", b"{}", b"nope", LONG]),
    threads=st.integers(2, 9),
    piece=st.integers(1, 4000),
    max_frame_bytes=st.sampled_from([60, 1 << 26]),
)
def test_any_stream_any_threads(
    backend_id: str, lines: List[Any], tail: bytes, threads: int, piece: int, max_frame_bytes: int
) -> None:
    backend = get_backend(backend_id)
    data = b"".join(line.rstrip(b"\n") + end for line, end in lines) + tail
    one = table_of(backend, data, 1, max(len(data), 1), max_frame_bytes)
    assert table_of(backend, data, threads, piece, max_frame_bytes).equals(one)


def test_files_read_on_threads_in_small_steps(on_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = INPUTS["mixed"] + INPUTS["crlf"]
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    one = arrow.frames(path, threads=1)
    monkeypatch.setattr(arrow, "FILE_STEP_BYTES", 1000)  # many steps, lines cut by their ends
    for threads in (2, 3, 8):
        assert arrow.frames(path, threads=threads).equals(one)
        parts, before = [], 0
        for start, end in arrow.byte_ranges(str(path), 30000):
            parts.append(arrow.range_frames(str(path), start, end, before, threads=threads))
            before += arrow.count_lines(str(path), start, end)
        assert pa.concat_tables(parts).equals(one)


def test_feed_takes_any_buffer(on_backend: Any, tmp_path: Path) -> None:
    import mmap

    data = INPUTS["mixed"]
    one = table_of(on_backend, data, 1, len(data), 1 << 26)
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        writable = bytearray(data)
        for threads in (1, 4):
            for buffer in (memoryview(data), memoryview(m), writable, memoryview(writable), memoryview(data)[::1]):
                cols = on_backend.FrameColumns(threads=threads)
                cols.feed(buffer)
                assert arrow._table(pa, cols.finish()).equals(one)


def big_stream() -> bytes:
    """Over four times the core's file pieces (1 MiB; a range is two pieces at least): the core
    reads and parses it range by range on its threads. Every kind of line, CRLF, lines over a
    small limit, no newline at the end."""
    one = INPUTS["mixed"] + INPUTS["crlf"] + b"\n" + INPUTS["oversized"] + b"\n" + INPUTS["line_longer_than_a_range"]
    return one * (5 * (1 << 20) // len(one) + 1) + b'{"jsonrpc":"2.0","method":"last"}'


@pytest.mark.parametrize("max_frame_bytes", [300, 1 << 26])
def test_feed_file_gives_the_rows_of_feed(on_backend: Any, tmp_path: Path, max_frame_bytes: int) -> None:
    data = big_stream()
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    n = len(data)
    with open(path, "rb") as f:
        for start, stop in ((0, n), (12345, n - 777), (n // 2, n // 2 + 1), (n - 40, n + 5000), (n, n + 1), (9, 9)):
            one = table_of(on_backend, data[start:stop], 1, n, max_frame_bytes, first_line=5)
            for threads in (1, 2, 3, 8):
                cols = on_backend.FrameColumns(first_line=5, max_frame_bytes=max_frame_bytes, threads=threads)
                assert cols.feed_file(f.fileno(), start, stop) == len(data[start:stop])
                assert arrow._table(pa, cols.finish()).equals(one), (start, stop, threads)


def test_files_fed_in_steps_that_cut_lines(on_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = big_stream()
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    one = table_of(on_backend, data, 1, len(data), 1 << 26)
    monkeypatch.setattr(arrow, "FILE_STEP_BYTES", (1 << 20) + 7)  # steps that end inside lines
    for threads in (1, 2, 4):
        assert arrow.frames(path, threads=threads).equals(one)
        with open(path, "rb") as f:
            cols = on_backend.FrameColumns(threads=threads)
            steps = list(arrow._feed_file(cols, f))
        assert [len(s) for s in steps[:-1]] == [(1 << 20) + 7] * (len(steps) - 1)
        assert steps[0].start == 0 and steps[-1].stop == len(data)
        assert all(a.stop == b.start for a, b in itertools.pairwise(steps))
        assert arrow._table(pa, cols.finish()).equals(one)


@pytest.mark.parametrize("kind", ["FrameColumns", "ToolCallColumns"])
def test_feed_file_refuses_a_bad_descriptor(on_backend: Any, tmp_path: Path, kind: str) -> None:
    cols = getattr(on_backend, kind)(threads=2)
    with pytest.raises(ValueError, match="fd must be an open file descriptor, found -1"):
        cols.feed_file(-1, 0, 10)
    with pytest.raises(OverflowError):
        cols.feed_file(0, -1, 10)
    path = tmp_path / "s.ndjson"
    path.write_bytes(b"{}\n")
    fd = os.open(path, os.O_RDONLY)
    os.close(fd)  # a descriptor no longer open
    with pytest.raises(OSError):
        cols.feed_file(fd, 0, 10)


def test_tool_calls_feed_file_is_feed(on_backend: Any, tmp_path: Path) -> None:
    data = big_stream() + b"\n" + many_sessions()
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    n = len(data)
    with open(path, "rb") as f:
        for start, stop in ((0, n), (0, n + 99), (4321, n - 5)):
            for threads in (1, 2, 3):
                one = on_backend.ToolCallColumns(threads=1)
                one.feed(data[start:stop])
                cols = on_backend.ToolCallColumns(threads=threads)
                assert cols.feed_file(f.fileno(), start, stop) == len(data[start:stop])
                assert arrow._table(pa, cols.finish()).equals(arrow._table(pa, one.finish())), (start, stop)
