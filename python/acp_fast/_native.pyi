"""Type stubs for the compiled core, ``acp_fast._native`` (the fallback ``acp_fast._fallback``
exposes the same names with the same signatures). ``acp_fast/__init__.py`` imports the public
names from here for type checkers, whichever backend runs; ``make lint`` checks this file against
the built module with stubtest."""

from typing import Any, Dict, Final, Iterator, List, Optional, Protocol, Sequence, Tuple, TypeAlias, Union, final

from .batch import Batch
from .errors import DecodeError
from .problems import SchemaProblem

__all__ = [
    "BACKEND",
    "__version__",
    "build_profile",
    "DEFAULT_MAX_FRAME_BYTES",
    "MAX_FRAME_BYTES",
    "SCHEMA_DRAFTS",
    "ENTITY_TARGETS",
    "loads",
    "dumps",
    "decode",
    "encode",
    "Message",
    "Framer",
    "FrameDecoder",
    "ToolCallStore",
    "Change",
    "validate_schema",
    "SchemaValidator",
    "FrameColumns",
    "ToolCallColumns",
    "Coalescer",
]

BACKEND: Final[str]
"""Which backend runs: ``"rust"``, the compiled core, or ``"python"``, the pure-Python fallback
(``ACP_FAST_BACKEND=python`` forces it)."""
__version__: Final[str]
"""The installed distribution's version."""
build_profile: Final[str]
"""``"release"`` or ``"debug"``; benchmarks refuse a debug build."""
DEFAULT_MAX_FRAME_BYTES: Final[int]
"""The default ``max_frame_bytes`` of [`Framer`][acp_fast.Framer], [`FrameDecoder`][acp_fast.FrameDecoder] and
[`ToolCallStore`][acp_fast.ToolCallStore]: 67108864 (64 MiB)."""
MAX_FRAME_BYTES: Final[int]
"""The largest ``max_frame_bytes`` accepted: 4294967294 (frame offsets are 32-bit)."""
SCHEMA_DRAFTS: Final[Tuple[str, ...]]
"""The ACP v2 drafts the schema checks know (``draft=``), newest first: ``('latest', 'alpha.5')``."""
ENTITY_TARGETS: Final[Dict[str, Optional[str]]]
"""The entity targets of the update table (``ToolCallStore.entities``), in table order, each with
its id member (None: one value per session): ``{'userMessage': 'messageId', ..., 'usage': None}``."""

_Buffer: TypeAlias = Union[bytes, bytearray, memoryview, str]
_Line: TypeAlias = Tuple[int, bytes]
_Frame: TypeAlias = Union[Message, Batch]
_FeedResult: TypeAlias = Union[Message, Batch, DecodeError]
_Id: TypeAlias = Union[str, int, None]

def loads(data: _Buffer) -> Any:
    """Parse one JSON document into dict / list / str / int / float / bool / None.

    Integers of any size come back exact. Raises [`acp_fast.DecodeError`][acp_fast.DecodeError] (a
    ``json.JSONDecodeError``) with the byte position, line and column of the first problem."""

