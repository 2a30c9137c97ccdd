"""Type stubs for the compiled core, ``acp_fast._native`` (the fallback ``acp_fast._fallback``
exposes the same names with the same signatures)."""

from typing import Any, Final, List, Optional, Union, final

from .batch import Batch
from .errors import DecodeError

BACKEND: Final[str]
"""``"rust"``."""
__version__: Final[str]
build_profile: Final[str]
"""``"release"`` or ``"debug"``; benchmarks refuse a debug build."""

_Buffer = Union[bytes, bytearray, memoryview, str]
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
