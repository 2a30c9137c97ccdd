"""Newline framing of a byte stream (DESIGN 6): partial lines, CRLF, blank lines, the length
limit and resynchronisation after an oversized line.

Large buffers are cut with ``bytes.split`` (no per-byte Python loop); a partial line is kept as a
list of chunks so feeding one byte at a time stays linear. Memory is bounded by
``max_frame_bytes``: an oversized line is reported as soon as more than that many bytes of it are
buffered, and its bytes are dropped until the next newline.

Mirror of ``rust/framing.rs``.
"""

from __future__ import annotations

from typing import List, Optional, Tuple, Union

import orjson

from ..batch import Batch
from ..errors import DecodeError as PyDecodeError
from .error import DecodeError, to_python
from .message import (
    _I64_MAX,
    _I64_MIN,
    _MISSING,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    Message,
    _MessageSlots,
    decode_frame,
    decode_value,
)
from .scanner import to_bytes

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameDecoder"]

#: 64 MiB.
DEFAULT_MAX_FRAME_BYTES = 67108864
#: The largest limit (offsets of a frame are 32-bit in the native core), as rust/python/frames.rs.
MAX_FRAME_BYTES = 4294967294

_orjson_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError

_BLANK = b" \t\r"
_BLANK_START = frozenset(_BLANK)

Result = Union[Message, Batch, PyDecodeError]


def _too_large(limit: int, line: int) -> PyDecodeError:
    err = DecodeError.json(
        "frame_too_large",
        f"expected a frame of at most {limit} bytes, found a longer line; skipped to the next newline",
        limit,
    )
    return to_python(err, None, line=line, raw=None)


def _line_result(frame: bytes, line: int, limit: int) -> "Result | None":
    """The result of one complete line (without its newline) that orjson refused as it is:
    None for an empty or blank line, else the frame-too-large error, or decode_frame's result
    (with one trailing \\r dropped)."""
    if not frame:
        return None
    if len(frame) > limit:
        return _too_large(limit, line)
    if frame[-1] == 13:  # \r
        frame = frame[:-1]
        if not frame:
            return None
    if frame[0] in _BLANK_START and not frame.strip(_BLANK):
        return None
    return decode_frame(frame, line)