def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON: no spaces, no trailing newline, non-ASCII written as is, keys in
    insertion order, integers of any size. NaN / Infinity, non-str keys and unsupported objects
    raise [`acp_fast.EncodeError`][acp_fast.EncodeError] naming the path (``$.params.items[3]``). ``Message`` and
    ``orjson.Fragment`` values are written as their raw JSON."""

def decode(line: _Buffer) -> _Frame:
    """Decode one frame (with or without its ``\\n`` / ``\\r\\n``) into a [`Message`][acp_fast.Message], or a
    [`Batch`][acp_fast.Batch] for a batch array. Raises [`acp_fast.DecodeError`][acp_fast.DecodeError]: ``code == -32700`` for
    invalid JSON, ``-32600`` for an invalid JSON-RPC message or an empty batch."""

def encode(message: Union[Message, Batch, Dict[str, Any], List[Any]]) -> bytes:
    """The frame as bytes ending in one ``\\n``. ``encode(decode(line))`` gives back the line."""

@final
class Message:
    """One JSON-RPC 2.0 message. Immutable, hashable, equal by ``raw``.

    The routing fields are read without building the object tree; ``params``, ``result``,
    ``error`` and [`to_dict`][acp_fast.Message.to_dict] build fresh Python objects on every access."""

    @property
    def kind(self) -> str:
        """``"request"``, ``"notification"``, ``"response"`` or ``"error"``."""
    @property
    def id(self) -> _Id:
        """The id (None for notifications and for ``"id": null``)."""
    @property
    def method(self) -> Optional[str]:
        """The method name, or None for responses."""
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
        """The 1-based stream line number when the message came from a [`FrameDecoder`][acp_fast.FrameDecoder]."""
    @property
    def params(self) -> Any:
        """``params`` as fresh Python objects (None when absent)."""
    @property
    def result(self) -> Any:
        """``result`` as fresh Python objects (None when absent)."""
    @property
    def error(self) -> Any:
        """``error`` as fresh Python objects (None when absent)."""
    def to_dict(self) -> Dict[str, Any]:
        """The whole message as fresh Python objects."""
    def __bytes__(self) -> bytes:
        """``raw``."""
    def __eq__(self, other: object, /) -> bool:
        """Equal to another [`Message`][acp_fast.Message] with the same ``raw``."""
    def __hash__(self) -> int:
        """The hash of ``raw``."""

@final
class Coalescer:
    """Holds the agent's ``tool_call_update`` frames per (session, tool call) for at most ``ms``
    milliseconds and forwards one frame with their merged effect (docs/API.md "Coalescing")."""

    def __new__(
        cls,
        ms: float = 50.0,
        *,
        protocol: Optional[int] = None,
        max_held: int = 1000,
        max_held_bytes: int = 16777216,
    ) -> Coalescer:
        """A coalescer holding each tool call's updates at most ``ms`` milliseconds."""
    def push(self, data: bytes, now: Optional[float] = None, *, tracked: bool = True) -> bytes:
        """The lines to write now for ``data`` (whole lines as the agent sent them)."""
    def due(self, now: Optional[float] = None) -> bytes:
        """The held updates due at ``now``."""
    def flush(self) -> bytes:
        """Everything held, oldest first."""
    @property
    def deadline(self) -> Optional[float]:
        """When the oldest held update is due, None when nothing is held."""
    @property
    def protocol(self) -> Optional[int]:
        """The editor's protocol version (1 or 2), None until known."""
    @protocol.setter
    def protocol(self, protocol: Optional[int]) -> None:
        """Set the editor's protocol version once it is known."""
    @property
    def ms(self) -> float:
        """How long an update is held at most, in milliseconds."""
    @property
    def held(self) -> int:
        """Tool calls held."""
    @property
    def held_bytes(self) -> int:
        """Bytes held."""
    @property
    def updates_in(self) -> int:
        """Updates held so far."""
    @property
    def frames_out(self) -> int:
        """Lines released so far."""

