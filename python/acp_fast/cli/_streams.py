"""Reading NDJSON streams and ``acp-fast proxy`` recordings (private; used by ``validate`` and
``inspect``).

* :func:`open_input` / :func:`read_chunks` / :func:`sniff` — a file or stdin as byte chunks, and
  whether it holds a recording (first line ``{"acp-fast-recording":1,...}``) or a plain stream.
* :func:`iter_lines` — lines of a chunk stream with bounded memory (a line longer than the limit
  is reported by its length, not held).
* :func:`parse_record` — one recording line as a :class:`Record`, with the embedded frame's exact
  bytes (the frame is embedded verbatim, so its byte offsets map to columns of the recording line).
* :class:`Progress` — a progress line on stderr.

The recording format (docs/CLI.md): NDJSON, a header
``{"acp-fast-recording":1,"t":...,"argv":[...],"version":"..."}``, then one record per line seen
on either side ``{"t":...,"from":"editor"|"agent", <payload>, ...flags}`` where the payload is one of
``"frame":<the line verbatim>``, ``"text":"<line>"`` (UTF-8, not JSON), ``"base64":"..."`` (not
UTF-8), and the flags ``"crlf":true``, ``"eol":false``, ``"action":"diverted"|"dropped"|"answered"``,
``"too_large":<bytes>`` (then no payload); last, the footer ``{"t":...,"event":"exit","status":N}``.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import sys
import time
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, NamedTuple, Optional, TextIO, Tuple

import acp_fast

from ._shapes import members

CHUNK_BYTES = 1 << 20
RECORDING_MAGIC = b'{"acp-fast-recording"'
ACTIONS = ("diverted", "dropped", "answered")
DIRECTIONS = ("editor", "agent")
#: ``"from"`` of a record -> ``source=`` of :meth:`acp_fast.ToolCallStore.apply`.
SOURCES = {"editor": "client", "agent": "agent"}

# ---------------------------------------------------------------------------------------------
# Input


def open_input(path: str) -> Tuple[BinaryIO, Optional[int], str]:
    """(binary stream, size in bytes when known, display name). ``-`` is stdin. Raises OSError."""
    if path == "-":
        return sys.stdin.buffer, None, "<stdin>"
    stream = open(path, "rb")  # noqa: SIM115 - closed by the caller
    size: Optional[int] = None
    try:
        st = os.fstat(stream.fileno())
        if os.path.isfile(path):
            size = st.st_size
    except OSError:  # pragma: no cover
        pass
    return stream, size, path


def read_chunks(stream: Any, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Chunks of a binary stream until EOF (``read1`` when the stream has it: pipes stream out)."""
    read = getattr(stream, "read1", None) or stream.read
    while True:
        chunk = read(size)
        if not chunk:
            return
        yield bytes(chunk)


def chunks_of(data: Any) -> Iterator[bytes]:
    """A bytes-like value as chunks."""
    data = bytes(data)
    for start in range(0, len(data), CHUNK_BYTES):
        yield data[start : start + CHUNK_BYTES]


def sniff(chunks: Iterable[bytes]) -> Tuple[str, Iterator[bytes]]:
    """``("recording" | "ndjson", the same chunks)``: a recording starts with its header."""
    it = iter(chunks)
    head = b""
    pieces: List[bytes] = []
    for chunk in it:
        pieces.append(chunk)
        head += chunk[: 64 - len(head)] if len(head) < 64 else b""
        if len(head) >= len(RECORDING_MAGIC) or b"\n" in chunk:
            break
    kind = "recording" if head.startswith(RECORDING_MAGIC) else "ndjson"

    def replay() -> Iterator[bytes]:
        yield from pieces
        yield from it

    return kind, replay()


class Line(NamedTuple):
    number: int
    data: Optional[bytes]  # None when longer than the limit
    length: int  # bytes before the newline
    newline: bool  # False for a last line without "\n"


