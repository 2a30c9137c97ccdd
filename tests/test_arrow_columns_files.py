"""``columns=`` where many files are read (docs/ANALYTICS.md, "Only some columns"):
``acp_fast.arrow.range_frames``, ``read_frames``, ``iter_files`` / ``file_table``,
``acp_fast.dask.read_frames``, ``acp_fast.ray.read_frames`` and ``acp-fast export --columns``
give the full table with those columns selected (``file``, ``time`` and ``side`` included), in
the order given, on plain streams, recordings, traces and ranges of a file, and refuse what
``frames(columns=...)`` refuses with the same messages. Each runs on both backends (Ray: its
workers started with ``ACP_FAST_BACKEND``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, List

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from acp_fast import arrow, trace, traffic
from acp_fast.cli import main as cli_main
from conftest import BACKEND_IDS, get_backend
from test_arrow import STREAM_TAIL, make_recording
from test_arrow_engines import same

ROUTING = ["method", "id", "session_id", "update_kind", "tool_call_id", "status"]
SELECTIONS: List[List[str]] = [
    ROUTING,
    ["file", "line", "method"],
    ["side", "time", "raw", "file"],
    ["status"],
    ["file"],
    ["time"],
    list(reversed(arrow.READ_FRAME_COLUMNS)),
]


@pytest.fixture
def on_backend(backend_id: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """acp_fast.arrow running, in this process, on the backend ``backend_id``."""
    backend = get_backend(backend_id)
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_FrameDecoder", backend.FrameDecoder)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    return backend_id


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two plain streams (one with odd lines), a recording and a trace."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "a.ndjson").write_bytes(traffic.generate("mixed", 1500, seed=1) + STREAM_TAIL)
    (root / "b.ndjson").write_bytes(b"\n" + traffic.generate("v2", 800, seed=2))
    recording = make_recording(traffic.frames("mixed", 200, seed=3))
    (root / "c.rec").write_bytes(recording)
    with open(root / "d.jsons", "wb") as out:  # a trace holds no malformed record
        trace.from_recording([recording.replace(b'{"t":"soon","from":"agent","frame":{}}\n', b"")], out)
    return root


@pytest.fixture(scope="module")
def plain(corpus: Path) -> List[str]:
    """The plain streams of the corpus alone."""
    return [str(corpus / "a.ndjson"), str(corpus / "b.ndjson")]


def test_read_frames_selects_the_full_table(on_backend: str, corpus: Path) -> None:
    full = arrow.read_frames(corpus, threads=1)
    assert set(full.column("file").to_pylist()) == {
        str(corpus / n) for n in ("a.ndjson", "b.ndjson", "c.rec", "d.jsons")
    }
    for columns in SELECTIONS:
        for threads in (1, 3):
            got = arrow.read_frames(corpus, threads=threads, columns=columns)
            assert got.schema == full.select(columns).schema, columns
            assert got.equals(full.select(columns)), (columns, threads)
        # a tuple is taken as a list is
        assert arrow.read_frames(corpus, threads=1, columns=tuple(columns)).equals(full.select(columns))
    # iter_files / file_table: a table per file, each of the columns named
    files, schema, tables = arrow.iter_files(corpus, threads=2, columns=ROUTING + ["side"])
    assert schema.names == ROUTING + ["side"]
    for path, table in zip(files, tables):
        whole = arrow.file_table(path, "frames", arrow.schema_of("frames", True), threads=1)
        assert table.equals(whole.select(ROUTING + ["side"])), path


def test_read_frames_of_plain_streams_only(on_backend: str, plain: List[str]) -> None:
    full = arrow.read_frames(plain, threads=1)
    assert "time" not in full.column_names
    got = arrow.read_frames(plain, columns=["id", "file"])
    assert got.equals(full.select(["id", "file"]))
    # time and side have their types whatever the files, null when no file is a recording
    got = arrow.read_frames(plain, columns=["time", "line", "side"])
    assert got.column_names == ["time", "line", "side"]
    assert got.schema.field("time").type == pa.float64() and got.schema.field("side").type == pa.string()
    assert got.column("time").null_count == got.column("side").null_count == got.num_rows == full.num_rows
    assert got.column("line").equals(full.column("line"))
    # no file: the schema of the columns, no row
    empty = arrow.read_frames([], columns=["side", "method"])
    assert empty.num_rows == 0 and empty.column_names == ["side", "method"]


def test_range_frames_selects_each_range(on_backend: str, plain: List[str]) -> None:
    for path in plain:
        full = arrow.frames(path, threads=1)
        ranges = arrow.byte_ranges(path, 20_000)
        assert len(ranges) > 5
        for columns in (ROUTING, ["raw", "line"], ["bytes"]):
            for threads in (1, 3):
                parts, first = [], 0
                for start, end in ranges:
                    whole = arrow.range_frames(path, start, end, first, threads=1)
                    part = arrow.range_frames(path, start, end, first, threads=threads, columns=columns)
                    assert part.equals(whole.select(columns)), (path, start, columns, threads)
                    parts.append(part)
                    first += arrow.count_lines(path, start, end)
                assert pa.concat_tables(parts).equals(full.select(columns)), (path, columns, threads)


BAD = [
    ("method", TypeError),
    ({"method"}, TypeError),
    (["method", 1], TypeError),
    (["method", b"id"], TypeError),
    (["id", "raw", "id"], ValueError),
    (["file", "time", "file"], ValueError),
    ([], ValueError),
    ((), ValueError),
    (["methods"], ValueError),
    (["File"], ValueError),
]


@pytest.mark.parametrize(("columns", "error"), BAD)
def test_columns_are_checked_as_frames_checks_them(on_backend: str, corpus: Path, columns: Any, error: type) -> None:
    import acp_fast.dask as adask

    with pytest.raises(error) as info:
        arrow.read_frames(corpus, columns=columns)
    message = str(info.value)
    if error is TypeError or (columns and columns[0] != "file" and "unknown" not in message):
        # the same error as frames()
        with pytest.raises(error) as frames_error:
            arrow.frames(b"{}\n", columns=columns)
        assert str(frames_error.value) == message
    if "unknown" in message:
        assert (
            message == f"columns: unknown column '{columns[0]}', expected some of {', '.join(arrow.READ_FRAME_COLUMNS)}"
        )
        assert "file, line, kind, method" in message and message.endswith("raw, time, side")
    # every entry point: the same error, before any file is read
    missing = corpus / "missing" / "*.ndjson"
    calls = [
        lambda: arrow.read_frames(missing, columns=columns),
        lambda: arrow.iter_files(missing, columns=columns),
        lambda: arrow.schema_of("frames", True, columns),
        lambda: arrow.check_read_columns(columns),
        lambda: adask.read_frames(missing, columns=columns),
    ]
    for call in calls:
        with pytest.raises(error) as again:
            call()
        assert str(again.value) == message
    # range_frames takes the columns of frames(): frames()' check
    if not (isinstance(columns, list) and any(c in ("file", "time", "side") for c in columns if isinstance(c, str))):
        with pytest.raises(error) as ranged:
            arrow.range_frames(str(corpus / "a.ndjson"), 0, None, 0, columns=columns)
        with pytest.raises(error) as frames_error:
            arrow.frames(b"{}\n", columns=columns)
        assert str(ranged.value) == str(frames_error.value)


def test_columns_of_the_extra_names_belong_to_read_frames(on_backend: str, corpus: Path) -> None:
    # frames() and range_frames() have no file column: they refuse the name, as before
    for call in (
        lambda: arrow.frames(b"{}\n", columns=["file"]),
        lambda: arrow.range_frames(str(corpus / "a.ndjson"), 0, None, 0, columns=["file"]),
    ):
        with pytest.raises(ValueError, match="columns: unknown column 'file', expected some of line, kind"):
            call()
    # the tool calls table has no columns= (yet)
    with pytest.raises(ValueError, match="columns selects columns of the frames table, not of tool_calls"):
        arrow.iter_files(corpus, "tool_calls", columns=["file"])
    with pytest.raises(ValueError, match="columns selects columns of the frames table, not of tool_calls"):
        arrow.schema_of("tool_calls", False, ["session_id"])


# ---------------------------------------------------------------------------------------------
# Dask: the tasks run in this process (the synchronous scheduler), on the backend under test


def test_dask_selects_the_full_table(on_backend: str, corpus: Path) -> None:
    import acp_fast.dask as adask

    full = arrow.read_frames(corpus, threads=1)
    for columns in SELECTIONS:
        ddf = adask.read_frames(corpus, blocksize=20_000, threads=2, columns=columns)
        assert ddf.npartitions > 6
        assert list(ddf.columns) == columns
        assert list(ddf._meta.dtypes.astype(str)) == list(
            ddf.partitions[0].compute(scheduler="sync").dtypes.astype(str)
        )
        got = pa.Table.from_pandas(ddf.compute(scheduler="sync"), preserve_index=False)
        same(got, full.select(columns))
    # plain streams only: meta and partitions agree on time and side, null
    ddf = adask.read_frames(corpus / "*.ndjson", blocksize=20_000, columns=["time", "method", "side"])
    frame = ddf.compute(scheduler="sync")
    assert list(frame.columns) == ["time", "method", "side"]
    assert list(ddf._meta.dtypes.astype(str)) == list(frame.dtypes.astype(str))
    assert frame["time"].isna().all() and frame["side"].isna().all()


# ---------------------------------------------------------------------------------------------
# Ray: two CPUs, the workers on the backend under test


@pytest.fixture(scope="module", params=BACKEND_IDS)
def ray_on(request: pytest.FixtureRequest) -> Iterator[Any]:
    import ray

    get_backend(request.param)
    before = os.environ.get("ACP_FAST_BACKEND")
    os.environ["ACP_FAST_BACKEND"] = request.param  # the workers' environment: inherited
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if before is None:
            del os.environ["ACP_FAST_BACKEND"]
        else:
            os.environ["ACP_FAST_BACKEND"] = before


def test_ray_selects_the_full_table(ray_on: Any, corpus: Path) -> None:
    import acp_fast.ray as aray

    @ray_on.remote
    def worker_backend() -> str:
        import acp_fast

        return str(acp_fast.BACKEND)

    assert ray_on.get(worker_backend.remote()) == os.environ["ACP_FAST_BACKEND"]
    full = arrow.read_frames(corpus, threads=1)
    for columns in (["file", "line", *ROUTING], ["side", "raw", "file", "line"]):
        ds = aray.read_frames(corpus, blocksize=20_000, threads=1, columns=columns)
        blocks = ray_on.get(ds.to_arrow_refs())
        assert all(block.column_names == columns for block in blocks)
        assert ds.schema().names == columns
        same(pa.concat_tables(blocks), full.select(columns), "file", "line")
    with pytest.raises(ValueError, match="columns: unknown column 'nope', expected some of file, line"):
        aray.read_frames(corpus, columns=["nope"])


# ---------------------------------------------------------------------------------------------
# acp-fast export --columns


def test_export_columns_to_parquet(
    on_backend: str, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = arrow.read_frames(corpus, threads=1)
    out = tmp_path / "x.parquet"
    columns = ["method", "id", "session_id", "update_kind", "tool_call_id", "status"]
    assert cli_main(["export", str(corpus), "--to", str(out), "--columns", ",".join(columns), "--no-progress"]) == 0
    written = pq.read_table(out)
    assert written.column_names == columns
    same(written, full.select(columns))
    err = capsys.readouterr().err
    assert f": {full.num_rows} frames in " in err and "invalid" not in err  # no kind: no invalid count
    # spaces around names are dropped; kind named: invalid rows counted
    spaced = " file , kind,time,side"
    assert cli_main(["export", str(corpus), "--to", str(out), "--columns", spaced, "--force", "--no-progress"]) == 0
    written = pq.read_table(out)
    assert written.column_names == ["file", "kind", "time", "side"]
    same(written, full.select(["file", "kind", "time", "side"]))
    invalid = full.filter(pa.compute.equal(full.column("kind"), "invalid")).num_rows
    assert f"{full.num_rows} frames ({invalid} invalid)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--columns", "method,nope"], "--columns: columns: unknown column 'nope', expected some of file, line"),
        (["--columns", "id,id"], "--columns: columns: 'id' is named twice"),
        (["--columns", ""], "--columns: columns must name at least one column"),
        (["--columns", "id,"], "--columns: columns: unknown column '', expected some of file"),
        (["--columns", "id", "--table", "tool_calls"], "--columns: selects columns of the frames table"),
    ],
)
def test_export_columns_usage_errors(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: List[str], message: str
) -> None:
    out = tmp_path / "x.parquet"
    with pytest.raises(SystemExit) as info:
        cli_main(["export", str(corpus / "a.ndjson"), "--to", str(out), "--no-progress", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists()


def test_export_columns_refused_for_traces_and_otlp(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for to, message in (
        (str(tmp_path / "t.jsons"), "--columns: a trace (.jsons) holds whole records, not columns"),
        ("otlp+http://127.0.0.1:9", "--columns: --to otlp+... sends the spans of the recordings, not columns"),
    ):
        with pytest.raises(SystemExit) as info:
            cli_main(["export", str(corpus / "c.rec"), "--to", to, "--columns", "id", "--no-progress"])
        assert info.value.code == 2
        assert message in capsys.readouterr().err
