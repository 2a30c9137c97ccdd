"""Recordings of ACP traffic, as written by ``acp-fast proxy --record FILE``: the one place for
the format, its writer and its reader (``read`` here; ``acp-fast validate`` and ``inspect`` check
and replay a recording with ``parse_lines``).

A recording is NDJSON, one record per line (docs/CLI.md, "Recording format"):

* a header: ``{"acp-fast-recording":1,"t":<unix seconds>,"argv":[...],"version":"..."}``;
* one record per line seen on either side, in the order the proxy read them:
  ``{"t":<unix seconds>,"from":"editor"|"agent",<payload>,<flags>}``, where the payload is
  ``"frame":<the line, embedded verbatim>`` (the line is valid JSON), ``"text":"..."`` (valid
  UTF-8 but not JSON) or ``"base64":"..."`` (not UTF-8), and the flags, present only when not
  the default, are ``"crlf":true`` (the line ended in ``\\r\\n``), ``"eol":false`` (a last line
  without a newline), ``"action"`` (what the proxy did instead of forwarding the line as it came:
  ``"diverted"``, ``"dropped"``, ``"answered"``, ``"replaced"`` by a middleware, or
  ``"injected"``: a frame the proxy's middleware wrote to the other side on behalf of this side,
  never read from it, or under ``--coalesce`` a merged update, reason ``coalesced``; or
  ``"coalesced"``: held by ``--coalesce``, its effect forwarded in a later ``injected`` line),
  ``"reason"`` (why a middleware dropped or replaced it),
  ``"too_large":<bytes>`` (a line over the frame limit: no payload, never forwarded) and
  ``"withheld":<bytes>`` (a line a middleware dropped or replaced and asked to keep out of the
  recording, ``Context.withhold``: no payload, only its length);
* a footer: ``{"t":<unix seconds>,"event":"exit","status":<int>}``.

Because a valid frame is embedded byte for byte, [`extract`][acp_fast.recording.extract] gives back exactly the bytes
one side sent (``"too_large"`` and ``"withheld"`` lines excepted: they are not kept), and the
embedded frame's byte offsets map to columns of the recording line (``ParsedRecord.offset``).

Mirror: the proxy's native relay builds the same record lines in the core (rust/record.rs
``line`` / ``too_large``, byte for byte those of ``RecordWriter.line`` / ``too_large``) and hands
them to ``RecordWriter.write_lines``; the fallback's proxy loop records through this writer.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import orjson

import acp_fast

__all__ = [
    "FLUSH_SECONDS",
    "FORMAT_VERSION",
    "FlushedWriter",
    "Record",
    "RecordingError",
    "RecordWriter",
    "read",
    "extract",
    "is_recording",
]

#: The recording format this module writes and reads (the header's ``acp-fast-recording``).
FORMAT_VERSION = 1
#: How a recording starts (its header's first member).
MAGIC = b'{"acp-fast-recording"'
SIDES = ("editor", "agent")  # who sent a line
#: The largest ``"too_large"`` byte count a record may give (what a signed 64-bit count holds:
#: the ``bytes`` column of ``acp_fast.arrow.frames``).
MAX_BYTE_COUNT = 2**63 - 1
#: What the proxy did instead of forwarding a line as it came. Recordings written before the
#: middleware (format 1 all the same) have only the first three; readers take both.
ACTIONS = ("diverted", "dropped", "answered", "replaced", "injected", "coalesced")
#: Actions of records that reached the other side (``injected``: written by the proxy).
DELIVERED = (None, "injected")
#: ``"from"`` of a record -> ``source=`` of [`acp_fast.ToolCallStore.apply`][acp_fast.ToolCallStore.apply].
SOURCES = {"editor": "client", "agent": "agent"}

# The backend's API, typed here (the fallback's is untyped: its signatures are the native ones).
_loads: Callable[[bytes], Any] = acp_fast.loads
_dumps: Callable[[Any], bytes] = acp_fast.dumps
_Framer: Callable[..., Any] = acp_fast.Framer
_find_member = acp_fast._find_member


class RecordingError(ValueError):
    """A recording that does not follow the format: ``message``, and where: ``line`` (1-based, in
    the recording; None when not known) and ``column`` (1-based byte column in that line)."""

    def __init__(self, message: str, column: int = 1, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.line = line

    def __str__(self) -> str:
        return self.message if self.line is None else f"line {self.line} column {self.column}: {self.message}"


@dataclass(frozen=True)
class Record:
    """One line seen by the proxy. ``data`` is the line's bytes without its line ending (empty
    for a ``too_large`` or ``withheld`` record)."""

    t: float
    side: str  # "editor" or "agent"
    data: bytes
    is_json: bool
    crlf: bool = False
    eol: bool = True
    action: Optional[str] = None  # None (forwarded) or one of ACTIONS
    too_large: Optional[int] = None
    line: int = 0  # the record's line number in the recording
    reason: Optional[str] = None  # why a middleware dropped or replaced the line
    withheld: Optional[int] = None  # the length of a line recorded without its bytes

    @property
    def forwarded(self) -> bool:
        """Whether the frame reached the other side (as it came, or ``injected`` by the proxy)."""
        return self.action in DELIVERED

    @property
    def source(self) -> str:
        """The state engine's ``source`` for this record: ``"client"`` or ``"agent"``."""
        return SOURCES[self.side]

    @property
    def wire(self) -> bytes:
        """The bytes as they were on the wire (line ending included)."""
        if self.too_large is not None or self.withheld is not None:
            return b""
        end = (b"\r\n" if self.crlf else b"\n") if self.eol else b""
        return self.data + end


