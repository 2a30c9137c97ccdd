"""The JSON-RPC envelope (DESIGN 5): classify, validate, lazy fields, batches; ``decode`` and
``encode``.

The frame is parsed once with orjson; the parsed dict is kept inside the ``Message`` for the lazy
fields (``id``, ``method``, ``session_id``, ...). ``params`` / ``result`` / ``error`` / ``to_dict()``
re-parse ``raw`` so every call returns fresh objects. Positions of -32600 errors are located in
the frame by the scanner on the error path only.

Mirror of ``rust/message.rs`` (and of the ``Message`` / ``decode`` / ``encode`` bindings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union, cast

import orjson

from ..batch import Batch
from ..errors import DecodeError as PyDecodeError
from . import encoder as _encoder
from .error import (
    ARRAY,
    BOOLEAN,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    DecodeError,
    describe_value,
    to_python,
)
from .scanner import array_items, find_member, parse_document, parse_exact, skip_ws, to_bytes

__all__ = ["Message", "message_or_none", "explain", "decode_frame", "decode_value", "decode", "encode"]

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
ERROR = "error"

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_MISSING: Any = object()
_orjson_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def _valid_id(v: Any) -> bool:
    """A string, null, or an integer lexeme in the signed 64-bit range."""
    t = type(v)
    return t is str or v is None or (t is int and _I64_MIN <= v <= _I64_MAX)


def _type_name(v: Any) -> str:
    t = type(v)
    if t is dict:
        return OBJECT
    if t is list:
        return ARRAY
    if t is str:
        return STRING
    if t is bool:
        return BOOLEAN
    if v is None:
        return NULL
    return NUMBER


def explain(data: bytes, start: int, obj: Dict[str, Any]) -> DecodeError:
    """The first failing rule of DESIGN 5 for the object whose `{` is at `start` in `data`."""

    def value(container_start: int, key: str) -> tuple[str, int]:
        found = find_member(data, container_start, key)
        assert found is not None
        ty, s, e = found
        return describe_value(data, ty, s, e), s

    invalid = DecodeError.invalid
    if "jsonrpc" not in obj:
        return invalid("missing_jsonrpc", 'expected "jsonrpc": "2.0", found no "jsonrpc" member', start)
    jr = obj["jsonrpc"]
    if type(jr) is not str or jr != "2.0":
        d, p = value(start, "jsonrpc")
        return invalid("invalid_jsonrpc", f'expected "jsonrpc": "2.0", found {d}', p)
    if "method" in obj:
        if type(obj["method"]) is not str:
            d, p = value(start, "method")
            return invalid("invalid_method", f'expected "method" to be a string, found {d}', p)
        if "id" in obj and not _valid_id(obj["id"]):
            d, p = value(start, "id")
            return invalid("invalid_id", f'expected "id" to be a string, an integer or null, found {d}', p)
        params = obj.get("params")
        if params is not None and type(params) is not dict and type(params) is not list:
            d, p = value(start, "params")
            return invalid("invalid_params", f'expected "params" to be an object, an array or null, found {d}', p)
        raise AssertionError("explain() called for a valid message")  # pragma: no cover
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        return invalid("result_and_error", 'expected only one of "result" and "error", found both', start)
    if not has_result and not has_error:
        return invalid("missing_method", 'expected a "method", "result" or "error" member, found none', start)
    if "id" not in obj:
        return invalid("missing_id", 'expected an "id" member in a response, found none', start)
    if not _valid_id(obj["id"]):
        d, p = value(start, "id")
        return invalid("invalid_id", f'expected "id" to be a string, an integer or null, found {d}', p)
    if has_error:
        err = obj["error"]
        d, estart = value(start, "error")
        if type(err) is not dict:
            return invalid("invalid_error", f'expected "error" to be an object, found {d}', estart)
        if "code" not in err:
            return invalid("invalid_error", 'expected "error.code" to be an integer, found none', estart)
        code = err["code"]
        if type(code) is not int or not _I64_MIN <= code <= _I64_MAX:
            d, p = value(estart, "code")
            return invalid("invalid_error", f'expected "error.code" to be an integer, found {d}', p)
        if "message" not in err:
            return invalid("invalid_error", 'expected "error.message" to be a string, found none', estart)
        if type(err["message"]) is not str:
            d, p = value(estart, "message")
            return invalid("invalid_error", f'expected "error.message" to be a string, found {d}', p)
    raise AssertionError("explain() called for a valid message")  # pragma: no cover


class _MessageSlots:
    """The storage of a Message: plain slots, filled by plain stores while the Message is built
    (then the object's class becomes Message, which refuses every attribute store)."""

    __slots__ = {
        "_raw": "The frame's bytes without the line ending.",
        "_kind": '"request", "notification", "response" or "error".',
        "_line": "Stream line number from a FrameDecoder, else None.",
        "_id": "The id (str, int or None; None for notifications).",
        "_method": "The method name, or None for responses.",
        "_session_id": "params.sessionId when it is a string, else None.",
        "_update_kind": "params.update.sessionUpdate when it is a string, else None.",
        "_tool_call_id": "params.update.toolCallId when it is a string, else None.",
        # Weak references to messages, as the native Message allows (caches keyed by message).
        "__weakref__": None,
    }
    # The slots' types (annotations only: no class attribute, nothing at run time).
    _raw: bytes
    _kind: str
    _line: Optional[int]
    _id: Union[str, int, None]
    _method: Optional[str]
    _session_id: Optional[str]
    _update_kind: Optional[str]
    _tool_call_id: Optional[str]


class Message(_MessageSlots):
    """One decoded JSON-RPC message: immutable, hashable and equal by ``raw``.

    ``kind`` is ``"request"``, ``"notification"``, ``"response"`` or ``"error"``; ``raw`` the
    frame's bytes without the line ending; ``line`` the stream line number from a FrameDecoder
    (else None). ``id``, ``method``, ``session_id``, ``update_kind`` and ``tool_call_id`` are read
    without building new objects; ``params``, ``result``, ``error`` and ``to_dict()`` build fresh
    Python objects on every call.
    """

    # The envelope fields are extracted when the frame is decoded and the parsed tree is dropped:
    # holding every frame's dict tree alive costs far more (in garbage-collector work) than the few
    # lookups, and `params` / `result` / `error` / `to_dict()` re-parse `raw` anyway. The values
    # live in the private slots of _MessageSlots; the public names are those slots' own member
    # descriptors (a read is a C slot load, several times cheaper than a property). A Message is
    # built as a _MessageSlots (plain slot stores) whose class is then switched to Message, whose
    # __setattr__ / __delattr__ refuse everything: setting any attribute raises AttributeError.
    __slots__ = ()

    if TYPE_CHECKING:
        # What the member descriptors below are to a type checker: read-only attributes.
        @property
        def raw(self) -> bytes: ...
        @property
        def kind(self) -> str: ...
        @property
        def line(self) -> Optional[int]: ...
        @property
        def id(self) -> Union[str, int, None]: ...
        @property
        def method(self) -> Optional[str]: ...
        @property
        def session_id(self) -> Optional[str]: ...
        @property
        def update_kind(self) -> Optional[str]: ...
        @property
        def tool_call_id(self) -> Optional[str]: ...
    else:
        raw = _MessageSlots._raw
        kind = _MessageSlots._kind
        line = _MessageSlots._line
        id = _MessageSlots._id
        method = _MessageSlots._method
        session_id = _MessageSlots._session_id
        update_kind = _MessageSlots._update_kind
        tool_call_id = _MessageSlots._tool_call_id

    def __setattr__(self, name: str, value: Any) -> None:
        _refuse(name)

    def __delattr__(self, name: str) -> None:
        _refuse(name)

    def __new__(cls, *args: Any, **kwargs: Any) -> Message:  # noqa: PYI034 - it raises: no Message is made here
        raise TypeError("Message objects are created by acp_fast.decode() or a FrameDecoder")

    @property
    def params(self) -> Any:
        return self.to_dict().get("params")

    @property
    def result(self) -> Any:
        return self.to_dict().get("result")

    @property
    def error(self) -> Any:
        return self.to_dict().get("error")

    # The signature is typed by a comment so that it reads as the native one (tests/test_api.py).
    def to_dict(self, /):  # type: () -> Dict[str, Any]
        """The whole message as a fresh dict (re-parsed from ``raw``)."""
        return parse_exact(self.raw)  # type: ignore[return-value]  # raw is a valid message object: never an error

    def __bytes__(self) -> bytes:
        return self.raw

    def __eq__(self, other: object) -> bool:
        if type(other) is Message:
            return self._raw == other._raw
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if type(other) is Message:
            return self._raw != other._raw
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._raw)

    def __repr__(self) -> str:
        kind = self._kind
        parts = [f"kind={kind!r}"]
        if kind in (REQUEST, NOTIFICATION):
            parts.append(f"method={self.method!r}")
        if kind != NOTIFICATION:
            parts.append(f"id={self.id!r}")
        return f"Message({', '.join(parts)})"

    def __reduce__(self) -> Any:
        return (decode, (self.raw,))


