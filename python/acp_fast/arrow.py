"""Recorded ACP traffic as Arrow tables (docs/ANALYTICS.md).

* [`frames`][acp_fast.arrow.frames] — one row per line of an NDJSON stream or a proxy recording, built by the
  backend's ``FrameColumns`` (in Rust: straight into Arrow buffers, no Python object per frame,
  handed over through the Arrow PyCapsule interface).
* [`tool_calls`][acp_fast.arrow.tool_calls] — one row per tool call, from a replay through the state engine of
  [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore], built by the backend's ``ToolCallColumns`` (in Rust: the lines
  parsed on several threads, applied in stream order, no Python object per frame).
* [`read_frames`][acp_fast.arrow.read_frames] / [`read_tool_calls`][acp_fast.arrow.read_tool_calls] — many files (paths, globs, directories) as one
  table with a ``file`` column; ``acp_fast.dask`` and ``acp_fast.ray`` read the same rows on a
  cluster, and ``acp-fast export`` writes them to Parquet.

pyarrow is imported only when one of these runs; without it they raise ImportError naming
``pip install 'acp-fast[arrow]'``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Iterator,
    List,
    Optional,
    Protocol,
    Sequence,
    Sized,
    Tuple,
    TypeVar,
    Union,
)

import acp_fast

from . import _inputs, trace
from ._inputs import open_file
from ._tables import TIME_COLUMNS as TIME_COLUMNS  # acp_fast.arrow.TIME_COLUMNS, as before
from ._tables import TOOL_CALL_COLUMNS, tool_call_fields
from .recording import SOURCES, RecordingError, is_recording, parse_lines, record_limit

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "FRAME_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "INSTALL",
    "frames",
    "tool_calls",
    "read_frames",
    "read_tool_calls",
    "spans",
    "expand",
]

#: What to install for this module.
INSTALL = "pip install 'acp-fast[arrow]'"
#: The columns of [`frames`][acp_fast.arrow.frames] (a recording adds ``time`` and ``side``; ``source=`` adds ``side``).
FRAME_COLUMNS = (
    "line",
    "kind",
    "method",
    "id",
    "session_id",
    "update_kind",
    "tool_call_id",
    "status",
    "bytes",
    "error",
    "raw",
)
#: The columns ``columns=`` may name where many files are read ([`read_frames`][acp_fast.arrow.read_frames], ``acp_fast.dask``,
#: ``acp_fast.ray``, ``acp-fast export``): ``file``, those of ``FRAME_COLUMNS``, ``time`` and ``side``.
READ_FRAME_COLUMNS = ("file", *FRAME_COLUMNS, "time", "side")

# Files read in Python (recordings, traces) are read in pieces this large.
CHUNK_BYTES = 256 << 20
# A plain stream's file is fed to the core this many bytes at a time (`_feed_file`), each step
# read by the core (`FrameColumns.feed_file`: on every thread; `ToolCallColumns.feed_file`); a
# progress display moves on after each.
FILE_STEP_BYTES = 256 << 20
Data = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]
PathArg = Union[str, "os.PathLike[str]"]
Paths = Union[PathArg, Iterable[PathArg]]
# The backend's API, typed here (the fallback's is untyped: its signatures are the native ones).
_FrameColumns: Any = acp_fast._backend.FrameColumns
_FrameDecoder: Callable[..., Any] = acp_fast.FrameDecoder
_ToolCallStore: Callable[..., Any] = acp_fast.ToolCallStore
_ToolCallColumns: Callable[..., Any] = acp_fast._backend.ToolCallColumns
#: ``"client"`` / ``"agent"`` (the state engine's ``source``) -> ``side`` (a recording's ``from``).
SIDE_OF = {source: side for side, source in SOURCES.items()}
NO_SOURCE = "a recording says who sent each line: expected source=None for a recording"


def require_pyarrow() -> Any:
    """The ``pyarrow`` module, or ImportError saying what to install."""
    try:
        import pyarrow
    except ImportError as exc:
        raise ImportError(f"acp_fast.arrow needs pyarrow, which is not installed: {INSTALL}") from exc
    return pyarrow


# ---------------------------------------------------------------------------------------------
# Input


#: Reads the records of a recording or of a trace (``acp_fast.recording.parse_lines`` or
#: ``acp_fast.trace.parse_lines``).
Records = Callable[[Iterable[bytes], int], Iterator[Tuple[int, Any]]]


def _records_of(head: bytes) -> Optional[Records]:
    """How to read the records of the input starting with ``head``: a recording's, a trace's
    (a trace is read as the recording it stands for), or None for a plain stream."""
    if is_recording(head):
        return parse_lines
    if trace.is_trace(head):
        return trace.parse_lines
    return None


@dataclass
class _Input:
    """A stream, a recording or a trace as byte chunks (``records``: how to read a recording's
    or a trace's records; None for a plain stream)."""

    records: Optional[Records]
    chunks: Iterator[bytes]
    stream: Optional[IO[bytes]] = None

    @property
    def recording(self) -> bool:
        """A recording or a trace: its lines are records, with their time and side."""
        return self.records is not None

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def _read(stream: IO[bytes], start: int = 0, end: Optional[int] = None) -> Iterator[bytes]:
    """Chunks of ``stream`` from ``start`` to ``end`` (EOF when None)."""
    stream.seek(start)
    left = None if end is None else end - start
    while left is None or left > 0:
        chunk = stream.read(CHUNK_BYTES if left is None else min(CHUNK_BYTES, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


def _feed_file(
    cols: Any, stream: IO[bytes], start: int = 0, end: Optional[int] = None, *, reserve: bool = False
) -> Iterator[range]:
    """Feed the bytes of the plain stream's file ``stream`` from ``start`` to ``end`` (EOF when
    None) to ``cols`` (a ``FrameColumns`` or a ``ToolCallColumns``; ``reserve``: tell it how
    many bytes are to come), read by the core (``feed_file``) ``FILE_STEP_BYTES`` at a time;
    yields each byte range fed (a progress display counts them). Bytes added to the file after it
    was measured are read as `_read` reads them; if it shrinks, the rows are those of the bytes
    there were."""
    fd = stream.fileno()
    size = os.fstat(fd).st_size
    stop = size if end is None else min(end, size)
    if reserve:
        cols.reserve(max(0, stop - start))  # only a hint: the columns sized at once
    at = start
    while at < stop:
        step = min(stop, at + FILE_STEP_BYTES)
        fed = cols.feed_file(fd, at, step)
        yield range(at, at + fed)
        at += fed
        if at < step:  # the file ended early
            break
    if end is None or at < end:
        for chunk in _read(stream, at, end):
            cols.feed(chunk)
            yield range(at, at + len(chunk))
            at += len(chunk)


_Read = TypeVar("_Read", bound=Sized)


class Wrap(Protocol):
    """A progress display's ``wrap``: it hands on what is read as it is read (byte chunks, or
    the byte ranges `_feed_file` fed), counting them by their ``len``."""

    def __call__(self, items: Iterable[_Read], /) -> Iterator[_Read]: ...


def _open(data: Data, wrap: Optional[Wrap] = None) -> _Input:
    """``data`` as chunks (``wrap``: a progress display's ``wrap``). For a plain stream's file
    ``stream`` is set, and the core reads it (`_feed_file`): its chunks are not read."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        chunks: Iterator[bytes] = iter([data])
        return _Input(_records_of(data[:64]), wrap(chunks) if wrap else chunks)
    if isinstance(data, (str, os.PathLike)):
        stream = open_file(os.fspath(data))  # closed by _Input.close
        records = _records_of(stream.read(64))
        chunks = _read(stream)
        return _Input(records, wrap(chunks) if wrap else chunks, stream)
    raise TypeError(f"expected bytes or a path, found {type(data).__name__}")


def expand(paths: Paths, *, on_duplicate: Optional[Callable[[str, str], None]] = None) -> List[str]:
    """Files named by ``paths``: each a file, a directory (its files, recursively, sorted; hidden
    ones skipped) or a glob pattern (``**`` included; it does not descend through symbolic links
    to directories, so a link loop gives nothing twice). FileNotFoundError for a name or pattern
    that gives no file; an OSError (``NotRegularFileError``) for one that is not a regular file (a
    FIFO, a device, a socket: reading it could block or never end). A file named twice (a
    second path, a hard or symbolic link to it) is read once, where it first came;
    ``on_duplicate(skipped, first)`` is told of each one skipped."""
    items: List[PathArg] = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    names: List[str] = []
    for item in items:
        name = os.fspath(item)
        if not isinstance(name, str):
            raise TypeError(f"expected a path, found {type(item).__name__}")
        names.append(name)
    return _inputs.expand(names, on_duplicate)


def is_recording_file(path: str) -> bool:
    """Whether the file ``path`` holds a recording (it starts with the recording header) or a
    trace (`acp_fast.trace`: it starts with an event), read as the recording it stands for."""
    with open_file(path) as f:
        return _records_of(f.read(64)) is not None


# ---------------------------------------------------------------------------------------------
# Frames


def _table(pa: Any, result: Any) -> Any:
    """A ``FrameColumns.finish()`` result as a ``pyarrow.Table`` (the native one is read through
    its ``__arrow_c_stream__``, without a copy)."""
    if isinstance(result, pa.Table):
        return result
    return pa.RecordBatchReader.from_stream(result).read_all()


def check_threads(threads: Any) -> None:
    """TypeError / ValueError for a ``threads`` that ``frames`` refuses: the backend's own check
    and message."""
    _FrameColumns(threads=threads)


def _check_source(source: Any) -> None:
    """ValueError for a ``source`` that is not ``"agent"``, ``"client"`` or None: the backend's own
    check and message (a fresh store's ``finish`` reads ``source`` and does nothing else)."""
    if source is not None:
        _ToolCallStore().finish(changes=False, source=source)


def _frame_schema() -> Any:
    """The schema of the backend's ``FrameColumns`` (that of its table of no line)."""
    return _table(require_pyarrow(), _FrameColumns().finish()).schema


def frames_schema(*, recording: bool = False, side: bool = False, file: bool = False) -> pa.Schema:
    """The schema of [`frames`][acp_fast.arrow.frames] (``recording``: with ``time`` and ``side``; ``side``: with
    ``side``; ``file``: with ``file`` first, as [`read_frames`][acp_fast.arrow.read_frames] gives)."""
    pa = require_pyarrow()
    schema = _frame_schema()
    if recording:
        schema = schema.append(pa.field("time", pa.float64())).append(pa.field("side", pa.string()))
    elif side:
        schema = schema.append(pa.field("side", pa.string()))
    if file:
        schema = schema.insert(0, pa.field("file", pa.string(), nullable=False))
    return schema


def frames(
    data: Data,
    *,
    source: Optional[str] = None,
    max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> pa.Table:
    """One row per line of ``data``, an NDJSON stream or a proxy recording (its bytes, or a path;
    a ``str`` is a path): the columns of ``FRAME_COLUMNS``, null where a field is absent.

    A plain stream gives a row per non-blank line, numbered as [`acp_fast.FrameDecoder`][acp_fast.FrameDecoder]
    numbers them; ``source`` (``"agent"`` or ``"client"``: who sent it) adds a ``side`` column
    (``"agent"`` or ``"editor"``). A recording gives a row per recorded line, numbered by its line
    in the recording, with ``time`` (unix seconds) and ``side`` (``"editor"`` or ``"agent"``); a
    malformed record is an ``invalid`` row with the error ``invalid_record``. A trace
    (`acp_fast.trace`) reads as the recording it stands for (``time``: its ``ts``). Lines over
    ``max_frame_bytes`` (at most 1 GiB here) are ``invalid`` rows with ``frame_too_large``.

    ``threads`` (None: every core the process may use; 1: the calling thread only): a plain
    stream is cut into that many newline-aligned byte ranges, parsed at once without the GIL;
    the table is the same whatever the number (rows, order, line numbers; only its record
    batches are cut differently). A recording or a trace is read on one thread. TypeError for a
    ``threads`` that is not an int, ValueError for one below 1 or above 1024.

    ``columns`` (a list or tuple of names of ``FRAME_COLUMNS``; None: all of them): the table has
    only these, in that order, and the others are not built at all (without ``raw`` the lines'
    bytes are not copied): the table is ``frames(data).select(columns)``, with ``time`` and
    ``side`` still added after them for a recording or a ``source``. Every line is still parsed
    and checked in full (a line that is not a valid message has null routing columns, as
    always). TypeError for a ``columns`` that is not a list or tuple of str, ValueError for an
    unknown name, a name given twice or no name."""
    return _frames(data, source, max_frame_bytes, threads=threads, columns=columns)


def _frames(
    data: Data,
    source: Optional[str],
    max_frame_bytes: int,
    wrap: Optional[Wrap] = None,
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> Any:
    pa = require_pyarrow()
    _check_source(source)
    # the arguments are checked before any input is read
    cols = _FrameColumns(max_frame_bytes=max_frame_bytes, threads=threads, columns=columns)
    inp = _open(data, wrap)
    try:
        if inp.records is not None:
            if source is not None:
                raise ValueError(NO_SOURCE)
            return _recording_frames(pa, inp.records, inp.chunks, cols, max_frame_bytes)
        if inp.stream is not None:  # a plain stream's file: read by the core
            steps = _feed_file(cols, inp.stream, reserve=True)
            for _ in wrap(steps) if wrap else steps:
                pass
        else:
            for chunk in inp.chunks:
                cols.feed(chunk)
        table = _table(pa, cols.finish())
    finally:
        inp.close()
    if source is not None:
        table = table.append_column(pa.field("side", pa.string()), pa.repeat(pa.scalar(SIDE_OF[source]), len(table)))
    return table


def _recording_frames(pa: Any, records: Records, chunks: Iterable[bytes], cols: Any, max_frame_bytes: int) -> Any:
    times: List[Optional[float]] = []
    sides: List[Optional[str]] = []
    for number, record in records(chunks, record_limit(max_frame_bytes)):
        if record is None:
            continue
        if isinstance(record, RecordingError):
            cols.invalid(number, "invalid_record")
            times.append(None)
            sides.append(None)
            continue
        if record.kind != "line" or "withheld" in record.value:  # a withheld line has no bytes: no row
            continue
        if record.payload is None:
            cols.too_large(number, record.value["too_large"])
        else:
            cols.line(number, record.data)
        times.append(float(record.value["t"]))
        sides.append(record.direction)
    table = _table(pa, cols.finish())
    table = table.append_column(pa.field("time", pa.float64()), pa.array(times, pa.float64()))
    return table.append_column(pa.field("side", pa.string()), pa.array(sides, pa.string()))


def range_frames(
    path: str,
    start: int,
    end: Optional[int],
    first_line: int,
    *,
    max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> pa.Table:
    """[`frames`][acp_fast.arrow.frames] of the lines of a plain stream's file that start in ``[start, end)`` (both
    just after a newline, or the ends of the file), ``first_line`` lines coming before them,
    parsed on ``threads`` threads, of the ``columns`` named (as for [`frames`][acp_fast.arrow.frames], with the same
    checks)."""
    pa = require_pyarrow()
    cols = _FrameColumns(first_line=first_line, max_frame_bytes=max_frame_bytes, threads=threads, columns=columns)
    with open_file(path) as stream:
        for _ in _feed_file(cols, stream, start, end, reserve=True):
            pass
    return _table(pa, cols.finish())


def byte_ranges(path: str, blocksize: Optional[int]) -> List[Tuple[int, Optional[int]]]:
    """``[start, end)`` ranges of about ``blocksize`` bytes covering the file, each cut just after
    a newline (one range, ``(0, None)``, when ``blocksize`` is None)."""
    if blocksize is None:
        return [(0, None)]
    if blocksize < 1:
        raise ValueError(f"blocksize must be a positive number of bytes, found {blocksize}")
    size = os.path.getsize(path)
    cuts = [0]
    with open_file(path) as stream:
        at = blocksize
        while at < size:
            stream.seek(at - 1)
            while True:  # the cut: just after the next newline at or after at - 1
                piece = stream.read(1 << 16)
                if not piece:
                    at = size
                    break
                nl = piece.find(b"\n")
                if nl >= 0:
                    at = stream.tell() - len(piece) + nl + 1
                    break
            if at < size:
                cuts.append(at)
            at += blocksize
    return [(start, end) for start, end in zip(cuts, [*cuts[1:], None])]


def count_lines(path: str, start: int, end: Optional[int]) -> int:
    """Newlines in ``[start, end)`` of the file: the lines a range holds, blank ones included."""
    with open_file(path) as stream:
        return sum(chunk.count(b"\n") for chunk in _read(stream, start, end))


# ---------------------------------------------------------------------------------------------
# Tool calls


def tool_calls_schema(*, recording: bool = False, file: bool = False) -> pa.Schema:
    """The schema of [`tool_calls`][acp_fast.arrow.tool_calls] (``recording``: with the ``*_time`` columns; ``file``:
    with ``file`` first)."""
    pa = require_pyarrow()
    fields = tool_call_fields(pa, recording)
    schema = pa.schema(fields)
    if file:
        schema = schema.insert(0, pa.field("file", pa.string(), nullable=False))
    return schema


def tool_calls(data: Data, *, source: Optional[str] = None, threads: Optional[int] = None) -> pa.Table:
    """One row per tool call of ``data`` (an NDJSON stream, a recording or a trace, as for [`frames`][acp_fast.arrow.frames]),
    replayed through a new [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore] in stream order, in the store's order
    (sessions, then tool calls, first seen first): ``kind``, ``title`` and ``status`` of the final
    state (a value that is not a string as its JSON text), ``first_line`` / ``last_line`` (the
    frames that created it and last changed it, a permission request carrying it included),
    ``updates`` (those frames), ``content_items`` and ``content_bytes`` (the JSON length of the
    items, added up), and its last permission request: ``permission_outcome`` (``pending``,
    ``selected``, ...), ``permission_approved``, ``permission_line``,
    ``permission_resolved_line``. A recording adds the times of those lines (``first_time``,
    ``last_time``, ``permission_time``, ``permission_resolved_time``) and is replayed as
    ``acp-fast inspect`` does (the editor's frames as ``source="client"``). ``source`` is the
    state engine's for a plain stream (who sent it). Lines that do not decode or apply are
    skipped.

    The backend's ``ToolCallColumns`` does the replay (in Rust: no Python object per frame).
    ``threads`` (None: every core the process may use; checked as for [`frames`][acp_fast.arrow.frames]): a plain
    stream's lines are cut into newline-aligned byte ranges parsed on ``threads - 1`` threads
    without the GIL, while the calling thread applies them to the store one after the other in
    stream order (they must be: a permission response names only the request's id, not its
    session), so the table is the same whatever the number. A recording or a trace is read record by record in Python, each line parsed and
    applied in Rust, on one thread."""
    return _tool_calls(data, source, threads=threads)


def _tool_calls(data: Data, source: Optional[str], wrap: Optional[Wrap] = None, threads: Optional[int] = None) -> Any:
    pa = require_pyarrow()
    _check_source(source)
    check_threads(threads)
    inp = _open(data, wrap)
    try:
        if inp.records is not None:
            if source is not None:
                raise ValueError(NO_SOURCE)
            cols = _ToolCallColumns(threads=threads, times=True)
            for number, record in inp.records(inp.chunks, record_limit(acp_fast.DEFAULT_MAX_FRAME_BYTES)):
                if record is None or isinstance(record, RecordingError) or record.kind != "line":
                    continue
                if record.data is not None:
                    cols.line(number, record.data, float(record.value["t"]), record.source)
        else:
            cols = _ToolCallColumns(threads=threads, source=source)
            if inp.stream is not None:  # a plain stream's file: read by the core
                steps = _feed_file(cols, inp.stream)
                for _ in wrap(steps) if wrap else steps:
                    pass
            else:
                for chunk in inp.chunks:
                    cols.feed(chunk)
    finally:
        inp.close()
    return _table(pa, cols.finish())


def spans(path: Data, *, max_open: Optional[int] = None) -> pa.Table:
    """One row per OpenTelemetry span of a recording (its bytes or a path), as `acp-fast proxy
    --otlp` sends them (`acp_fast.otel`, the same mapping; no OpenTelemetry package needed): the
    columns of `acp_fast.otel.SPAN_COLUMNS` (`attributes` as JSON text), in the order the spans
    ended. `max_open`: the bound on spans open at once (None: none)."""
    from . import otel

    pa = require_pyarrow()
    rows = otel.span_rows(path if isinstance(path, (str, os.PathLike)) else bytes(path), max_open=max_open)
    types = {"start_ns": pa.int64(), "end_ns": pa.int64()}
    schema = pa.schema(
        [
            pa.field(c, types.get(c, pa.string()), nullable=c in ("parent_span_id", "status_message"))
            for c in otel.SPAN_COLUMNS
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


# ---------------------------------------------------------------------------------------------
# Many files


TABLES = ("frames", "tool_calls")


def check_read_columns(columns: Any, table: str = "frames") -> Optional[List[str]]:
    """The names of ``columns`` (None: all columns) where many files are read: names of
    ``READ_FRAME_COLUMNS`` (the frames table only), none twice, at least one. TypeError for a
    ``columns`` that is not a list or tuple of str (the backend's check and message, as for
    [`frames`][acp_fast.arrow.frames]), ValueError for an unknown name (saying which names there are), a name given
    twice, no name, or a ``table`` other than ``"frames"`` (the same messages as [`frames`][acp_fast.arrow.frames]')."""
    if columns is None:
        return None
    if not isinstance(columns, (list, tuple)) or not all(isinstance(name, str) for name in columns):
        _FrameColumns.check_names(columns, READ_FRAME_COLUMNS)  # the backend's TypeError
    if table != "frames":
        raise ValueError(f"columns selects columns of the frames table, not of {table}")
    # the backend's ValueError and message for an unknown name, a name twice, or none
    return [READ_FRAME_COLUMNS[i] for i in _FrameColumns.check_names(columns, READ_FRAME_COLUMNS)]


def schema_of(table: str, recording: bool, columns: Optional[Sequence[str]] = None) -> pa.Schema:
    """The schema of [`read_frames`][acp_fast.arrow.read_frames] / [`read_tool_calls`][acp_fast.arrow.read_tool_calls] (``table``) of files of which
    some are recordings (``recording``) or none: ``file``, then the table's columns; with
    ``columns`` (checked by [`check_read_columns`][acp_fast.arrow.check_read_columns]), those columns in that order
    (``time`` and ``side`` with their types whether or not a file is a recording)."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {list(TABLES)}, found {table!r}")
    names = check_read_columns(columns, table)
    if table == "tool_calls":
        return tool_calls_schema(recording=recording, file=True)
    if names is None:
        return frames_schema(recording=recording, file=True)
    full = frames_schema(recording=True, file=True)
    return require_pyarrow().schema([full.field(name) for name in names])


def frame_columns_of(schema: pa.Schema) -> Optional[List[str]]:
    """The ``columns`` of [`frames`][acp_fast.arrow.frames] that build a file's rows in ``schema`` (one of
    [`schema_of`][acp_fast.arrow.schema_of]'s frames schemas; None: all of them; ``line`` alone when it names none,
    only ``file``, ``time`` or ``side``)."""
    names = [name for name in schema.names if name in FRAME_COLUMNS]
    if names == list(FRAME_COLUMNS):
        return None
    return names or ["line"]


def conform(table: pa.Table, file: str, schema: pa.Schema) -> pa.Table:
    """``table`` of the file ``file`` in ``schema``: the ``file`` column first, and null columns
    for those it lacks (``time`` and ``side`` of a plain stream among recordings)."""
    pa = require_pyarrow()
    n = len(table)
    columns = []
    for field in schema:
        if field.name == "file":
            columns.append(pa.repeat(pa.scalar(file), n))
        elif field.name in table.column_names:
            columns.append(table.column(field.name))
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def file_table(
    path: str, table: str, schema: pa.Schema, *, wrap: Optional[Wrap] = None, threads: Optional[int] = None
) -> pa.Table:
    """One file's [`frames`][acp_fast.arrow.frames] or [`tool_calls`][acp_fast.arrow.tool_calls], in ``schema`` (see [`conform`][acp_fast.arrow.conform]; a
    frames schema of only some columns, from [`schema_of`][acp_fast.arrow.schema_of], builds only those);
    ``wrap`` sees the file's chunks as they are read (a progress display); ``threads`` as for
    [`frames`][acp_fast.arrow.frames] / [`tool_calls`][acp_fast.arrow.tool_calls]."""
    if table == "frames":
        result = _frames(path, None, acp_fast.DEFAULT_MAX_FRAME_BYTES, wrap, threads, frame_columns_of(schema))
    else:
        result = _tool_calls(path, None, wrap, threads)
    return conform(result, path, schema)


def iter_files(
    paths: Paths, table: str = "frames", *, threads: Optional[int] = None, columns: Optional[Sequence[str]] = None
) -> Tuple[List[str], pa.Schema, Iterator[pa.Table]]:
    """(files, schema, a table per file): what [`read_frames`][acp_fast.arrow.read_frames] and ``acp-fast export`` read
    (``columns``: as for [`read_frames`][acp_fast.arrow.read_frames], the frames table only)."""
    check_threads(threads)
    check_read_columns(columns, table)
    files = expand(paths)
    schema = schema_of(table, any(is_recording_file(p) for p in files), columns)
    return files, schema, (file_table(p, table, schema, threads=threads) for p in files)


def read_frames(paths: Paths, *, threads: Optional[int] = None, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """[`frames`][acp_fast.arrow.frames] of every file of ``paths`` (files, directories, globs; see [`expand`][acp_fast.arrow.expand]),
    in order, as one table with a ``file`` column first. When some files are recordings, the
    rows of plain streams have null ``time`` and ``side``. Each file is parsed on ``threads``
    threads, as by [`frames`][acp_fast.arrow.frames].

    ``columns`` (None: all): names of ``READ_FRAME_COLUMNS`` — ``file``, those of
    ``FRAME_COLUMNS``, ``time`` and ``side``. The table has exactly these, in the order given,
    whatever the files (``file`` only if named; ``time`` and ``side`` are null for a plain
    stream's rows, and for every row when no file is a recording): it is
    ``read_frames(paths).select(columns)`` whenever that table has them. Only these columns are
    built, as by [`frames`][acp_fast.arrow.frames]. Checked before any file is read, as [`frames`][acp_fast.arrow.frames] checks it:
    TypeError for a ``columns`` that is not a list or tuple of str, ValueError for an unknown
    name (the message names the columns there are), a name given twice or no name."""
    pa = require_pyarrow()
    _files, schema, tables = iter_files(paths, "frames", threads=threads, columns=columns)
    return pa.concat_tables(list(tables)) if _files else schema.empty_table()


def read_tool_calls(paths: Paths, *, threads: Optional[int] = None) -> pa.Table:
    """[`tool_calls`][acp_fast.arrow.tool_calls] of every file of ``paths``, one file at a time (a session is one
    connection: its frames are in one file), as one table with a ``file`` column first. Each file
    is parsed on ``threads`` threads, as by [`tool_calls`][acp_fast.arrow.tool_calls]."""
    pa = require_pyarrow()
    _files, schema, tables = iter_files(paths, "tool_calls", threads=threads)
    return pa.concat_tables(list(tables)) if _files else schema.empty_table()