@final
class Framer:
    """Splits a byte stream into lines: what [`FrameDecoder`][acp_fast.FrameDecoder] does before it parses them.

    Feed it bytes in any pieces; ``feed`` returns the events of every line completed, in order
    (any split of the same bytes gives the same events), ``finish`` those of a last line without
    a newline. Memory stays bounded by ``max_frame_bytes``.

    * By default an event is ``(line, data)`` for each complete non-blank line, ``line`` its
      1-based number (blank lines are counted) and ``data`` its bytes without ``\\n`` /
      ``\\r\\n``; a line longer than ``max_frame_bytes`` is the [`DecodeError`][acp_fast.DecodeError] a
      [`FrameDecoder`][acp_fast.FrameDecoder] gives (kind ``frame_too_large``, ``line`` set), as soon as it passes
      the limit, and its bytes are skipped up to the next newline.
    * ``keepends=True``: every line exactly as it was, line ending kept and blank lines included,
      so the events give back the stream byte for byte; an oversized line is ``(line, n)``, ``n``
      the number of bytes dropped (its line ending included), once it has ended.
    * ``joined=True`` (implies ``keepends``): the consecutive complete lines of one feed come as
      one event ``(first line, data)``, what a relay forwards in one write.
    * ``heads=True`` (implies ``keepends``): an oversized line is ``(line, n, head)``, ``head`` its
      first 4,096 bytes (without the line ending): enough, for a JSON-RPC frame, to find the
      ``id`` of a request to answer (``acp-fast proxy`` does)."""

    def __new__(
        cls,
        *,
        max_frame_bytes: Optional[int] = 67108864,
        keepends: bool = False,
        joined: bool = False,
        heads: bool = False,
    ) -> Framer:
        """A framer holding at most ``max_frame_bytes`` of a partial line, in the reading chosen."""
    def feed(self, data: _Buffer) -> List[Union[_Line, Tuple[int, int], Tuple[int, int, bytes], DecodeError]]:
        """Feed bytes; returns the events of every line completed by them, in order."""
    def finish(self) -> List[Union[_Line, Tuple[int, int], Tuple[int, int, bytes]]]:
        """End of input: the event of a last line that has no newline."""
    @property
    def line(self) -> int:
        """Lines completed so far (blank and oversized ones included)."""
    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line (at most ``max_frame_bytes``)."""
    @property
    def max_frame_bytes(self) -> int:
        """The limit given to the constructor."""

@final
class FrameDecoder:
    """Splits a byte stream into frames and decodes each one.

    Feed it bytes in any pieces; every complete line comes back, in order, as a
    [`Message`][acp_fast.Message], a [`Batch`][acp_fast.Batch] or a [`DecodeError`][acp_fast.DecodeError] (with ``line``, ``position`` and
    ``raw``). Blank lines are skipped but counted; ``\\r\\n`` endings are accepted; a line longer
    than ``max_frame_bytes`` yields one error and the decoder resynchronises at the next newline."""

    def __new__(
        cls,
        *,
        max_frame_bytes: Optional[int] = 67108864,
        strict_schema: Union[bool, int, None] = False,
        unstable: bool = False,
        draft: Optional[str] = None,
    ) -> FrameDecoder:
        """A decoder holding at most ``max_frame_bytes`` of a partial line. With ``strict_schema``
        (True: the protocol version of the ``initialize`` answer, 1 until then; or 1 / 2), every
        frame is also checked as [`SchemaValidator`][acp_fast.SchemaValidator] does, and one with errors comes out as
        a [`DecodeError`][acp_fast.DecodeError] of kind ``schema`` (code -32602) whose ``problems`` lists them.
        ``unstable`` accepts the unstable surface; ``draft`` names the v2 draft checked against
        (``'latest'``, the default, or ``'alpha.5'``, the draft of the Python SDK 1.0.0rc3)."""
    def feed(self, data: _Buffer) -> List[_FeedResult]:
        """Feed bytes; returns the results of every line completed by them, in order."""
    def finish(self) -> List[_FeedResult]:
        """End of input: decode a last line that has no newline."""
    def sent(self, message: Union[_Buffer, Message, Dict[str, Any], List[Any]]) -> None:
        """With ``strict_schema``: a frame sent the other way on the same connection, so that the
        responses read are checked against the requests sent (and the requests read are
        answered); without it, nothing."""
    @property
    def line(self) -> int:
        """Lines completed so far (blank ones included)."""
    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line (at most ``max_frame_bytes``)."""
    @property
    def max_frame_bytes(self) -> int:
        """The longest line accepted, in bytes (line ending excluded)."""

