"""Columnar frames (docs/ANALYTICS.md, "The tables"): one row per line of a stream, the columns of
``COLUMNS`` (see ``acp_fast.arrow``), built as a ``pyarrow.Table``.

Mirror of ``rust/columns.rs`` and of its binding (``FrameColumns`` in ``rust/python/arrow.rs``):
this class is both. Differences on purpose: Rust fills Arrow buffers from the envelope's spans;
this decodes each line with ``decode`` and fills Python lists, which pyarrow turns into a table
(``finish`` returns the ``pyarrow.Table``, whose ``__arrow_c_stream__`` the native stream has
too). pyarrow is imported only by ``finish``.

``threads``: ``feed`` cuts the complete lines it is given into the same newline-aligned ranges as
Rust (``split_ranges``) and numbers each range's rows after the lines of the ranges before it, but
parses the ranges one after the other on the calling thread (on purpose: decoding here holds the
GIL, so threads would not run at once). The rows are the same as with one range. ``feed_file``
likewise reads the file in order on the calling thread and feeds its pieces (Rust reads and
parses a range of the file on each thread).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from ..batch import Batch
from ..errors import DecodeError
from .encoder import dumps
from .framing import DEFAULT_MAX_FRAME_BYTES, Framer, bytes_of
from .message import decode

__all__ = ["FrameColumns"]

T = TypeVar("T")

#: The columns of a row, in order.
COLUMNS = (
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
#: A batch is closed once its ``raw`` values reach this many bytes.
BATCH_BYTES = 1 << 30
#: The largest ``max_frame_bytes`` of a ``FrameColumns``.
MAX_LINE_BYTES = 1 << 30
#: The bytes read from a file at a time by ``feed_file``.
FILE_PIECE_BYTES = 1 << 20
#: The most threads a ``FrameColumns`` takes.
MAX_THREADS = 1024


def check_threads(value: Any) -> int:
    """A caller's ``threads``: an int (not a bool) from 1 to ``MAX_THREADS``, or None for every
    core; else TypeError / ValueError saying why not."""
    if value is None:
        return default_threads()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(threads_not_an_int(type(value).__name__))
    if not 1 <= value <= MAX_THREADS:
        raise ValueError(threads_out_of_range(value))
    return int(value)


def threads_out_of_range(found: Any) -> str:
    """Why a ``threads`` of ``found`` is refused."""
    return f"threads must be between 1 and {MAX_THREADS}, found {found}"


def threads_not_an_int(type_name: str) -> str:
    """Why a ``threads`` that is not an int (of type ``type_name``) is refused."""
    return f"threads must be an int or None, found {type_name}"


def default_threads() -> int:
    """The default ``threads``: the cores this process may use (1 when unknown)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def columns_not_names(type_name: str) -> str:
    """Why a ``columns`` holding a value of type ``type_name`` (or being one, not a list or tuple)
    is refused."""
    return f"columns must be a list or tuple of column names, found {type_name}"


def check_columns(names: Any) -> List[int]:
    """A caller's ``columns``: names of ``COLUMNS``, none twice, at least one, as indexes into
    ``COLUMNS`` in the caller's order; else ValueError saying why not."""
    return check_names(names, COLUMNS)


def check_names(names: Any, known: Sequence[str]) -> List[int]:
    """``check_columns`` against the column names ``known`` (``acp_fast.arrow.read_frames`` checks
    its ``columns`` so, against its own): names of ``known``, none twice, at least one, as indexes
    into ``known`` in the caller's order; else ValueError saying why not."""
    out: List[int] = []
    for name in names:
        if name not in known:
            raise ValueError(f"columns: unknown column '{name}', expected some of {', '.join(known)}")
        i = list(known).index(name)
        if i in out:
            raise ValueError(f"columns: '{name}' is named twice")
        out.append(i)
    if not out:
        raise ValueError("columns must name at least one column")
    return out


