"""Type stubs for the compiled core, ``acp_fast._native`` (the fallback ``acp_fast._fallback``
exposes the same names with the same signatures)."""

from typing import Any, Dict, Final, Iterator, List, Optional, Tuple, Union, final

from .batch import Batch
from .errors import DecodeError

BACKEND: Final[str]
"""``"rust"``."""
__version__: Final[str]
build_profile: Final[str]
"""``"release"`` or ``"debug"``; benchmarks refuse a debug build."""
DEFAULT_MAX_FRAME_BYTES: Final[int]
"""The default ``max_frame_bytes`` of :class:`Framer`, :class:`FrameDecoder` and
:class:`ToolCallStore`: 67108864 (64 MiB)."""
MAX_FRAME_BYTES: Final[int]
"""The largest ``max_frame_bytes`` accepted: 4294967294 (frame offsets are 32-bit)."""

_Buffer = Union[bytes, bytearray, memoryview, str]
_Line = Tuple[int, bytes]
_Frame = Union["Message", Batch]
_FeedResult = Union["Message", Batch, DecodeError]

def loads(data: _Buffer, /) -> Any:
    """Parse one JSON document into dict / list / str / int / float / bool / None.

    Integers of any size come back exact. Raises :class:`acp_fast.DecodeError` (a
    ``json.JSONDecodeError``) with the byte position, line and column of the first problem."""

def dumps(obj: Any, /) -> bytes:
    """Compact UTF-8 JSON: no spaces, no trailing newline, non-ASCII written as is, keys in
    insertion order, integers of any size. NaN / Infinity, non-str keys and unsupported objects
    raise :class:`acp_fast.EncodeError` naming the path (``$.params.items[3]``). ``Message`` and
    ``orjson.Fragment`` values are written as their raw JSON."""

def decode(line: _Buffer, /) -> _Frame:
    """Decode one frame (with or without its ``\\n`` / ``\\r\\n``) into a :class:`Message`, or a
    :class:`Batch` for a batch array. Raises :class:`acp_fast.DecodeError`: ``code == -32700`` for
    invalid JSON, ``-32600`` for an invalid JSON-RPC message or an empty batch."""

def encode(message: Union["Message", Batch, dict, list], /) -> bytes:
    """The frame as bytes ending in one ``\\n``. ``encode(decode(line))`` gives back the line."""

@final
class Message:
    """One JSON-RPC 2.0 message. Immutable, hashable, equal by ``raw``.

    The routing fields are read without building the object tree; ``params``, ``result``,
    ``error`` and :meth:`to_dict` build fresh Python objects on every access."""

    @property
    def kind(self) -> str:
        """``"request"``, ``"notification"``, ``"response"`` or ``"error"``."""
    @property
    def id(self) -> Union[str, int, None]:
        """The id (None for notifications and for ``"id": null``)."""
    @property
    def method(self) -> Optional[str]: ...
    @property
    def session_id(self) -> Optional[str]:
        """``params.sessionId`` when it is a string."""
    @property
    def update_kind(self) -> Optional[str]:
        """``params.update.sessionUpdate`` when it is a string."""
    @property
    def tool_call_id(self) -> Optional[str]:
        """``params.update.toolCallId`` when it is a string."""
    @property
    def raw(self) -> bytes:
        """The frame's bytes without the line ending."""
    @property
    def line(self) -> Optional[int]:
        """The 1-based stream line number when the message came from a :class:`FrameDecoder`."""
    @property
    def params(self) -> Any: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> Any: ...
    def to_dict(self) -> Any:
        """The whole message as fresh Python objects."""
    def __bytes__(self) -> bytes: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Framer:
    """Splits a byte stream into lines: what :class:`FrameDecoder` does before it parses them.

    Feed it bytes in any pieces; ``feed`` returns the events of every line completed, in order
    (any split of the same bytes gives the same events), ``finish`` those of a last line without
    a newline. Memory stays bounded by ``max_frame_bytes``.

    * By default an event is ``(line, data)`` for each complete non-blank line, ``line`` its
      1-based number (blank lines are counted) and ``data`` its bytes without ``\n`` /
      ``\r\n``; a line longer than ``max_frame_bytes`` is the :class:`DecodeError` a
      :class:`FrameDecoder` gives (kind ``frame_too_large``, ``line`` set), as soon as it passes
      the limit, and its bytes are skipped up to the next newline.
    * ``keepends=True``: every line exactly as it was, line ending kept and blank lines included,
      so the events give back the stream byte for byte; an oversized line is ``(line, n)``, ``n``
      the number of bytes dropped (its line ending included), once it has ended.
    * ``joined=True`` (implies ``keepends``): the consecutive complete lines of one feed come as
      one event ``(first line, data)``, what a relay forwards in one write."""

    def __init__(self, *, max_frame_bytes: int = 67108864, keepends: bool = False, joined: bool = False) -> None: ...
    def feed(self, data: _Buffer, /) -> List[Union[_Line, Tuple[int, int], DecodeError]]: ...
    def finish(self) -> List[Union[_Line, Tuple[int, int]]]:
        """End of input: the event of a last line that has no newline."""
    @property
    def line(self) -> int:
        """Lines completed so far (blank and oversized ones included)."""
    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line (at most ``max_frame_bytes``)."""
    @property
    def max_frame_bytes(self) -> int: ...

@final
class FrameDecoder:
    """Splits a byte stream into frames and decodes each one.

    Feed it bytes in any pieces; every complete line comes back, in order, as a
    :class:`Message`, a :class:`Batch` or a :class:`DecodeError` (with ``line``, ``position`` and
    ``raw``). Blank lines are skipped but counted; ``\\r\\n`` endings are accepted; a line longer
    than ``max_frame_bytes`` yields one error and the decoder resynchronises at the next newline."""

    def __init__(self, *, max_frame_bytes: int = 67108864) -> None: ...
    def feed(self, data: _Buffer, /) -> List[_FeedResult]: ...
    def finish(self) -> List[_FeedResult]:
        """End of input: decode a last line that has no newline."""
    @property
    def line(self) -> int:
        """Lines completed so far (blank ones included)."""
    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line (at most ``max_frame_bytes``)."""
    @property
    def max_frame_bytes(self) -> int: ...