@final
class Change:
    """A light change event returned by [`ToolCallStore.apply`][acp_fast.ToolCallStore.apply] / ``feed`` (DESIGN §7.9):
    which session, what (``target``: ``"tool_call"``, ``"terminal"``, ``"plan"``,
    ``"permission"``, ``"session"``, ``"protocol"``, ``"request"``, ``"update"``, ``"file"``, or
    an entity target such as ``"agentMessage"``), which id, and ``action``. Immutable,
    hashable, equal when all five fields are equal; ``tuple(change)`` gives the five."""

    def __new__(
        cls, session_id: Optional[str], target: str, id: _Id, action: str, tool_call_id: Optional[str]
    ) -> Change:
        """A change event with these fields."""
    @property
    def session_id(self) -> Optional[str]:
        """The session the change belongs to (None for ``"protocol"``)."""
    @property
    def target(self) -> str:
        """What changed: ``"tool_call"``, ``"terminal"``, ``"plan"``, ``"permission"``,
        ``"session"``, ``"protocol"``, ``"request"``, ``"update"``, ``"file"`` or an entity
        target (docs/API.md "Change")."""
    @property
    def id(self) -> _Id:
        """The id of what changed (tool call, terminal, plan, entity or request id; the path for
        ``"file"``; the protocol version for ``"protocol"``; the kind for ``"update"``; None for
        ``"session"`` and an entity target without ids)."""
    @property
    def action(self) -> str:
        """What happened to it (``"created"``, ``"updated"``, ``"appended"``, ... ``"closed"``,
        ``"replaying"``, ``"replayed"`` for sessions)."""
    @property
    def tool_call_id(self) -> Optional[str]:
        """The tool call concerned, for tool calls and permission requests."""
    def __iter__(self) -> Iterator[Any]:
        """The five fields in order."""
    def __len__(self) -> int:
        """5."""
    def __eq__(self, other: object, /) -> bool:
        """Equal to another [`Change`][acp_fast.Change] with the same fields."""
    def __hash__(self) -> int:
        """The hash of the fields."""

_ApplyFrame: TypeAlias = Union[Message, List[Any], _Buffer, Dict[str, Any]]