def split_ranges(data: bytes, parts: int) -> List[Tuple[int, int]]:
    """``data`` (complete lines: it ends with a newline) cut into at most ``parts`` ranges of about
    equal size, each ending just after a newline; no range is empty (none for empty ``data``)."""
    parts = max(parts, 1)
    out: List[Tuple[int, int]] = []
    start = 0
    for i in range(1, parts + 1):
        if start >= len(data):
            break
        target = len(data) * i // parts
        if target <= start:
            continue
        nl = data.find(b"\n", target - 1)
        end = len(data) if nl < 0 else nl + 1
        out.append((start, end))
        start = end
    if start < len(data):
        out.append((start, len(data)))
    return out


def cut_lines(at_line_start: bool, data: bytes) -> Tuple[bytes, bytes, bytes]:
    """``data`` cut as for ``split_ranges``: (the bytes that complete a partial line the framer
    holds, up to its newline: empty when ``at_line_start``; the complete lines after them; the
    bytes after the last newline, all of ``data`` when no newline ends the partial line)."""
    head = b""
    if not at_line_start:
        nl = data.find(b"\n")
        if nl < 0:
            return b"", b"", data
        head, data = data[: nl + 1], data[nl + 1 :]
    last = data.rfind(b"\n")
    if last < 0:
        return head, b"", data
    return head, data[: last + 1], data[last + 1 :]


def in_ranges(lines: bytes, ranges: List[Tuple[int, int]], f: Callable[[bytes], T]) -> List[T]:
    """``f`` of each of the ``ranges`` of ``lines``, in order (one after the other here)."""
    return [f(lines[start:end]) for start, end in ranges]


def _status_of(message: Any) -> Optional[str]:
    """``params.update.status`` when it is a string."""
    params = message.params
    update = params.get("update") if type(params) is dict else None
    status = update.get("status") if type(update) is dict else None
    return status if type(status) is str else None


class _Rows:
    """Rows being built: the open batch (one list per column) and the closed ones."""

    __slots__ = ("_batch", "_done", "_raw_bytes")

    def __init__(self) -> None:
        self._batch: Dict[str, List[Any]] = {name: [] for name in COLUMNS}
        self._done: List[Dict[str, List[Any]]] = []
        self._raw_bytes = 0

    def push_parsed(self, line: int, data: bytes, frame: Any) -> None:
        """One row for a line (``data`` without its line ending) and what it decoded to."""
        b = self._batch
        b["line"].append(line)
        if isinstance(frame, DecodeError):
            row: tuple[Any, ...] = ("invalid", None, None, None, None, None, None, frame.kind)
        elif isinstance(frame, Batch):
            row = ("batch", None, None, None, None, None, None, None)
        else:
            ident = None if frame.kind == "notification" else dumps(frame.id).decode()
            row = (
                frame.kind,
                frame.method,
                ident,
                frame.session_id,
                frame.update_kind,
                frame.tool_call_id,
                _status_of(frame),
                None,
            )
        for name, value in zip(
            ("kind", "method", "id", "session_id", "update_kind", "tool_call_id", "status", "error"), row
        ):
            b[name].append(value)
        b["bytes"].append(len(data))
        b["raw"].append(data)
        self._raw_bytes += len(data)
        self._cut()

    def frame(self, line: int, data: bytes) -> None:
        """A line of the stream, as the framer cut it."""
        self.line(line, data)

    def line(self, line: int, data: bytes) -> None:
        """A line as ``decode`` reads it: its line ending (if any) stripped, then decoded."""
        if data.endswith(b"\n"):
            data = data[:-1]
        if data.endswith(b"\r"):
            data = data[:-1]
        try:
            frame: Any = decode(data)
        except DecodeError as exc:
            frame = exc
        self.push_parsed(line, data, frame)

    def too_large(self, line: int, length: Optional[int]) -> None:
        """A line longer than the limit: ``frame_too_large``, its length when known, no bytes."""
        self.invalid(line, "frame_too_large", length, None)

    def invalid(self, line: int, error: str, length: Optional[int], raw: Optional[bytes]) -> None:
        """An invalid row with the error kind ``error`` (and the line's bytes when kept)."""
        b = self._batch
        b["line"].append(line)
        for name, value in zip(COLUMNS[1:], ("invalid", None, None, None, None, None, None, length, error, raw)):
            b[name].append(value)
        self._raw_bytes += len(raw or b"")
        self._cut()

    def _cut(self) -> None:
        if self._raw_bytes >= BATCH_BYTES:
            self._done.append(self._batch)
            self._batch = {name: [] for name in COLUMNS}
            self._raw_bytes = 0

    def append(self, batches: List[Dict[str, List[Any]]], before: int) -> None:
        """Batches built elsewhere, after the rows so far: their line numbers moved on by
        ``before``. Empty ones are left out."""
        if self._batch["line"]:
            self._done.append(self._batch)
            self._batch = {name: [] for name in COLUMNS}
            self._raw_bytes = 0
        for b in batches:
            if b["line"]:
                b["line"] = [line + before for line in b["line"]]
                self._done.append(b)

    def take(self) -> List[Dict[str, List[Any]]]:
        out, self._done = self._done, []
        if self._batch["line"] or not out:
            out.append(self._batch)
        self._batch = {name: [] for name in COLUMNS}
        self._raw_bytes = 0
        return out


