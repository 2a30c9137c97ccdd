"""Recorded ACP traffic as Ray Datasets (docs/ANALYTICS.md): the rows of
[`acp_fast.arrow.read_frames`][acp_fast.arrow.read_frames] / [`read_tool_calls`][acp_fast.arrow.read_tool_calls], read by Ray tasks.

* [`read_frames`][acp_fast.ray.read_frames] — one block per file, or with ``blocksize`` one per byte range of a plain
  stream, cut just after a newline. The line numbers of a range need the lines before it: Ray
  tasks first count the newlines of each range, then each range is parsed knowing its first
  line. A recording is one block.
* [`read_tool_calls`][acp_fast.ray.read_tool_calls] — one block per file, never split (a session's frames are in one file,
  and the state engine replays them in order).

Blocks are ``pyarrow`` tables. The order of rows across blocks is Ray Data's (sort by ``file``
and ``line`` / ``first_line`` for a stable order). On a cluster of a few CPUs, Ray Data's
operator reservation runs the reads one at a time at first: docs/ANALYTICS.md ("Dask and Ray")
says how to turn it off. Needs ``pip install 'acp-fast[ray]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, cast

import acp_fast

from . import arrow

if TYPE_CHECKING:
    import ray.data

__all__ = ["INSTALL", "read_frames", "read_tool_calls"]

#: The command that installs what this module needs.
INSTALL = "pip install 'acp-fast[ray]'"


def _ray() -> Any:
    arrow.require_pyarrow()
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ImportError(f"acp_fast.ray needs ray[data], which is not installed: {INSTALL}") from exc
    return ray


def _frames_block(batch: Dict[str, Any], schema: Any, max_frame_bytes: int, threads: Optional[int]) -> Any:
    """The frames of one task (a row of ``path``, ``start``, ``end``, ``first_line``)."""
    pa = arrow.require_pyarrow()
    tables = []
    columns = arrow.frame_columns_of(schema)
    for path, start, end, first in zip(batch["path"], batch["start"], batch["end"], batch["first_line"]):
        path, start, first = str(path), int(start), int(first)
        stop = None if end is None or int(end) < 0 else int(end)
        if start == 0 and stop is None:
            table = arrow.frames(path, max_frame_bytes=max_frame_bytes, threads=threads, columns=columns)
        else:
            table = arrow.range_frames(
                path, start, stop, first, max_frame_bytes=max_frame_bytes, threads=threads, columns=columns
            )
        tables.append(arrow.conform(table, path, schema))
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _tool_calls_block(batch: Dict[str, Any], schema: Any, threads: Optional[int]) -> Any:
    pa = arrow.require_pyarrow()
    tables = [arrow.file_table(str(path), "tool_calls", schema, threads=threads) for path in batch["path"]]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def read_frames(
    paths: arrow.Paths,
    *,
    blocksize: Optional[int] = None,
    max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> ray.data.Dataset:
    """A Ray Dataset of [`acp_fast.arrow.frames`][acp_fast.arrow.frames] of every file of ``paths`` (files,
    directories, globs), with a ``file`` column first: the rows of
    [`read_frames`][acp_fast.arrow.read_frames]. ``blocksize`` (bytes) splits plain streams into blocks of
    about that size; None (the default) gives one per file. ``threads``: the threads each block
    is parsed on, as by [`frames`][acp_fast.arrow.frames] (None: every core of the node; 1 when the
    tasks already fill the cores). ``columns``: the columns to build, as for
    [`acp_fast.arrow.read_frames`][acp_fast.arrow.read_frames] (``file``, ``time`` and ``side`` included; every block, and
    so the Dataset's schema, has exactly these, in the order given), with the same checks. Call
    after ``ray.init``."""
    rt = _ray()
    arrow.check_threads(threads)
    arrow.check_read_columns(columns)
    files = arrow.expand(paths)
    recordings = [arrow.is_recording_file(p) for p in files]
    schema = arrow.schema_of("frames", any(recordings), columns)
    count = rt.remote(arrow.count_lines)
    tasks: List[Dict[str, Any]] = []
    pending: List[Any] = []
    for path, recording in zip(files, recordings):
        ranges = [(0, None)] if recording else arrow.byte_ranges(path, blocksize)
        refs = [count.remote(path, start, end) for start, end in ranges[:-1]]
        pending.append((path, ranges, refs))
    for path, ranges, refs in pending:
        counts = rt.get(refs) if refs else []
        first = 0
        for i, (start, end) in enumerate(ranges):
            tasks.append({"path": path, "start": start, "end": -1 if end is None else end, "first_line": first})
            if i < len(counts):
                first += counts[i]
    ds = rt.data.from_items(tasks, override_num_blocks=max(1, len(tasks)))
    return cast(
        "ray.data.Dataset",
        ds.map_batches(
            _frames_block,
            batch_size=1,
            batch_format="numpy",
            fn_kwargs={"schema": schema, "max_frame_bytes": max_frame_bytes, "threads": threads},
        ),
    )


def read_tool_calls(paths: arrow.Paths, *, threads: Optional[int] = None) -> ray.data.Dataset:
    """A Ray Dataset of [`acp_fast.arrow.tool_calls`][acp_fast.arrow.tool_calls] of every file of ``paths``, one block
    per file (a file holds whole sessions), with a ``file`` column first: the rows of
    [`acp_fast.arrow.read_tool_calls`][acp_fast.arrow.read_tool_calls]. ``threads``: the threads each block is parsed on,
    as by [`tool_calls`][acp_fast.arrow.tool_calls] (None: every core of the node). Call after ``ray.init``."""
    rt = _ray()
    arrow.check_threads(threads)
    files = arrow.expand(paths)
    schema = arrow.schema_of("tool_calls", any(arrow.is_recording_file(p) for p in files))
    ds = rt.data.from_items([{"path": p} for p in files], override_num_blocks=max(1, len(files)))
    tables = ds.map_batches(
        _tool_calls_block, batch_size=1, batch_format="numpy", fn_kwargs={"schema": schema, "threads": threads}
    )
    return cast("ray.data.Dataset", tables)
