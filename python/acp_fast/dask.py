"""Recorded ACP traffic as Dask DataFrames (docs/ANALYTICS.md): the rows of
[`acp_fast.arrow.read_frames`][acp_fast.arrow.read_frames] / [`read_tool_calls`][acp_fast.arrow.read_tool_calls], read by the workers.

* [`read_frames`][acp_fast.dask.read_frames] — one partition per file, or with ``blocksize`` one per byte range of a
  plain stream, cut just after a newline. A range's line numbers need the lines before it: a
  first pass of tasks counts the newlines of each range (at memory speed), and each range's
  parse task takes the counts of the ranges before it. A recording is one partition (its header
  says how to read the records that follow).
* [`read_tool_calls`][acp_fast.dask.read_tool_calls] — one partition per file, never split: the state engine replays a
  session's frames in order, and a session is one connection, so its frames are in one file.

The columns are Arrow-backed (``pandas.ArrowDtype``): no Python object per row. Needs
``pip install 'acp-fast[dask]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, cast

import acp_fast

from . import arrow

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = ["INSTALL", "read_frames", "read_tool_calls"]

#: The command that installs what this module needs.
INSTALL = "pip install 'acp-fast[dask]'"


def _modules() -> Any:
    arrow.require_pyarrow()
    try:
        import dask
        import dask.dataframe
        import pandas
    except ImportError as exc:
        raise ImportError(f"acp_fast.dask needs dask[dataframe], which is not installed: {INSTALL}") from exc
    return dask, dask.dataframe, pandas


def _pandas(table: Any) -> Any:
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _frames_part(
    path: str, start: int, end: Optional[int], schema: Any, max_frame_bytes: int, threads: Optional[int], *before: int
) -> Any:
    """A partition of frames: the lines of ``path`` in ``[start, end)``, ``sum(before)`` lines
    before them (a recording: the whole file), parsed on ``threads`` threads."""
    columns = arrow.frame_columns_of(schema)
    if start == 0 and end is None:
        table = arrow.frames(path, max_frame_bytes=max_frame_bytes, threads=threads, columns=columns)
    else:
        table = arrow.range_frames(
            path, start, end, sum(before), max_frame_bytes=max_frame_bytes, threads=threads, columns=columns
        )
    return _pandas(arrow.conform(table, path, schema))


def _tool_calls_part(path: str, schema: Any, threads: Optional[int]) -> Any:
    return _pandas(arrow.file_table(path, "tool_calls", schema, threads=threads))


def read_frames(
    paths: arrow.Paths,
    *,
    blocksize: Optional[int] = None,
    max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> dd.DataFrame:
    """A Dask DataFrame of [`acp_fast.arrow.frames`][acp_fast.arrow.frames] of every file of ``paths`` (files,
    directories, globs), with a ``file`` column first: the rows of
    [`read_frames`][acp_fast.arrow.read_frames], in the same order. ``blocksize`` (bytes) splits plain
    streams into partitions of about that size; None (the default) gives one per file.
    ``threads``: the threads each partition is parsed on, as by [`frames`][acp_fast.arrow.frames]
    (None: every core of the worker; 1 when the workers already fill the cores). ``columns``: the
    columns to build, as for [`acp_fast.arrow.read_frames`][acp_fast.arrow.read_frames] (``file``, ``time`` and ``side``
    included; the DataFrame and its ``meta`` have exactly these, in the order given), with the
    same checks."""
    dask, dataframe, _pd = _modules()
    arrow.check_threads(threads)
    arrow.check_read_columns(columns)
    files = arrow.expand(paths)
    recordings = [arrow.is_recording_file(p) for p in files]
    schema = arrow.schema_of("frames", any(recordings), columns)
    parts = []
    for path, recording in zip(files, recordings):
        ranges = [(0, None)] if recording else arrow.byte_ranges(path, blocksize)
        if len(ranges) == 1:
            parts.append(dask.delayed(_frames_part)(path, 0, None, schema, max_frame_bytes, threads))
            continue
        counts: List[Any] = [dask.delayed(arrow.count_lines)(path, start, end) for start, end in ranges[:-1]]
        for i, (start, end) in enumerate(ranges):
            parts.append(dask.delayed(_frames_part)(path, start, end, schema, max_frame_bytes, threads, *counts[:i]))
    meta = _pandas(schema.empty_table())
    if not parts:
        return cast("dd.DataFrame", dataframe.from_pandas(meta, npartitions=1))
    return cast("dd.DataFrame", dataframe.from_delayed(parts, meta=meta, verify_meta=False))


def read_tool_calls(paths: arrow.Paths, *, threads: Optional[int] = None) -> dd.DataFrame:
    """A Dask DataFrame of [`acp_fast.arrow.tool_calls`][acp_fast.arrow.tool_calls] of every file of ``paths``, one
    partition per file (a file holds whole sessions), with a ``file`` column first: the rows of
    [`acp_fast.arrow.read_tool_calls`][acp_fast.arrow.read_tool_calls], in the same order. ``threads``: the threads each
    partition is parsed on, as by [`tool_calls`][acp_fast.arrow.tool_calls] (None: every core of the worker)."""
    dask, dataframe, _pd = _modules()
    arrow.check_threads(threads)
    files = arrow.expand(paths)
    schema = arrow.schema_of("tool_calls", any(arrow.is_recording_file(p) for p in files))
    meta = _pandas(schema.empty_table())
    if not files:
        return cast("dd.DataFrame", dataframe.from_pandas(meta, npartitions=1))
    parts = [dask.delayed(_tool_calls_part)(path, schema, threads) for path in files]
    return cast("dd.DataFrame", dataframe.from_delayed(parts, meta=meta, verify_meta=False))