def iter_lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[Line]:
    """Every line (blank ones included) of a chunk stream, holding at most ``max_bytes`` of a line."""
    buf = bytearray()
    skipping = False
    skipped = 0
    number = 0
    for chunk in chunks:
        start = 0
        n = len(chunk)
        while start <= n:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                piece = chunk[start:]
                if skipping:
                    skipped += len(piece)
                elif piece:
                    buf += piece
                    if len(buf) > max_bytes:
                        skipping, skipped = True, len(buf)
                        buf.clear()
                break
            number += 1
            if skipping:
                yield Line(number, None, skipped + nl - start, True)
                skipping = False
            elif buf:
                buf += chunk[start:nl]
                if len(buf) > max_bytes:
                    yield Line(number, None, len(buf), True)
                else:
                    yield Line(number, bytes(buf), len(buf), True)
                buf.clear()
            elif nl - start > max_bytes:
                yield Line(number, None, nl - start, True)
            else:
                yield Line(number, chunk[start:nl], nl - start, True)
            start = nl + 1
    if skipping:
        yield Line(number + 1, None, skipped, False)
    elif buf:
        yield Line(number + 1, bytes(buf), len(buf), False)


# ---------------------------------------------------------------------------------------------
# Recordings


class RecordError(ValueError):
    """A recording line that is not a valid record: message and 1-based column."""

    def __init__(self, message: str, column: int = 1):
        super().__init__(message)
        self.message = message
        self.column = column


class Record(NamedTuple):
    line: int
    kind: str  # "header", "line" (a line seen on one side) or "footer"
    value: Dict[str, Any]  # the parsed record
    direction: Optional[str] = None  # "editor" or "agent"
    payload: Optional[str] = None  # "frame", "text", "base64", or None (too_large)
    data: Optional[bytes] = None  # the recorded line's bytes
    offset: int = 0  # byte offset of the payload value in the record line
    raw: bytes = b""  # the record line (payload token for text records)

    @property
    def source(self) -> Optional[str]:
        return SOURCES.get(self.direction or "")

    @property
    def action(self) -> Optional[str]:
        return self.value.get("action")

    @property
    def forwarded(self) -> bool:
        return "action" not in self.value


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
    """(start, end) of the last ``key`` member's value in the record object ``line``."""
    i = line.find(b"{")
    found = None
    if i >= 0:
        for name, start, end in members(line, i):
            if name == key:
                found = (start, end)
    return found


def _frame_span(line: bytes, value: Dict[str, Any]) -> Tuple[int, int]:
    """Byte span of the embedded frame: fast when the record is written compactly in the usual
    member order (the tail of flags after the frame is rebuilt and matched), else by scanning."""
    m = _HEAD.match(line)
    if m is not None:
        keys = list(value)
        after = keys[keys.index("frame") + 1 :]
        try:
            tail = b"".join(b"," + acp_fast.dumps(k) + b":" + acp_fast.dumps(value[k]) for k in after) + b"}"
        except ValueError:
            tail = b""
        if tail and line.endswith(tail) and len(line) - len(tail) > m.end():
            return m.end(), len(line) - len(tail)
    span = _value_offset(line, "frame")
    if span is None:  # pragma: no cover - the record has a "frame" member
        raise RecordError('expected a "frame" member, found none')
    return span


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_header(line: bytes, number: int = 1) -> Record:
    """The recording's first line. Raises :class:`RecordError`."""
    value = _load(line)
    if "acp-fast-recording" not in value:
        raise RecordError('expected the recording header {"acp-fast-recording":1,...}, found another object')
    problems = []
    if value["acp-fast-recording"] != 1:
        problems.append(
            f'expected "acp-fast-recording": 1, found {acp_fast.dumps(value["acp-fast-recording"]).decode()}'
        )
    if not _number(value.get("t")):
        problems.append('expected "t" to be a number (unix seconds)')
    argv = value.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        problems.append('expected "argv" to be an array of strings')
    if not isinstance(value.get("version"), str):
        problems.append('expected "version" to be a string')
    if problems:
        raise RecordError("; ".join(problems))
    return Record(number, "header", value, raw=line)


def _load(line: bytes) -> Dict[str, Any]:
    try:
        value = acp_fast.loads(line)
    except acp_fast.DecodeError as exc:
        raise RecordError(f"not a JSON record: {exc.msg}", (exc.position or 0) + 1) from None
    if not isinstance(value, dict):
        raise RecordError(f"expected a record object, found {_kind_of(value)}")
    return value