@final
class ToolCallStore:
    """The current state of every tool call, terminal, plan and permission request, per session,
    kept from frames without building Python objects (docs/API.md "Tool-call state", DESIGN §7).
    Records are built only when asked for (``get``, ``tool_calls``, ``snapshot``, ...)."""

    def __new__(
        cls,
        protocol_version: Optional[int] = None,
        *,
        max_tool_calls: Optional[int] = 1000,
        max_frame_bytes: Optional[int] = 67108864,
        max_terminal_bytes: Optional[int] = 1048576,
        max_content_items: Optional[int] = 1000,
        max_plans: Optional[int] = 100,
        max_permissions: Optional[int] = 1000,
        max_updates: Optional[int] = 1000,
        max_terminals: Optional[int] = 1000,
        max_entities: Optional[int] = 1000,
        max_files: Optional[int] = 1000,
        max_content_bytes: Optional[int] = 1048576,
        max_sessions: Optional[int] = 1000,
        strict_schema: Union[bool, int, None] = False,
        unstable: bool = False,
        draft: Optional[str] = None,
        wrap_bare_content: bool = False,
    ) -> ToolCallStore:
        """An empty store: ``protocol_version`` 1 or 2 (None: the negotiated one, else 1);
        ``max_tool_calls`` bounds the tool calls kept across sessions (1000 by default, as
        ``acp-fast proxy``; None: every one), the finished ones dropped first; ``max_frame_bytes`` as for
        [`FrameDecoder`][acp_fast.FrameDecoder]; the bounds inside sessions (None: no bound): output bytes kept per
        terminal, content items per tool call, plans and permission records per session, unknown
        updates per session (the last ones; 0: none), terminals per session (the oldest exited
        dropped first), entities per target of a session, answered file requests per session (the
        last ones; 0: file requests are not tracked), bytes of content per tool call (its items'
        JSON text, the oldest dropped first, the newest kept whole); ``max_sessions`` bounds the
        sessions kept (1000 by default, as ``acp-fast proxy``; None: every one), the least recently
        active dropped whole. See docs/API.md "Bounds and checkpoints". ``strict_schema``,
        ``unstable`` and ``draft`` as for [`FrameDecoder`][acp_fast.FrameDecoder]: a frame (or batch entry) that fails the schema check is
        reported as a [`DecodeError`][acp_fast.DecodeError] of kind ``schema`` and not applied."""
    def apply(self, frame: _ApplyFrame, *, source: Optional[str] = None) -> Any:
        """Apply one frame (a Message, a Batch, bytes/str, a dict or a list of dicts): a
        [`Change`][acp_fast.Change] or None (a list for a batch); raises DecodeError for a bad frame.
        ``source`` is ``"agent"``, ``"client"`` or None (who sent the frame)."""
    def feed(
        self, data: _Buffer, *, changes: bool = True, source: Optional[str] = None
    ) -> List[Union[Change, DecodeError]]:
        """Apply every complete line: the Changes (``changes=True``) and DecodeErrors, in order.
        ``source`` (``"agent"``, ``"client"`` or None) as for [`apply`][acp_fast.ToolCallStore.apply]."""
    def finish(self, *, changes: bool = True, source: Optional[str] = None) -> List[Union[Change, DecodeError]]:
        """End of input: apply a last line that has no newline."""
    def get(self, session_id: str, tool_call_id: str) -> Optional[Dict[str, Any]]:
        """The tool call as a fresh dict in ACP wire shape, or None."""
    def tool_calls(self, session_id: str) -> Dict[str, Dict[str, Any]]:
        """``{toolCallId: record}`` of a session, in first-seen order."""
    def snapshot(self) -> Dict[str, Dict[str, Dict[str, Any]]]:
        """``{sessionId: {toolCallId: record}}`` of the sessions that hold tool calls."""
    def terminal(self, session_id: str, terminal_id: str) -> Optional[Dict[str, Any]]:
        """The terminal (``output`` as bytes), or None."""
    def terminals(self, session_id: str) -> Dict[str, Dict[str, Any]]:
        """``{terminalId: record}`` of a session, in first-seen order."""
    def plans(self, session_id: str) -> Dict[str, Dict[str, Any]]:
        """``{planId: record}`` of a session, in first-seen order."""
    def entities(self, session_id: str) -> Dict[str, Any]:
        """``{target: value}`` of a session: the targets of the schema's rules that the store
        applies as written (messages by ``messageId``, ``state``, ``usage``, ...); a target with
        ids holds ``{id: entity}``."""
    def agent_entities(self) -> Dict[str, Any]:
        """``{target: value}`` of the agent's own targets of the schema's rules (v2:
        ``authStatus``, from ``auth/status`` answers and ``auth/status_update``)."""
    def files(self, session_id: str) -> List[Dict[str, Any]]:
        """The answered ``fs/read_text_file`` / ``fs/write_text_file`` requests of a session
        (``max_files``), oldest first: ``{"op", "path", "line"?, "limit"?, "bytes", "error"?}``."""
    def replaying(self, session_id: str) -> bool:
        """Is the session's history being replayed (between a ``session/load``, or a
        ``session/resume`` with ``replayFrom``, and its answer)?"""
    def updates(self, session_id: str) -> List[Dict[str, Any]]:
        """The unknown updates kept for a session (``max_updates``), in arrival order."""
    def permission(self, request_id: _Id) -> Optional[Dict[str, Any]]:
        """The latest permission request with this id (``1`` and ``"1"`` differ): the pending one,
        else the last resolved one; None if there is none."""
    def permissions(self, session_id: str) -> List[Dict[str, Any]]:
        """The permission requests of a session (pending and resolved), in request order."""
    def pending_permissions(self, session_id: str) -> List[Dict[str, Any]]:
        """The pending permission requests of a session, in request order."""
    def cancel_requests(self) -> List[Dict[str, Any]]:
        """The ``$/cancel_request`` notifications seen (the last 1000), oldest first:
        ``{"requestId": id, "source": "agent" | "client" | None}``."""
    def cancel_responses(self, session_id: str) -> List[bytes]:
        """The ``cancelled`` responses a client owes after ``session/cancel``, as frames."""
    def state(self) -> Dict[str, Any]:
        """The whole store as a JSON-compatible dict (the checkpoint, DESIGN §7.8); terminal output as base64."""
    def to_json(self) -> bytes:
        """``dumps(state())`` but for numbers and string values, written as received: a checkpoint
        (format ``acp-fast-state/2``) for [`from_json`][acp_fast.ToolCallStore.from_json]."""
    @classmethod
    def from_json(cls, data: Union[bytes, str]) -> ToolCallStore:
        """Rebuild a store from [`to_json`][acp_fast.ToolCallStore.to_json] output (bytes or str; format ``acp-fast-state/2``
        or ``/1``), with its options and its eviction order, so that it behaves as the original. A
        document of another shape raises ValueError naming the path."""
    @property
    def protocol_version(self) -> int:
        """The version in force: the fixed one, else the negotiated one, else 1."""
    @property
    def negotiated_version(self) -> Optional[int]:
        """The version learned from an ``initialize`` response, or None."""
    @property
    def max_tool_calls(self) -> Optional[int]:
        """The bound on finished tool calls kept, or None."""
    @property
    def max_terminal_bytes(self) -> Optional[int]:
        """Output bytes kept per terminal (the last ones; None: no bound)."""
    @property
    def max_content_items(self) -> Optional[int]:
        """Content items kept per tool call (the last ones; None: no bound)."""
    @property
    def max_plans(self) -> Optional[int]:
        """Plans kept per session (None: no bound)."""
    @property
    def max_permissions(self) -> Optional[int]:
        """Permission records kept per session (pending ones always; None: no bound)."""
    @property
    def max_updates(self) -> Optional[int]:
        """Unknown updates kept per session (the last ones; 0: none; None: no bound)."""
    @property
    def max_terminals(self) -> Optional[int]:
        """Terminals kept per session (the oldest exited ones dropped first; None: no bound)."""
    @property
    def wrap_bare_content(self) -> bool:
        """Are bare content blocks in a tool call's content wrapped as
        ``{"type": "content", "content": block}`` (off by default)?"""
    @property
    def max_entities(self) -> Optional[int]:
        """Entities kept per target of a session (the oldest dropped first; None: no bound)."""
    @property
    def max_files(self) -> Optional[int]:
        """Answered file requests kept per session (the last ones; 0: not tracked; None: no bound)."""
    @property
    def max_content_bytes(self) -> Optional[int]:
        """Bytes of content kept per tool call (its items' JSON text, the newest item always;
        None: no bound)."""
    @property
    def max_sessions(self) -> Optional[int]:
        """Sessions kept in the store (the least recently active dropped first; None: no bound)."""
    @property
    def evicted_sessions(self) -> int:
        """Sessions dropped by the ``max_sessions`` bound."""
    @property
    def closed_sessions(self) -> int:
        """Sessions dropped by an answered ``session/close`` or ``session/delete``."""
    @property
    def strict_schema(self) -> Union[bool, int]:
        """``strict_schema`` as given: False (off), True (follows the negotiation), 1 or 2."""
    @property
    def evicted(self) -> int:
        """Tool calls dropped by the ``max_tool_calls`` bound."""
    @property
    def line(self) -> int:
        """Lines completed by ``feed`` / ``finish`` so far."""
    def __len__(self) -> int:
        """The number of tool calls held."""