# ---------------------------------------------------------------------------------------------
# Writing


#: ``acp-fast proxy --record``: a record is in the file (written to the operating system, so
#: that it outlives the proxy, even killed) at most this many seconds after it was recorded.
FLUSH_SECONDS = 0.1


class FlushedWriter:
    """The one background flush of the proxy's outputs (`RecordWriter` here,
    `acp_fast.trace.TraceWriter`): bytes written under the writer's own lock, and with
    ``flush_every`` (seconds; None: only on [`flush`][acp_fast.recording.FlushedWriter.flush] and when ``out`` flushes
    itself) a thread that writes what is buffered at most that long after the first write since
    the last flush. [`close`][acp_fast.recording.FlushedWriter.close] stops the thread and flushes;
    the file stays open (its owner closes it)."""

    def __init__(self, out: IO[bytes], flush_every: Optional[float], name: str) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._closed = threading.Event()
        self._flusher: Optional[threading.Thread] = None
        if flush_every is not None:
            self._flusher = threading.Thread(target=self._flush_loop, args=(flush_every,), name=name, daemon=True)
            self._flusher.start()

    def _write(self, data: bytes) -> None:
        with self._lock:
            self._out.write(data)
        if self._flusher is not None and not self._dirty.is_set():
            self._dirty.set()

    def write_lines(self, data: bytes) -> None:
        """Whole lines built elsewhere (the proxy's native relay, rust/record.rs), written as
        they are."""
        if data:
            self._write(data)

    def _flush_loop(self, every: float) -> None:
        """The background flush: wait for a write, let ``every`` seconds of writes gather, write
        them out; again until [`close`][acp_fast.recording.FlushedWriter.close]."""
        while True:
            self._dirty.wait()
            if self._closed.wait(every):
                return
            self._dirty.clear()  # before the flush: a write during it sets it again
            with self._lock:
                if self._closed.is_set():
                    return
                try:
                    self._out.flush()
                except (OSError, ValueError):  # a full disk, a closed file: seen again at close
                    pass

    def flush(self) -> None:
        """Flush the underlying file."""
        with self._lock:
            self._out.flush()

    def close(self) -> None:
        """Stop the background flush (``flush_every``) and flush; the file stays open (its
        owner closes it)."""
        with self._lock:
            self._closed.set()
        self._dirty.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join()
        self.flush()