def parse_record(line: bytes, number: int) -> Record:
    """One record after the header. Raises :class:`RecordError` for a malformed one."""
    if line.endswith(b"\r"):
        line = line[:-1]
    value = _load(line)
    if "event" in value:
        if value["event"] != "exit":
            raise RecordError(f'expected "event": "exit", found {acp_fast.dumps(value["event"]).decode()}')
        status = value.get("status")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise RecordError('expected "status" to be an integer or null')
        return Record(number, "footer", value, raw=line)
    if not _number(value.get("t")):
        raise RecordError('expected "t" to be a number (unix seconds)')
    direction = value.get("from")
    if direction not in DIRECTIONS:
        found = acp_fast.dumps(direction).decode() if "from" in value else "none"
        raise RecordError(f'expected "from" to be "editor" or "agent", found {found}')
    payloads = [k for k in ("frame", "text", "base64") if k in value]
    too_large = value.get("too_large")
    if "too_large" in value:
        if payloads:
            raise RecordError(f'expected no payload with "too_large", found "{payloads[0]}"')
        if not isinstance(too_large, int) or isinstance(too_large, bool) or too_large < 0:
            raise RecordError('expected "too_large" to be a byte count')
    elif len(payloads) != 1:
        found = "none" if not payloads else " and ".join(f'"{p}"' for p in payloads)
        raise RecordError(f'expected one payload ("frame", "text" or "base64"), found {found}')
    if "crlf" in value and value["crlf"] is not True:
        raise RecordError('expected "crlf" to be true when present')
    if "eol" in value and value["eol"] is not False:
        raise RecordError('expected "eol" to be false when present')
    if "action" in value and value["action"] not in ACTIONS:
        raise RecordError('expected "action" to be "diverted", "dropped" or "answered"')
    if "too_large" in value:
        return Record(number, "line", value, direction, None, None, 0, line)
    payload = payloads[0]
    if payload == "frame":
        start, end = _frame_span(line, value)
        return Record(number, "line", value, direction, "frame", line[start:end], start, line)
    span = _value_offset(line, payload)
    start = span[0] if span else 0
    text = value[payload]
    if not isinstance(text, str):
        raise RecordError(f'expected "{payload}" to be a string, found {_kind_of(text)}', start + 1)
    if payload == "text":
        token = line[span[0] : span[1]] if span else b""
        return Record(number, "line", value, direction, "text", text.encode("utf-8", "surrogatepass"), start, token)
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise RecordError('expected "base64" to be base64 text (RFC 4648)', start + 1) from None
    return Record(number, "line", value, direction, "base64", data, start, line)


_PIECE = re.compile(rb'\\u([dD][89abAB][0-9a-fA-F]{2})\\u[0-9a-fA-F]{4}|\\u([0-9a-fA-F]{4})|\\.|[^\\"]+')


def string_offset(token: bytes, index: int) -> int:
    """Offset in a JSON string token (with its quotes) of byte ``index`` of the decoded UTF-8 text."""
    pos = 1
    done = 0
    while pos < len(token) - 1 and done < index:
        m = _PIECE.match(token, pos)
        if m is None:
            break
        piece = m.group()
        if piece[:1] != b"\\":
            if done + len(piece) > index:
                return pos + (index - done)
            done += len(piece)
        elif m.group(1) is not None:
            done += 4
        elif m.group(2) is not None:
            done += len(chr(int(m.group(2), 16)).encode("utf-8", "surrogatepass"))
        else:
            done += 1
        pos = m.end()
    return pos


# ---------------------------------------------------------------------------------------------
# Progress


class Progress:
    """A one-line progress display on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str, total: Optional[int], *, enabled: bool, stream: Optional[TextIO] = None):
        self.label = label
        self.total = total
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._last = 0.0
        self._width = 0
        self._start = time.monotonic()

    @staticmethod
    def wanted(flag: Optional[bool], stream: Optional[TextIO] = None) -> bool:
        """``--progress`` / ``--no-progress`` when given, else: is stderr a terminal?"""
        if flag is not None:
            return flag
        stream = stream if stream is not None else sys.stderr
        try:
            return bool(stream.isatty())
        except (AttributeError, ValueError):
            return False

    def wrap(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            yield chunk
            self.advance(len(chunk))

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        mib = self.done / (1 << 20)
        if self.total:
            fraction = min(1.0, self.done / self.total)
            bar = "#" * int(fraction * 24)
            text = f"{self.label} [{bar:<24}] {fraction * 100:5.1f}% {mib:.1f}/{self.total / (1 << 20):.1f} MiB"
        else:
            text = f"{self.label} {mib:.1f} MiB"
        text += f" {now - self._start:.1f}s"
        self._width = max(self._width, len(text))
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