def _refuse(name: str) -> None:
    if hasattr(Message, name):
        raise AttributeError("readonly attribute")
    raise AttributeError(f"'Message' object has no attribute '{name}'")


_new = object.__new__
_encoder._message_type = Message


def message_or_none(raw: bytes, obj: Dict[str, Any], line: Optional[int]) -> Optional[Message]:
    """The Message for a valid message object, or None when some rule of DESIGN 5 fails (then
    `explain` says which, with its position). One pass over the object: the checks and the lazy
    fields read the same few members (the hot path of `decode` and `FrameDecoder.feed`); the
    parsed object itself is not kept."""
    if obj.get("jsonrpc") != "2.0":
        return None
    get = obj.get
    session_id = update_kind = tool_call_id = None
    params = get("params")
    if type(params) is dict:
        value = params.get("sessionId")
        if type(value) is str:
            session_id = value
        update = params.get("update")
        if type(update) is dict:
            value = update.get("sessionUpdate")
            if type(value) is str:
                update_kind = value
            value = update.get("toolCallId")
            if type(value) is str:
                tool_call_id = value
    method = get("method", _MISSING)
    ident = get("id", _MISSING)
    if method is not _MISSING:
        if type(method) is not str:
            return None
        if params is not None and type(params) is not dict and type(params) is not list:
            return None
        if ident is _MISSING:
            kind = NOTIFICATION
            ident = None
        else:
            kind = REQUEST
    else:
        method = None
        if "result" in obj:
            if "error" in obj:
                return None
            kind = RESPONSE
        elif "error" in obj:
            err = obj["error"]
            if type(err) is not dict or "code" not in err or "message" not in err:
                return None
            code = err["code"]
            if type(code) is not int or not _I64_MIN <= code <= _I64_MAX or type(err["message"]) is not str:
                return None
            kind = ERROR
        else:
            return None
        if ident is _MISSING:
            return None
    if ident is not None:
        t = type(ident)
        if t is not str and (t is not int or not _I64_MIN <= ident <= _I64_MAX):
            return None
    m = _MessageSlots()
    m._raw = raw
    m._kind = kind
    m._line = line
    m._id = ident
    m._method = method
    m._session_id = session_id
    m._update_kind = update_kind
    m._tool_call_id = tool_call_id
    m.__class__ = Message
    return m  # type: ignore[return-value]  # a Message since the line above (no cast: the hot path)