class RecordWriter(FlushedWriter):
    """Writes a recording. Calls are serialised by the caller (the proxy does); the flushes of
    ``flush_every`` take the writer's own lock.

    ``flush_every`` (seconds; None: only on [`flush`][acp_fast.recording.FlushedWriter.flush] and when ``out`` flushes itself): a
    background thread writes what is buffered at most that long after the first record since
    the last flush (the proxy passes [`FLUSH_SECONDS`][acp_fast.recording.FLUSH_SECONDS], 0.1 s). A record therefore reaches the
    file within that time whether the traffic goes on or stops (a killed proxy loses at most
    the last 0.1 s), and under load there is at most one write per interval, not one per
    record. [`close`][acp_fast.recording.FlushedWriter.close] (after [`exit`][acp_fast.recording.RecordWriter.exit]) stops the thread and flushes."""

    def __init__(
        self, out: IO[bytes], argv: Sequence[str], version: str, *, flush_every: Optional[float] = None
    ) -> None:
        header = {
            "acp-fast-recording": FORMAT_VERSION,
            "t": round(time.time(), 6),
            "argv": list(argv),
            "version": version,
        }
        out.write(orjson.dumps(header) + b"\n")
        super().__init__(out, flush_every, "acp-fast record flush")
        if self._flusher is not None:
            self._dirty.set()  # the header

    def line(
        self,
        side: str,
        data: bytes,
        is_json: bool,
        t: float,
        *,
        crlf: bool = False,
        eol: bool = True,
        action: Optional[str] = None,
        reason: Optional[str] = None,
        withheld: bool = False,
    ) -> None:
        """Record one line (``data`` without its line ending). ``is_json``: the line is one valid
        JSON document, so it can be embedded verbatim. ``withheld``: only the line's length is
        recorded (``"withheld":<bytes>``), not the line."""
        parts = [b'{"t":', b"%.6f" % t, b',"from":"', side.encode(), b'",']
        if withheld:
            parts.append(b'"withheld":%d' % len(data))
        elif is_json:
            parts += [b'"frame":', data]
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                parts += [b'"base64":"', base64.b64encode(data), b'"']
            else:
                parts += [b'"text":', orjson.dumps(text)]
        if crlf:
            parts.append(b',"crlf":true')
        if not eol:
            parts.append(b',"eol":false')
        if action is not None:
            parts += [b',"action":"', action.encode(), b'"']
        if reason is not None:
            parts += [b',"reason":', orjson.dumps(reason)]
        parts.append(b"}\n")
        self._write(b"".join(parts))

    def too_large(self, side: str, length: int, t: float) -> None:
        """Record a line of ``length`` bytes from ``side`` that was over the frame limit (no payload)."""
        self._write(b'{"t":%.6f,"from":"%s","too_large":%d}\n' % (t, side.encode(), length))

    def exit(self, status: int) -> None:
        """Write the footer: the agent's exit ``status``."""
        self._write(orjson.dumps({"t": round(time.time(), 6), "event": "exit", "status": status}) + b"\n")


class Writers:
    """Several writers given the same calls (`acp-fast proxy --record` and `--trace`: a
    `RecordWriter` and an `acp_fast.trace.TraceWriter`)."""

    def __init__(self, writers: Sequence[Any]) -> None:
        self.writers = list(writers)

    def line(self, *args: Any, **kwargs: Any) -> None:
        """`RecordWriter.line` of each."""
        for w in self.writers:
            w.line(*args, **kwargs)

    def too_large(self, side: str, length: int, t: float) -> None:
        """`RecordWriter.too_large` of each."""
        for w in self.writers:
            w.too_large(side, length, t)


# ---------------------------------------------------------------------------------------------
# Reading


def is_recording(data: bytes) -> bool:
    """Whether ``data`` (the start of a file is enough) is a recording rather than a plain stream."""
    return data.lstrip(b" \t\r\n").startswith(MAGIC + b":")


class Line(NamedTuple):
    """A line of a recording as [`iter_lines`][acp_fast.recording.iter_lines] reads it."""

    number: int
    data: Optional[bytes]  # without its line ending; None when longer than the limit
    length: int  # bytes before the newline
    newline: bool  # False for a last line without "\n"


def iter_lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[Line]:
    """Every line (blank ones included) of a chunk stream, holding at most ``max_bytes`` of a line
    (a longer one is given by its length)."""
    framer = _Framer(max_frame_bytes=max_bytes, keepends=True)
    for chunk in chunks:
        for number, data in framer.feed(chunk):
            yield _line(number, data, True)
    for number, data in framer.finish():
        yield _line(number, data, False)