class FrameDecoder:
    """Decode a newline-delimited stream fed in arbitrary pieces.

    ``feed(data)`` returns the results of every line completed by ``data``, in order: a
    ``Message``, a ``Batch`` or a ``DecodeError`` (with ``line`` and ``raw`` set). ``finish()``
    handles a last line without a newline. ``line`` counts the lines completed so far (blank lines
    included), ``buffered`` the bytes held for the current partial line.
    """

    __slots__ = ("_max", "_line", "_chunks", "_buffered", "_skipping")

    def __init__(self, *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):  # type: ignore[no-untyped-def]
        if type(max_frame_bytes) is not int:
            if isinstance(max_frame_bytes, bool) or not isinstance(max_frame_bytes, int):
                raise TypeError(
                    f"max_frame_bytes must be an int, found {type(max_frame_bytes).__name__}"
                )
            max_frame_bytes = int(max_frame_bytes)
        if not 1 <= max_frame_bytes <= MAX_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes must be between 1 and {MAX_FRAME_BYTES}, found {max_frame_bytes}")
        self._max = max_frame_bytes
        self._line = 0
        self._chunks: List[bytes] = []
        self._buffered = 0
        self._skipping = False

    @property
    def max_frame_bytes(self) -> int:
        return self._max

    @property
    def line(self) -> int:
        """Lines completed so far (blank and oversized lines included)."""
        return self._line

    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line."""
        return self._buffered

    def __repr__(self) -> str:
        return f"FrameDecoder(max_frame_bytes={self._max}, line={self._line}, buffered={self._buffered})"

    def feed(self, /, data):  # type: ignore[no-untyped-def]
        """Results of every line that ``data`` completes, in order."""
        if type(data) is not bytes:
            data = to_bytes(data, "feed")
            if type(data) is DecodeError:
                # A str with unpaired surrogates: same error as decode(str), nothing is consumed.
                raise to_python(data, None)
        out: List[Result] = []
        split = self._split(data, out)
        if split is None:
            return out
        parts, tail, check_size, has_cr = split
        limit = self._max
        line = self._line
        append = out.append
        loads = _orjson_loads
        slots = _MessageSlots
        cls = Message
        _dict = dict
        _str = str
        _int = int
        for frame in parts:
            line += 1
            # The happy path first: orjson accepts the line. Empty, blank and invalid lines all
            # raise, and take the full per-line path (_line_result).
            try:
                value = loads(frame)
            except _JSONDecodeError:
                result = _line_result(frame, line, limit)
                if result is not None:
                    append(result)
                continue
            if check_size and len(frame) > limit:
                append(_too_large(limit, line))
                continue
            if has_cr and frame[-1] == 13:  # \r: whitespace to orjson, the value is that without it
                frame = frame[:-1]
            # message_or_none's checks, inlined for requests, notifications and responses (the
            # per-line call is a measurable share); anything else takes decode_value.
            if type(value) is _dict and value.get("jsonrpc") == "2.0":
                get = value.get
                session_id = update_kind = tool_call_id = None
                params = get("params")
                if type(params) is _dict:
                    v = params.get("sessionId")
                    if type(v) is _str:
                        session_id = v
                    update = params.get("update")
                    if type(update) is _dict:
                        v = update.get("sessionUpdate")
                        if type(v) is _str:
                            update_kind = v
                        v = update.get("toolCallId")
                        if type(v) is _str:
                            tool_call_id = v
                method = get("method", _MISSING)
                ident = get("id", _MISSING)
                if method is not _MISSING:
                    if ident is _MISSING:
                        kind = NOTIFICATION
                        ident = None
                    else:
                        kind = REQUEST
                    ok = type(method) is _str and (params is None or type(params) is _dict or type(params) is list)
                else:
                    kind = RESPONSE
                    method = None
                    ok = ident is not _MISSING and "result" in value and "error" not in value
                if ok and (
                    ident is None or type(ident) is _str or (type(ident) is _int and _I64_MIN <= ident <= _I64_MAX)
                ):
                    m = slots()
                    m._raw = frame
                    m._kind = kind
                    m._line = line
                    m._id = ident
                    m._method = method
                    m._session_id = session_id
                    m._update_kind = update_kind
                    m._tool_call_id = tool_call_id
                    m.__class__ = cls
                    append(m)
                    continue
            append(decode_value(frame, value, line))
        self._line = line
        if tail:
            self._hold(tail, out)
        return out

    def _split(self, data: bytes, out: List[Result]) -> Optional[Tuple[List[bytes], bytes, bool, bool]]:
        """The framing of one ``feed`` (shared with ``ToolCallStore.feed``, which applies the
        lines itself): ``(lines, tail, check_size, has_cr)`` — the complete lines ``data`` ends
        (the held partial line joined to the first), the new partial line, whether some line may
        pass the limit (else the per-line length check can be skipped) and whether some line may
        end in a carriage return. None when ``data`` completes no line (it is held, or skipped
        after an oversized line; ``out`` gets the error of a held line that passes the limit)."""
        if self._skipping:
            nl = data.find(b"\n")
            if nl < 0:
                return None
            self._skipping = False
            self._line += 1
            data = data[nl + 1 :]
        elif b"\n" not in data:
            self._hold(data, out)
            return None
        parts = data.split(b"\n")
        tail = parts.pop()
        check_size = len(data) + self._buffered > self._max
        has_cr = b"\r" in data
        if self._chunks:
            self._chunks.append(parts[0])
            parts[0] = b"".join(self._chunks)
            has_cr = has_cr or b"\r" in parts[0]
            self._chunks = []
            self._buffered = 0
        return parts, tail, check_size, has_cr

    def _hold(self, data: bytes, out: List[Result]) -> None:
        """Keep `data` as (the end of) the current partial line, within the limit."""
        if not data:
            return
        size = self._buffered + len(data)
        if size > self._max:
            out.append(_too_large(self._max, self._line + 1))
            self._chunks = []
            self._buffered = 0
            self._skipping = True
            return
        self._chunks.append(data)
        self._buffered = size

    def finish(self, /):  # type: ignore[no-untyped-def]
        """The result of a final line that has no newline (``[]`` if there is none or it is
        blank); resets the partial line. The decoder may be fed again afterwards."""
        if self._skipping:
            self._skipping = False
            self._line += 1
            return []
        if not self._chunks:
            return []
        frame = b"".join(self._chunks)
        self._chunks = []
        self._buffered = 0
        self._line += 1
        if frame[-1] == 13:  # \r
            frame = frame[:-1]
        if not frame.strip(_BLANK):
            return []
        return [decode_frame(frame, self._line)]