def validate_schema(
    message: Union[_Buffer, Message, Batch, Dict[str, Any], List[Any]],
    *,
    protocol_version: Optional[int] = None,
    unstable: bool = False,
    method: Optional[str] = None,
    draft: Optional[str] = None,
) -> List[SchemaProblem]:
    """Strict validation of one message (or v1 batch) against the official schema of
    ``protocol_version`` (1 when None; ``unstable``: with the unstable surface; ``draft``: the v2
    draft, ``'latest'`` when None, or ``'alpha.5'``): its problems, each
    with a JSON path and what was expected; ``[]`` when valid. ``method`` names the request a
    response answers (else a result is checked against every result definition). Bytes that are
    not JSON raise [`DecodeError`][acp_fast.DecodeError]. The protocol rule about custom values (v2) is checked too;
    the rules that need the conversation are [`SchemaValidator`][acp_fast.SchemaValidator]'s."""

@final
class SchemaValidator:
    """Strict validation of a conversation, message by message: each against the schema (a
    response against the result of the request it answers), plus the protocol rules that need
    what came before (a response must answer a request that was made; a tool call's first report
    SHOULD have a title: a warning)."""

    def __new__(
        cls, *, protocol_version: Optional[int] = None, unstable: bool = False, draft: Optional[str] = None
    ) -> SchemaValidator:
        """A validator of a conversation of protocol ``protocol_version`` (1 when None), v2 as
        ``draft`` (``'latest'`` when None, or ``'alpha.5'``)."""
    def validate(
        self, message: Union[_Buffer, Message, Batch, Dict[str, Any], List[Any]], *, sender: Optional[str] = None
    ) -> List[SchemaProblem]:
        """The problems of the next message; ``sender`` names the side it comes from (a response
        answers a request from another sender; None: from any)."""
    @property
    def protocol_version(self) -> int:
        """The protocol version checked against (1 or 2)."""
    @property
    def unstable(self) -> bool:
        """Whether the unstable surface is accepted."""
    @property
    def draft(self) -> str:
        """The v2 draft checked against (``'latest'`` or ``'alpha.5'``)."""
    def _sizes(self) -> Tuple[int, int, int]:
        """Test-only: (pending request ids, tool call ids remembered, pending requests forgotten)."""
    def _set_limits(self, pending: int, tool_calls: int) -> None:
        """Test-only: start the conversation afresh with these limits (each at least 1)."""