def _line(number: int, data: Union[bytes, int], newline: bool) -> Line:
    """The ``Line`` of a ``Framer(keepends=True)`` event: ``data`` is the line with its ending, or
    the length (ending included) of a line over the limit."""
    if isinstance(data, int):
        return Line(number, None, data - newline, newline)
    if newline:
        data = data[:-1]
    return Line(number, data, len(data), newline)


def record_limit(max_frame_bytes: int) -> int:
    """The longest record line read when frames may be ``max_frame_bytes`` long: room for a line
    escaped as JSON text or base64."""
    return min(max_frame_bytes * 8 + 65536, acp_fast.MAX_FRAME_BYTES)


class ParsedRecord(NamedTuple):
    """One line of a recording as [`parse_header`][acp_fast.recording.parse_header] / [`parse_record`][acp_fast.recording.parse_record] read it (what
    ``acp-fast validate`` checks and ``inspect`` replays; [`read`][acp_fast.recording.read] gives a [`Record`][acp_fast.recording.Record])."""

    line: int
    kind: str  # "header", "line" (a line seen on one side) or "footer"
    value: Dict[str, Any]  # the parsed record
    direction: Optional[str] = None  # "editor" or "agent"
    payload: Optional[str] = None  # "frame", "text", "base64", or None (too_large, withheld)
    data: Optional[bytes] = None  # the recorded line's bytes
    offset: int = 0  # byte offset of the payload value in the record line
    raw: bytes = b""  # the record line (payload token for text records)

    @property
    def source(self) -> Optional[str]:
        """The state engine's ``source`` for this line: ``"client"``, ``"agent"``, or None for a
        header or footer."""
        return SOURCES.get(self.direction or "")

    @property
    def action(self) -> Optional[str]:
        """What the proxy did with the line (its ``action``, one of ``ACTIONS``), None when it
        forwarded the line as it came."""
        return self.value.get("action")

    @property
    def forwarded(self) -> bool:
        """Whether the frame reached the other side (as it came, or ``injected`` by the proxy)."""
        return self.value.get("action") in DELIVERED

    @property
    def injected(self) -> bool:
        """A frame the proxy wrote on behalf of ``direction``, never read from it."""
        return self.value.get("action") == "injected"


def parse_lines(
    chunks: Iterable[bytes], max_bytes: int
) -> Iterator[Tuple[int, Union[ParsedRecord, RecordingError, None]]]:
    """Each line of a recording given as byte chunks: its number, and its [`ParsedRecord`][acp_fast.recording.ParsedRecord]
    (the header on line 1), or the [`RecordingError`][acp_fast.recording.RecordingError] saying why it is not a record, or None
    for a blank line. A line longer than ``max_bytes`` is not held: it is such an error."""
    for line in iter_lines(chunks, max_bytes):
        number = line.number
        if line.data is None:
            yield (
                number,
                RecordingError(f"expected a record of at most {max_bytes} bytes, found {line.length}", 1, number),
            )
        elif not line.data.strip(b" \t\r"):
            yield number, None
        else:
            try:
                yield number, parse_header(line.data) if number == 1 else parse_record(line.data, number)
            except RecordingError as exc:
                exc.line = number
                yield number, exc


_HEAD = re.compile(rb'\{"t":-?[0-9][0-9.eE+-]*,"from":"(?:editor|agent)","frame":')


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _value_offset(line: bytes, key: str) -> Optional[Tuple[int, int]]:
    """(start, end) of the last ``key`` member's value in the record object ``line``, found by the
    backend's scanner. ``line`` is valid JSON, or (``_load_deep``) valid as far as the depth limit
    let ``loads`` read: there a span is checked by reading what it delimits, and a walk that runs
    off the text gives None."""
    i = line.find(b"{")
    if i < 0:
        return None
    try:
        found = _find_member(line, i, key)
    except (IndexError, AttributeError):  # the fallback's walk off the end of a text that is not JSON
        return None
    return None if found is None else (found[1], found[2])