def _decode_batch(frame: bytes, value: List[Any], line: Optional[int]) -> Union[Batch, PyDecodeError]:
    start = skip_ws(frame, 0)
    if not value:
        err = DecodeError.invalid(
            "empty_batch", "expected at least one message in the batch, found an empty array", start
        )
        return to_python(err, frame, line=line, raw=frame)
    entries: List[Union[Message, PyDecodeError]] = []
    for (ty, s, e), elem in zip(array_items(frame, start), value):
        raw = frame[s:e]
        if type(elem) is dict:
            m = message_or_none(raw, elem, line)
            if m is not None:
                entries.append(m)
                continue
            err = explain(frame, s, elem)
        else:
            err = DecodeError.invalid("not_an_object", f"expected a JSON-RPC message object, found {ty}", s)
        entries.append(to_python(err, frame, line=line, raw=raw))
    return Batch(entries, raw=frame, line=line)


def decode_frame(frame: bytes, line: Optional[int]) -> Union[Message, Batch, PyDecodeError]:
    """Decode one frame (no line ending, no newline inside): a Message, a Batch, or the error
    (returned, not raised)."""
    try:
        value = _orjson_loads(frame)
    except _JSONDecodeError:
        value = parse_document(frame)
        if type(value) is DecodeError:
            return to_python(value, frame, line=line, raw=frame)
    if type(value) is dict:
        m = message_or_none(frame, value, line)
        if m is not None:
            return m
    return decode_value(frame, value, line)


