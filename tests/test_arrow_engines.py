"""The engines people run over the tables of acp_fast.arrow: Dask (a LocalCluster with two
workers) and Ray (two CPUs) read exactly the rows of the single-process readers; Parquet, DuckDB
and Polars take the tables and give them back; docs/ANALYTICS.md's examples run.

CI installs all of them (the ``test`` extra); nothing here is skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import acp_fast
from acp_fast import arrow, traffic
from conftest import get_backend
from test_arrow import STREAM_TAIL, make_recording

ROOT = Path(__file__).resolve().parent.parent
PYTHONPATH = str(Path(acp_fast.__file__).resolve().parent.parent)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two plain streams (one with odd lines) and a recording."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "a.ndjson").write_bytes(traffic.generate("mixed", 3000, seed=1) + STREAM_TAIL)
    (root / "b.ndjson").write_bytes(b"\n" + traffic.generate("v2", 2000, seed=2))
    (root / "c.rec").write_bytes(make_recording(traffic.frames("mixed", 400, seed=3)))
    return root


def same(got: pa.Table, expected: pa.Table, *order: str) -> None:
    """Equal tables (rows sorted by ``order`` when given), whatever the nullability flags and
    metadata a round trip through pandas or an engine left."""
    got = got.replace_schema_metadata(None).cast(expected.schema)
    if order:
        keys = [(name, "ascending") for name in order]
        got, expected = got.sort_by(keys), expected.sort_by(keys)
    assert got.num_rows == expected.num_rows
    assert got.equals(expected)


# ---------------------------------------------------------------------------------------------
# Dask


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        yield client


def test_dask_reads_the_rows_of_one_process(dask_client: Any, corpus: Path) -> None:
    import acp_fast.dask as adask

    expected = arrow.read_frames(corpus)
    for blocksize in (None, 150_000):
        ddf = adask.read_frames(corpus, blocksize=blocksize)
        ranges = [len(arrow.byte_ranges(str(corpus / name), blocksize)) for name in ("a.ndjson", "b.ndjson")]
        assert ddf.npartitions == sum(ranges) + 1  # the recording is never split
        assert ddf.npartitions == 3 or ddf.npartitions > 6
        same(pa.Table.from_pandas(ddf.compute(), preserve_index=False), expected)
    # Each partition parsed on several threads, or on one: the same rows.
    for threads in (1, 3):
        ddf = adask.read_frames(corpus, blocksize=150_000, threads=threads)
        same(pa.Table.from_pandas(ddf.compute(), preserve_index=False), expected)
    with pytest.raises(ValueError, match="threads must be between 1 and 1024, found 0"):
        adask.read_frames(corpus, threads=0)
    tool_calls = adask.read_tool_calls(str(corpus / "*"))
    assert tool_calls.npartitions == 3
    same(pa.Table.from_pandas(tool_calls.compute(), preserve_index=False), arrow.read_tool_calls(corpus))
    # Work on the workers: frames per session, without gathering the rows.
    per_session = adask.read_frames(corpus, blocksize=150_000).groupby("session_id").size().compute()
    counts = pc.value_counts(expected.column("session_id").drop_null()).to_pylist()
    assert dict(per_session) == {c["values"]: c["counts"] for c in counts}


# ---------------------------------------------------------------------------------------------
# Ray


@pytest.fixture(scope="module")
def ray_session() -> Iterator[Any]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_reads_the_rows_of_one_process(ray_session: Any, corpus: Path) -> None:
    import acp_fast.ray as aray

    expected = arrow.read_frames(corpus)
    ds = aray.read_frames(corpus, blocksize=150_000)
    same(pa.concat_tables(ray_session.get(ds.to_arrow_refs())), expected, "file", "line")
    for threads in (1, 3):
        ds = aray.read_frames(corpus, blocksize=150_000, threads=threads)
        same(pa.concat_tables(ray_session.get(ds.to_arrow_refs())), expected, "file", "line")
    with pytest.raises(TypeError, match="threads must be an int or None, found float"):
        aray.read_frames(corpus, threads=1.0)
    calls = aray.read_tool_calls(corpus)
    got = pa.concat_tables(ray_session.get(calls.to_arrow_refs()))
    same(got, arrow.read_tool_calls(corpus), "file", "session_id", "first_line")


# ---------------------------------------------------------------------------------------------
# Parquet, DuckDB, Polars


def test_parquet_duckdb_polars(corpus: Path, tmp_path: Path) -> None:
    frames = arrow.read_frames(corpus)
    out = tmp_path / "frames.parquet"
    from acp_fast.cli import main

    assert main(["export", str(corpus), "--to", str(out), "--no-progress"]) == 0
    assert pq.read_table(out).equals(frames)
    # DuckDB over the Parquet file and over the Arrow table itself.
    by_kind = {c["values"]: c["counts"] for c in pc.value_counts(frames.column("kind")).to_pylist()}
    con = duckdb.connect()
    rows = con.sql(f"SELECT kind, count(*) FROM read_parquet('{out}') GROUP BY kind").fetchall()
    assert dict(rows) == by_kind
    same(pa.table(con.sql("SELECT * FROM frames").arrow()), frames, "file", "line")
    # Polars from the Parquet file, from the table, and from the native stream (PyCapsule).
    df = pl.read_parquet(out)
    same(df.to_arrow(), frames)
    same(pl.from_arrow(frames).to_arrow(), frames)  # type: ignore[union-attr]
    data = (corpus / "a.ndjson").read_bytes()
    cols = get_backend("rust").FrameColumns()
    cols.feed(data)
    same(pl.DataFrame(cols.finish()).to_arrow(), arrow.frames(data))
    invalid = df.filter(pl.col("kind") == "invalid").height
    assert invalid == by_kind["invalid"]


def test_analytics_examples_run(tmp_path: Path) -> None:
    """docs/ANALYTICS.md's ```python blocks, run in order in an empty folder."""
    text = (ROOT / "docs" / "ANALYTICS.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python[ \t]*\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 5
    env = dict(os.environ, PYTHONPATH=PYTHONPATH + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "failures per tool kind" in done.stdout