def _frame_span(line: bytes, value: Dict[str, Any]) -> Tuple[int, int]:
    """Byte span of the embedded frame: fast when the record is written compactly in the usual
    member order (the tail of flags after the frame is rebuilt and matched), else by scanning."""
    m = _HEAD.match(line)
    if m is not None:
        keys = list(value)
        after = keys[keys.index("frame") + 1 :]
        try:
            tail = b"".join(b"," + _dumps(k) + b":" + _dumps(value[k]) for k in after) + b"}"
        except ValueError:
            tail = b""
        if tail and line.endswith(tail) and len(line) - len(tail) > m.end():
            return m.end(), len(line) - len(tail)
    span = _value_offset(line, "frame")
    if span is None:  # pragma: no cover - the record has a "frame" member
        raise RecordingError('expected a "frame" member, found none')
    return span


def _seconds(value: Any) -> bool:
    """Whether ``value`` is a time in unix seconds: a JSON number that is a finite float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond any float
        return False


def parse_header(line: bytes, number: int = 1) -> ParsedRecord:
    """The recording's first line. Raises [`RecordingError`][acp_fast.recording.RecordingError] (its ``column`` set)."""
    value = _load(line)
    if "acp-fast-recording" not in value:
        raise RecordingError('expected the recording header {"acp-fast-recording":1,...}, found another object')
    problems = []
    if value["acp-fast-recording"] != 1:
        problems.append(f'expected "acp-fast-recording": 1, found {_dumps(value["acp-fast-recording"]).decode()}')
    if not _seconds(value.get("t")):
        problems.append('expected "t" to be a number (unix seconds)')
    argv = value.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        problems.append('expected "argv" to be an array of strings')
    if not isinstance(value.get("version"), str):
        problems.append('expected "version" to be a string')
    if problems:
        raise RecordingError("; ".join(problems))
    return ParsedRecord(number, "header", value, raw=line)


def _load(line: bytes) -> Dict[str, Any]:
    try:
        value = _loads(line)
    except acp_fast.DecodeError as exc:
        value = _load_deep(line) if exc.kind == "depth_limit" else None
        if value is None:
            raise RecordingError(f"not a JSON record: {exc.msg}", (exc.position or 0) + 1) from None
    if not isinstance(value, dict):
        raise RecordingError(f"expected a record object, found {_kind_of(value)}")
    return value


def _load_deep(line: bytes) -> Optional[Dict[str, Any]]:
    """A record whose frame nests as deep as a frame may (``MAX_DEPTH`` levels, docs/DESIGN.md 2)
    is one level deeper than ``loads`` reads: its members are read apart from the frame, and the
    frame on its own. None when that does not read either."""
    span = _value_offset(line, "frame")
    if span is None:
        return None
    start, end = span
    try:
        value = _loads(line[:start] + b"0" + line[end:])
        frame = _loads(line[start:end])
    except acp_fast.DecodeError:
        return None
    if not isinstance(value, dict):
        return None
    value["frame"] = frame
    return value