class _ArrowStream(Protocol):
    """What ``FrameColumns.finish`` returns: an Arrow stream of record batches (the Arrow
    PyCapsule interface; ``pyarrow.RecordBatchReader.from_stream`` reads it)."""

    def __arrow_c_stream__(self, requested_schema: object = None) -> object: ...

@final
class FrameColumns:
    """Rows of frames built in Arrow's layout, one per line (``acp_fast.arrow.frames``;
    docs/ANALYTICS.md): ``feed`` a stream's bytes (rows numbered from ``first_line + 1``, as
    [`FrameDecoder`][acp_fast.FrameDecoder] numbers lines), or give lines one by one (``line``, ``too_large``,
    ``invalid``); ``finish`` returns the rows."""

    def __new__(
        cls,
        *,
        first_line: int = 0,
        max_frame_bytes: Optional[int] = 67108864,
        threads: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
    ) -> FrameColumns:
        """An empty table; ``max_frame_bytes`` as for [`Framer`][acp_fast.Framer], at most 1 GiB; ``threads``
        (1 to 1024; None: every core the process may use) the threads ``feed`` parses on.
        ``columns`` (a list or tuple of names of ``acp_fast.arrow.FRAME_COLUMNS``; None: all): the
        table has only these, in that order, and the others are not built (every line is still
        parsed and checked). TypeError for a ``threads`` that is not an int or a ``columns`` that is
        not a list or tuple of str, ValueError for a ``threads`` out of range or a ``columns`` with
        an unknown name, a name twice or no name."""
    def feed(self, data: _Buffer) -> None:
        """Feed bytes of the stream: a row for every line they complete. With ``threads`` above 1
        the complete lines are cut into that many newline-aligned byte ranges, parsed at once
        without the GIL; the rows, their order and their line numbers are those of one thread
        (only the table's record batches are cut differently)."""
    def feed_file(self, fd: int, start: int, stop: int) -> int:
        """Feed the bytes ``start`` to ``stop`` of the open file whose descriptor is ``fd`` (not
        closed), as ``feed`` of those bytes would: read by the core in
        pieces, with ``threads`` above 1 each thread reading and parsing a newline-aligned range
        of its own, the GIL released. Returns the bytes fed, fewer than ``stop - start`` only when
        the file ends before ``stop``; OSError when a read fails."""
    def reserve(self, size: int) -> None:
        """About ``size`` more bytes of stream are to come (a file's size): the columns are sized
        for their rows at once instead of growing as they come. Only a hint: the rows are the
        same without it."""
    def line(self, number: int, data: _Buffer) -> None:
        """One line (line ending optional, as ``decode`` takes it), numbered ``number``."""
    def too_large(self, number: int, length: Optional[int] = None) -> None:
        """A line over the limit, numbered ``number``, of ``length`` bytes when known."""
    def invalid(self, number: int, error: str, raw: Optional[bytes] = None) -> None:
        """An invalid row numbered ``number`` with the error kind ``error`` (and the line's bytes)."""
    def finish(self) -> _ArrowStream:
        """End of input (a last line without a newline becomes a row): the rows as an Arrow stream."""
    @staticmethod
    def check_names(columns: object, known: Sequence[str]) -> List[int]:
        """``columns`` (a list or tuple of names of ``known``) as indexes into ``known``, in its
        order, checked as ``columns=`` is (the same TypeError / ValueError and messages): the check
        of a ``columns`` naming other columns (``acp_fast.arrow.read_frames``'s)."""