def read_pieces(fd: int, start: int, stop: int, piece: int, f: Callable[[bytes], None]) -> int:
    """``f`` of each piece of at most ``piece`` bytes of ``start`` to ``stop`` of the open file
    ``fd``, read in order; returns the bytes read, fewer than ``stop - start`` only when the file
    ends first. ValueError for a negative ``fd``, OSError when a read fails."""
    if start < 0 or stop < 0:  # unsigned in the binding: PyO3's conversion refuses them so
        raise OverflowError("can't convert negative int to unsigned")
    if fd < 0:
        raise ValueError(f"fd must be an open file descriptor, found {fd}")
    at = start
    while at < stop:
        data = os.pread(fd, min(piece, stop - at), at)
        if not data:
            break
        f(data)
        at += len(data)
    return max(0, at - start)


class FrameColumns:
    """Rows of frames: ``feed`` a stream's bytes (rows numbered from ``first_line + 1``), or give
    lines one by one (``line``, ``too_large``, ``invalid``); ``finish`` returns the rows as a
    ``pyarrow.Table``."""

    __slots__ = ("_first", "_framer", "_order", "_rows", "_threads")

    def __init__(
        self,
        *,
        first_line: int = 0,
        max_frame_bytes: Optional[int] = DEFAULT_MAX_FRAME_BYTES,
        threads: Optional[int] = None,
        columns: Optional[Any] = None,
    ) -> None:
        framer = Framer(max_frame_bytes=max_frame_bytes)
        if framer.max_frame_bytes > MAX_LINE_BYTES:
            raise ValueError(
                f"max_frame_bytes of FrameColumns must be at most {MAX_LINE_BYTES}, found {framer.max_frame_bytes}"
            )
        self._threads = check_threads(threads)
        self._order = columns_arg(columns)
        self._framer: Any = framer
        self._first = first_line
        self._rows = _Rows()

    def _events(self, events: List[Any]) -> None:
        first, rows = self._first, self._rows
        for event in events:
            if isinstance(event, DecodeError):  # frame_too_large, as soon as the line passed the limit
                rows.too_large(first + (event.line or 0), None)
            else:
                rows.frame(first + event[0], event[1])

    def reserve(self, size: int) -> None:
        """About ``size`` more bytes of stream are to come: only a hint, which Rust sizes its
        columns by (the lists here grow as they come)."""

    def feed(self, data: Any) -> None:
        """Feed bytes of the stream: a row for every line they complete."""
        if self._threads > 1:
            data = self._feed_ranges(bytes_of(data))
        self._feed_here(data)

    def _feed_ranges(self, data: bytes) -> bytes:
        """The complete lines of ``data`` range by range (module docs); returns the bytes left for
        the framer."""
        framer = self._framer
        head, lines, rest = cut_lines(framer._at_line_start(), data)
        self._feed_here(head)
        ranges = split_ranges(lines, self._threads)
        if len(ranges) < 2:
            self._feed_here(lines)
            return rest
        before = self._first + framer.line
        counted = 0
        max_frame_bytes = framer.max_frame_bytes
        for batches, count in in_ranges(lines, ranges, lambda piece: self._range(piece, max_frame_bytes)):
            self._rows.append(batches, before)
            before += count
            counted += count
        framer._skip_lines(counted)
        return rest

    @staticmethod
    def _range(data: bytes, max_frame_bytes: int) -> Tuple[List[Dict[str, List[Any]]], int]:
        """The rows of ``data`` (complete lines), numbered from 1, and how many lines it held."""
        cols = FrameColumns(max_frame_bytes=max_frame_bytes, threads=1)
        cols._feed_here(data)
        lines = cols._framer.line
        cols._events(cols._framer.finish())
        return cols._rows.take(), lines

    def feed_file(self, fd: int, start: int, stop: int) -> int:
        """Feed the bytes ``start`` to ``stop`` of the open file ``fd``, as ``feed`` of those bytes
        would; returns the bytes fed (fewer only when the file ends before ``stop``). On purpose
        unlike Rust: the pieces are read in order on the calling thread and fed (``feed`` cuts
        them into the same ranges), not read and parsed range by range on threads."""
        return read_pieces(fd, start, stop, FILE_PIECE_BYTES, self.feed)

    def _feed_here(self, data: Any) -> None:
        """``feed`` on one range."""
        self._events(self._framer.feed(data))

    def line(self, number: int, data: Any) -> None:
        """One line (line ending optional, as ``decode`` takes it), numbered ``number``."""
        self._rows.line(number, bytes(data) if not isinstance(data, str) else data.encode())

    def too_large(self, number: int, length: Optional[int] = None) -> None:
        """A line over the limit, numbered ``number``, of ``length`` bytes when known."""
        self._rows.too_large(number, length)

    def invalid(self, number: int, error: str, raw: Optional[bytes] = None) -> None:
        """An invalid row numbered ``number`` with the error kind ``error`` (and the line's bytes)."""
        self._rows.invalid(number, error, None if raw is None else len(raw), raw)

    def finish(self) -> Any:
        """End of input: the rows as a ``pyarrow.Table``."""
        import pyarrow as pa

        self._events(self._framer.finish())
        sch = schema(self._order)
        names = [COLUMNS[i] for i in self._order]
        batches = [pa.record_batch([batch[name] for name in names], schema=sch) for batch in self._rows.take()]
        return pa.Table.from_batches(batches, schema=sch)

    @staticmethod
    def check_names(columns: Any, known: Sequence[str]) -> List[int]:
        """``columns`` (a list or tuple of names of ``known``) as indexes into ``known``, in its
        order, checked as ``columns=`` is (the same TypeError / ValueError and messages): the check
        of a ``columns`` naming other columns (``acp_fast.arrow.read_frames``'s)."""
        return columns_arg(columns, list(known))


def schema(order: Optional[List[int]] = None) -> Any:
    """The schema of the columns ``order`` (indexes into ``COLUMNS``; None: all): ``line`` and
    ``kind`` always set, the others nullable."""
    import pyarrow as pa

    types = [pa.int64(), pa.string(), *[pa.string()] * 6, pa.int64(), pa.string(), pa.binary()]
    order = list(range(len(COLUMNS))) if order is None else order
    return pa.schema([pa.field(COLUMNS[i], types[i], nullable=i >= 2) for i in order])


def columns_arg(columns: Any, known: Sequence[str] = COLUMNS) -> List[int]:
    """A caller's ``columns`` (a list or tuple of names of ``known``, ``COLUMNS`` for
    ``FrameColumns``; None: all) as indexes into ``known``, in the caller's order; TypeError /
    ValueError saying why not."""
    if columns is None:
        return list(range(len(known)))
    if not isinstance(columns, (list, tuple)):
        raise TypeError(columns_not_names(type(columns).__name__))
    for item in columns:
        if not isinstance(item, str):
            raise TypeError(columns_not_names(type(item).__name__))
    return check_names(columns, known)