def parse_record(line: bytes, number: int) -> ParsedRecord:
    """One record after the header. Raises [`RecordingError`][acp_fast.recording.RecordingError] (its ``column`` set) for a
    malformed one."""
    if line.endswith(b"\r"):
        line = line[:-1]
    value = _load(line)
    if "event" in value:
        if value["event"] != "exit":
            raise RecordingError(f'expected "event": "exit", found {_dumps(value["event"]).decode()}')
        status = value.get("status")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise RecordingError('expected "status" to be an integer or null')
        return ParsedRecord(number, "footer", value, raw=line)
    if not _seconds(value.get("t")):
        raise RecordingError('expected "t" to be a number (unix seconds)')
    direction = value.get("from")
    if direction not in SIDES:
        found = _dumps(direction).decode() if "from" in value else "none"
        raise RecordingError(f'expected "from" to be "editor" or "agent", found {found}')
    payloads = [k for k in ("frame", "text", "base64") if k in value]
    bare = [k for k in ("too_large", "withheld") if k in value]  # records without a payload
    if len(bare) > 1:
        raise RecordingError('expected one of "too_large" and "withheld", found both')
    if bare:
        if payloads:
            raise RecordingError(f'expected no payload with "{bare[0]}", found "{payloads[0]}"')
        length = value[bare[0]]
        if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= MAX_BYTE_COUNT:
            raise RecordingError(f'expected "{bare[0]}" to be a byte count (an integer from 0 to 2**63-1)')
        if bare[0] == "withheld" and value.get("action") not in ("dropped", "replaced"):
            raise RecordingError('expected "action": "dropped" or "replaced" with "withheld"')
    elif len(payloads) != 1:
        found = "none" if not payloads else " and ".join(f'"{p}"' for p in payloads)
        raise RecordingError(f'expected one payload ("frame", "text" or "base64"), found {found}')
    if "crlf" in value and value["crlf"] is not True:
        raise RecordingError('expected "crlf" to be true when present')
    if "eol" in value and value["eol"] is not False:
        raise RecordingError('expected "eol" to be false when present')
    if "action" in value and value["action"] not in ACTIONS:
        raise RecordingError(
            'expected "action" to be "diverted", "dropped", "answered", "replaced", "injected" or "coalesced"'
        )
    if "reason" in value and not isinstance(value["reason"], str):
        raise RecordingError('expected "reason" to be a string when present')
    if bare:
        return ParsedRecord(number, "line", value, direction, None, None, 0, line)
    payload = payloads[0]
    if payload == "frame":
        start, end = _frame_span(line, value)
        return ParsedRecord(number, "line", value, direction, "frame", line[start:end], start, line)
    span = _value_offset(line, payload)
    start = span[0] if span else 0
    text = value[payload]
    if not isinstance(text, str):
        raise RecordingError(f'expected "{payload}" to be a string, found {_kind_of(text)}', start + 1)
    if payload == "text":
        token = line[span[0] : span[1]] if span else b""
        return ParsedRecord(
            number, "line", value, direction, "text", text.encode("utf-8", "surrogatepass"), start, token
        )
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise RecordingError('expected "base64" to be base64 text (RFC 4648)', start + 1) from None
    return ParsedRecord(number, "line", value, direction, "base64", data, start, line)


def read(data: Union[bytes, IO[bytes]]) -> Iterator[Union[Record, Dict[str, Any]]]:
    """The records of a recording, in order: a ``Record`` per line seen, and the header and
    footer as dicts. Raises [`RecordingError`][acp_fast.recording.RecordingError] naming the line and column of a malformed
    record (the checks are those of ``acp-fast validate``, which reports every such line)."""
    return read_chunks([bytes(data)] if isinstance(data, (bytes, bytearray)) else _chunks(data))


def read_chunks(chunks: Iterable[bytes]) -> Iterator[Union[Record, Dict[str, Any]]]:
    """[`read`][acp_fast.recording.read] of a recording given as its bytes in pieces (`chunks`)."""
    for number, r in parse_lines(chunks, acp_fast.MAX_FRAME_BYTES):
        if r is None:
            if number == 1:
                parse_header(b"")  # raises: a recording starts with its header
            continue
        if isinstance(r, RecordingError):
            raise r
        if r.kind != "line":
            yield r.value
            continue
        v = r.value
        t, side, crlf, eol, action, reason = (
            float(v["t"]),
            str(r.direction),
            v.get("crlf", False),
            v.get("eol", True),
            v.get("action"),
            v.get("reason"),
        )
        if r.payload is None:
            yield Record(t, side, b"", False, crlf, eol, action, v.get("too_large"), number, reason, v.get("withheld"))
        else:
            yield Record(t, side, r.data or b"", r.payload == "frame", crlf, eol, action, None, number, reason)


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return
        yield chunk


def extract(data: Union[bytes, IO[bytes]], side: str) -> bytes:
    """The bytes ``side`` (``"editor"`` or ``"agent"``) sent, as they were on the wire (frames the
    proxy injected on its behalf are not among them, nor the lines recorded without their bytes:
    ``too_large`` and ``withheld``)."""
    if side not in SIDES:
        raise ValueError(f"side must be 'editor' or 'agent', found {side!r}")
    out: List[bytes] = []
    for record in read(data):
        if isinstance(record, Record) and record.side == side and record.action != "injected":
            out.append(record.wire)
    return b"".join(out)
