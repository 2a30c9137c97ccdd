"""Decoding a newline-delimited stream: ``FrameDecoder`` is a ``Framer`` plus the frame parser
(``message.decode_frame``): every complete non-blank line comes out as a ``Message``, a ``Batch``
or a ``DecodeError`` (with ``line`` and ``raw``), an oversized line as the ``frame_too_large``
error.

Mirror of ``rust/decoder.rs`` and of its binding (``FrameDecoder`` in ``rust/python/frames.rs``):
this class is both. Where Rust parses each line as the framer hands it over, this parses a whole
feed's lines (``Framer._feed``) in one loop: orjson first, the ``Message`` built inline for a
request, notification or response, and only a line orjson refuses takes the full per-line path
(``Framer._complete``, then ``decode_frame``).

Every public method and property runs under the decoder's lock (``framing.exclusive``; docs/API.md
"Threads"), and reads the framer's state directly (its own properties would take its lock too).
"""

from __future__ import annotations

from threading import RLock
from typing import Any, List, Union

import orjson

from ..batch import Batch
from ..errors import DecodeError as PyDecodeError
from .framing import DEFAULT_MAX_FRAME_BYTES, Framer, bytes_of, exclusive, too_large
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

__all__ = ["FrameDecoder"]

_orjson_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError

Result = Union[Message, Batch, PyDecodeError]


class FrameDecoder:
    """Decode a newline-delimited stream fed in arbitrary pieces.

    ``feed(data)`` returns the results of every line completed by ``data``, in order: a
    ``Message``, a ``Batch`` or a ``DecodeError`` (with ``line`` and ``raw`` set). ``finish()``
    handles a last line without a newline. ``line`` counts the lines completed so far (blank lines
    included), ``buffered`` the bytes held for the current partial line.
    """

    __slots__ = ("_framer", "_strict", "_lock", "_busy")

    def __init__(  # type: ignore[no-untyped-def]  # signature = the native one
        self, *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, strict_schema=False, unstable=False, draft=None
    ):
        self._framer = Framer(max_frame_bytes=max_frame_bytes)
        self._strict: Any = None
        if (strict_schema is not None and strict_schema is not False) or draft is not None:
            from .schema.stream import strict_arg

            self._strict = strict_arg(strict_schema, unstable, draft)
        self._lock = RLock()
        self._busy = False

    @exclusive
    def feed(self, /, data):  # type: ignore[no-untyped-def]  # signature = the native one
        """Results of every line that ``data`` completes, in order."""
        if type(data) is not bytes:
            data = bytes_of(data)
        out: List[Result] = []
        framer = self._framer
        split = framer._feed(data, out)
        if split is None:
            if self._strict is not None:
                from .schema.stream import check_results

                check_results(self._strict, out)
            return out
        parts, tail, line, check_size, has_cr = split
        limit = framer._max
        complete = framer._complete
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
            # raise, and take the full per-line path.
            try:
                value = loads(frame)
            except _JSONDecodeError:
                found = complete(limit, line, frame)
                if found is not None:
                    append(decode_frame(found, line) if isinstance(found, bytes) else found)
                continue
            if check_size and len(frame) > limit:
                append(too_large(limit, line))
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
                    m: Any = slots()
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
        if tail:
            framer._buffer_tail(tail, out)
        if self._strict is not None:
            from .schema.stream import check_results

            check_results(self._strict, out)
        return out

    @exclusive
    def finish(self, /):  # type: ignore[no-untyped-def]  # signature = the native one
        """The result of a final line that has no newline (``[]`` if there is none or it is
        blank); resets the partial line. The decoder may be fed again afterwards."""
        out = [decode_frame(frame, line) for line, frame in self._framer._end()]
        if self._strict is not None:
            from .schema.stream import check_results

            check_results(self._strict, out)
        return out

    @exclusive
    def sent(self, message: Any) -> None:
        """With ``strict_schema``: a frame sent the other way on the same connection, so that the
        responses read are checked against the requests sent (and the requests read are
        answered); without it, nothing."""
        if self._strict is not None:
            self._strict.sent(message)

    @property
    @exclusive
    def line(self) -> int:
        """Lines completed so far (blank and oversized lines included)."""
        return self._framer._line

    @property
    @exclusive
    def buffered(self) -> int:
        """Bytes held for the current partial line."""
        return self._framer._buffered

    @property
    @exclusive
    def max_frame_bytes(self) -> int:
        return self._framer._max

    @exclusive
    def __repr__(self) -> str:
        framer = self._framer
        return f"FrameDecoder(max_frame_bytes={framer._max}, line={framer._line}, buffered={framer._buffered})"