@final
class ToolCallColumns:
    """A stream replayed through the state engine into one row per tool call
    (``acp_fast.arrow.tool_calls``; docs/ANALYTICS.md): ``feed`` a plain stream's bytes, or give a
    recording's lines one by one (``line``); ``finish`` returns the rows, in the store's order."""

    def __new__(
        cls, *, threads: Optional[int] = None, source: Optional[str] = None, times: bool = False
    ) -> ToolCallColumns:
        """An empty replay; ``threads`` (1 to 1024; None: every core the process may use) the
        threads ``feed`` parses on; ``source`` (``"agent"``, ``"client"`` or None) who sent a plain
        stream; ``times``: the table has the ``*_time`` columns. TypeError / ValueError for a
        ``threads`` refused as by [`FrameColumns`][acp_fast.FrameColumns], ValueError for another ``source``."""
    def feed(self, data: _Buffer) -> None:
        """Feed bytes of the stream: every line they complete is applied. With ``threads`` above 1
        the complete lines are cut into newline-aligned byte ranges parsed on ``threads - 1``
        threads without the GIL, while the calling thread applies them in stream order: the table
        is that of one thread."""
    def feed_file(self, fd: int, start: int, stop: int) -> int:
        """Feed the bytes ``start`` to ``stop`` of the open file whose descriptor is ``fd`` (not
        closed), as ``feed`` of those bytes would, read by the
        core, the GIL released. Returns the bytes fed, fewer than ``stop - start`` only when the
        file ends before ``stop``; OSError when a read fails."""
    def line(self, number: int, data: _Buffer, time: Optional[float] = None, source: Optional[str] = None) -> None:
        """A recording's line ``number`` (its bytes, line ending optional), sent at ``time`` by
        ``source``: applied as [`ToolCallStore.apply`][acp_fast.ToolCallStore.apply] applies bytes."""
    def finish(self) -> _ArrowStream:
        """End of input (a last line without a newline is applied): the rows as an Arrow stream."""