@final
class Change:
    """A light change event returned by :meth:`ToolCallStore.apply` / ``feed`` (DESIGN §7.9):
    which session, what (``target``: ``"tool_call"``, ``"terminal"``, ``"plan"``,
    ``"permission"``, ``"session"``, ``"protocol"``), which id, and ``action``."""

    def __init__(self, session_id: Optional[str], target: str, id: Any, action: str, tool_call_id: Optional[str]) -> None: ...
    @property
    def session_id(self) -> Optional[str]: ...
    @property
    def target(self) -> str: ...
    @property
    def id(self) -> Any: ...
    @property
    def action(self) -> str: ...
    @property
    def tool_call_id(self) -> Optional[str]: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

_Frame = Union[Message, List[Any], _Buffer, str, Dict[str, Any]]

class ToolCallStore:
    """The current state of every tool call, terminal, plan and permission request, per session,
    kept from frames without building Python objects (API.md "Tool-call state", DESIGN §7).
    Records are built only when asked for (``get``, ``tool_calls``, ``snapshot``, ...)."""

    def __init__(
        self, protocol_version: Optional[int] = None, *, max_tool_calls: Optional[int] = None, max_frame_bytes: int = 67108864
    ) -> None: ...
    def apply(self, frame: _Frame, *, source: Optional[str] = None) -> Any:
        """Apply one frame: a :class:`Change` or None (a list for a batch); raises DecodeError."""
    def feed(self, data: _Buffer, *, changes: bool = True, source: Optional[str] = None) -> List[Any]:
        """Apply every complete line: the Changes (``changes=True``) and DecodeErrors, in order.
        ``source`` (``"agent"``, ``"client"`` or None) as for :meth:`apply`."""
    def finish(self, *, changes: bool = True, source: Optional[str] = None) -> List[Any]: ...
    def get(self, session_id: str, tool_call_id: str) -> Optional[Dict[str, Any]]: ...
    def tool_calls(self, session_id: str) -> Dict[str, Dict[str, Any]]: ...
    def snapshot(self) -> Dict[str, Dict[str, Dict[str, Any]]]: ...
    def terminal(self, session_id: str, terminal_id: str) -> Optional[Dict[str, Any]]: ...
    def terminals(self, session_id: str) -> Dict[str, Dict[str, Any]]: ...
    def plans(self, session_id: str) -> Dict[str, Dict[str, Any]]: ...
    def permission(self, request_id: Union[str, int, None]) -> Optional[Dict[str, Any]]: ...
    def permissions(self, session_id: str) -> List[Dict[str, Any]]: ...
    def pending_permissions(self, session_id: str) -> List[Dict[str, Any]]: ...
    def cancel_responses(self, session_id: str) -> List[bytes]:
        """The ``cancelled`` responses a client owes after ``session/cancel``, as frames."""
    def state(self) -> Dict[str, Any]:
        """The whole state as a JSON-compatible dict (the checkpoint)."""
    def to_json(self) -> bytes: ...
    @classmethod
    def from_json(cls, data: Union[bytes, str]) -> "ToolCallStore": ...
    @property
    def protocol_version(self) -> int: ...
    @property
    def negotiated_version(self) -> Optional[int]: ...
    @property
    def max_tool_calls(self) -> Optional[int]: ...
    @property
    def evicted(self) -> int: ...
    @property
    def line(self) -> int: ...
    def __len__(self) -> int: ...
