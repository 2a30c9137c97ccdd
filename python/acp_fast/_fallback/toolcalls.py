"""Tool calls as columns (docs/ANALYTICS.md, ``acp_fast.arrow.tool_calls``): a stream replayed
through a ``ToolCallStore`` without bounds on tool calls and sessions, the change of every message
followed by a tracker (where each tool call was first and last touched, how often, its last
permission request and when it was answered), then one row per tool call of the final state:
sessions, then tool calls, in the store's order.

Mirror of ``rust/toolcalls.rs`` and of its binding (``ToolCallColumns`` in
``rust/python/toolcalls.rs``): this class is both. Differences on purpose: Rust parses a feed's
complete lines in ranges on ``threads - 1`` threads while the calling thread applies them in
stream order; this decodes and applies them on the calling thread with this backend's
``FrameDecoder`` and ``ToolCallStore`` (``threads`` is checked, not used: decoding here holds
the GIL, so threads would not run at once; applying is in stream order either way, so the table
is the same). It follows the ``Change`` objects the store returns and builds the table with
pyarrow from the store's records (``dumps`` of each content item); Rust reads the records in
place. pyarrow is imported only by ``finish``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .._tables import TIME_COLUMNS, TOOL_CALL_COLUMNS, tool_call_fields
from ..errors import DecodeError
from .columns import FILE_PIECE_BYTES, check_threads, read_pieces
from .decoder import FrameDecoder
from .encoder import dumps
from .framing import bytes_of
from .state import ToolCallStore, _check_source

__all__ = ["ToolCallColumns"]


class _Tracker:
    """Where each tool call was touched while the store replayed the stream."""

    __slots__ = ("permission", "seen")

    def __init__(self) -> None:
        # (session, tool call) -> [first line, first time, last line, last time, frames]
        self.seen: Dict[Tuple[Any, Any], List[Any]] = {}
        # (session, tool call) -> [request id, line, time, resolved line, resolved time]
        self.permission: Dict[Tuple[Any, Any], List[Any]] = {}

    def touch(self, key: Tuple[Any, Any], line: int, time: Optional[float]) -> None:
        seen = self.seen.get(key)
        if seen is None:
            self.seen[key] = [line, time, line, time, 1]
        else:
            seen[2] = line
            seen[3] = time
            seen[4] += 1

    def change(self, change: Any, line: int, time: Optional[float]) -> None:
        """Follow one ``Change`` of the frame at ``line`` (sent at ``time``)."""
        if change.target == "tool_call":
            self.touch((change.session_id, change.id), line, time)
        elif change.target == "permission" and change.tool_call_id is not None:
            key = (change.session_id, change.tool_call_id)
            if change.action == "requested":
                self.touch(key, line, time)
                self.permission[key] = [change.id, line, time, None, None]
            else:
                p = self.permission.get(key)
                if p is not None and type(p[0]) is type(change.id) and p[0] == change.id:
                    p[3], p[4] = line, time


class ToolCallColumns:
    """A stream replayed into one row per tool call: ``feed`` a plain stream's bytes (``source``:
    who sent them), or give a recording's lines one by one (``line``); ``finish`` returns the rows
    as a ``pyarrow.Table`` (``times``: with the ``*_time`` columns)."""

    __slots__ = ("_decoder", "_source", "_store", "_threads", "_times", "_tracker")

    def __init__(self, *, threads: Optional[int] = None, source: Optional[str] = None, times: bool = False) -> None:
        self._threads = check_threads(threads)
        _check_source(source)
        self._source = source
        self._times = bool(times)
        # every tool call of the stream is a row: no bound on them nor on their sessions
        self._store = ToolCallStore(max_tool_calls=None, max_sessions=None)
        self._decoder: Any = FrameDecoder()  # type: ignore[no-untyped-call]  # signature = the native one
        self._tracker = _Tracker()

    def feed(self, data: Any) -> None:
        """Feed bytes of the stream: every line they complete is applied."""
        for item in self._decoder.feed(bytes_of(data)):
            self._event(item)

    def feed_file(self, fd: int, start: int, stop: int) -> int:
        """Feed the bytes ``start`` to ``stop`` of the open file ``fd``, as ``feed`` of those bytes
        would; returns the bytes fed (fewer only when the file ends before ``stop``)."""
        return read_pieces(fd, start, stop, FILE_PIECE_BYTES, self.feed)

    def _event(self, item: Any) -> None:
        if not isinstance(item, DecodeError):
            self._apply(item.line or 0, None, item, self._source)

    def _apply(self, line: int, time: Optional[float], frame: Any, source: Optional[str]) -> None:
        """A frame (a Message, a Batch, or a recorded line's bytes) applied as
        ``ToolCallStore.apply`` applies it; each change followed. A frame that does not apply is
        skipped."""
        try:
            result = self._store.apply(frame, source=source)
        except DecodeError:
            return
        for change in result if isinstance(result, list) else (result,):
            if change is not None and not isinstance(change, DecodeError):
                self._tracker.change(change, line, time)

    def line(self, number: int, data: Any, time: Optional[float] = None, source: Optional[str] = None) -> None:
        """A recording's line ``number`` (its bytes, line ending optional), sent at ``time`` by
        ``source``."""
        _check_source(source)
        self._apply(number, time, data.encode() if isinstance(data, str) else bytes(data), source)

    def finish(self) -> Any:
        """End of input (a last line without a newline is applied): the rows as a
        ``pyarrow.Table``."""
        import pyarrow as pa

        for item in self._decoder.finish():
            self._event(item)
        columns: Dict[str, List[Any]] = {name: [] for name in TOOL_CALL_COLUMNS + (TIME_COLUMNS if self._times else ())}
        store, tracker = self._store, self._tracker
        for sid, calls in store.snapshot().items():
            outcomes = {p["toolCallId"]: p for p in store.permissions(sid) if "toolCallId" in p}
            for tcid, record in calls.items():
                seen = tracker.seen.get((sid, tcid), [None] * 5)
                perm = tracker.permission.get((sid, tcid), [None] * 5)
                outcome = outcomes.get(tcid)
                content = record.get("content")
                items = content if isinstance(content, list) else []
                row = {
                    "session_id": sid,
                    "tool_call_id": tcid,
                    "kind": text(record.get("kind")),
                    "title": text(record.get("title")),
                    "status": text(record.get("status")),
                    "first_line": seen[0],
                    "last_line": seen[2],
                    "updates": seen[4],
                    "content_items": len(items),
                    "content_bytes": sum(len(dumps(item)) for item in items),
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
        return pa.table(columns, schema=schema(self._times))


def text(value: Any) -> Optional[str]:
    """A record's field as text: a string as it is, any other value as its JSON, None if absent."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value).decode()


def schema(times: bool) -> Any:
    """The schema of the rows (``times``: with ``TIME_COLUMNS``; the fields of
    ``acp_fast._tables.tool_call_fields``)."""
    import pyarrow as pa

    return pa.schema(tool_call_fields(pa, times))