def decode_value(frame: bytes, value: Any, line: Optional[int]) -> Union[Message, Batch, PyDecodeError]:
    """The result for a frame whose JSON value is `value` (the slow path of decode_frame: batches
    and -32600 errors; a valid message object is built too)."""
    if type(value) is dict:
        m = message_or_none(frame, value, line)
        if m is not None:
            return m
        err = explain(frame, skip_ws(frame, 0), value)
    elif type(value) is list:
        return _decode_batch(frame, value, line)
    else:
        err = DecodeError.invalid(
            "not_an_object",
            f"expected a JSON-RPC message object or a batch array, found {_type_name(value)}",
            skip_ws(frame, 0),
        )
    return to_python(err, frame, line=line, raw=frame)


def one_frame(data: Any, caller: str) -> bytes:
    """A frame given on its own (bytes-like or str, with or without its line ending) as bytes
    without its line ending; raises the DecodeError of another type or of an embedded newline."""
    if type(data) is not bytes:
        data = to_bytes(data, caller)
        if type(data) is DecodeError:
            raise to_python(data, None)
    if data and data[-1] == 10:  # \n
        data = data[:-1]
    if data and data[-1] == 13:  # \r
        data = data[:-1]
    if b"\n" in data:
        nl = data.find(b"\n")
        err = DecodeError.json("embedded_newline", "expected one frame per line, found a newline", nl)
        raise to_python(err, data, raw=data)
    return cast(bytes, data)


# decode and encode are typed by comments so that their signatures read as the native ones.
def decode(line):  # type: (Any) -> Union[Message, Batch]
    """``acp_fast.decode``: one frame (with or without its line ending) to a Message or a Batch;
    raises DecodeError."""
    data = one_frame(line, "decode")
    result = decode_frame(data, None)
    if type(result) is PyDecodeError:
        raise result
    return result  # type: ignore[return-value]  # not the DecodeError: `type(x) is` leaves the other types as they were


def encode(message):  # type: (Union[Message, Batch, Dict[str, Any], List[Any]]) -> bytes
    """``acp_fast.encode``: a Message, a dict or a list (batch) as one frame ending in ``\\n``."""
    if type(message) is Message:
        return message._raw + b"\n"
    if isinstance(message, list):
        if isinstance(message, Batch) and message.raw and message.is_unchanged():
            return message.raw + b"\n"
        return _encoder.dumps(message) + b"\n"
    if isinstance(message, dict):
        return _encoder.dumps(message) + b"\n"
    raise TypeError(f"expected a Message, a dict or a list, found {type(message).__name__}")
