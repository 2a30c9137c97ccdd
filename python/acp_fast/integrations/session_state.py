"""A drop-in ``SessionAccumulator`` for ``acp.contrib.session_state``, backed by acp-fast's state
engine ([`acp_fast.ToolCallStore`][acp_fast.ToolCallStore]).

Swap one import:

    # from acp.contrib.session_state import SessionAccumulator
    from acp_fast.integrations.session_state import SessionAccumulator

Same constructor, same methods (``apply``, ``snapshot``, ``subscribe``, ``reset``,
``session_id``), same snapshot types (``SessionSnapshot``, ``ToolCallView`` — the SDK's own
classes) and the same snapshots on v1 streams. What differs:

* **Cost.** The SDK deep-copies the whole session into a new snapshot on every ``apply``, so a
  long session is quadratic. Here ``apply`` costs the same at update 10 and update 100,000: the
  snapshot it returns is a [`LazySessionSnapshot`][acp_fast.integrations.session_state.LazySessionSnapshot] (a ``SessionSnapshot`` subclass) whose
  fields are built the first time they are read, from state that later updates cannot change.
  Reading a field costs what that field holds, once per snapshot. Items (message chunks, content,
  plan entries) are shared between snapshots instead of being copied for each: treat them as
  read-only (the snapshot itself is frozen).
* **Input.** ``apply`` also takes frames — ``bytes`` / ``str`` / [`acp_fast.Message`][acp_fast.Message] /
  dict, batches included — and [`SessionAccumulator.feed`][acp_fast.integrations.session_state.SessionAccumulator.feed] takes a byte stream of any size.
  Frames that are not ``session/update`` (``initialize`` responses, permission requests, ...)
  go to the store too, so the protocol version is negotiated and permission tool calls applied.
* **v2.** ``tool_call_update`` with ``null`` clears, ``tool_call_content_chunk``, terminals and
  plans by id follow the state engine's rules (DESIGN §7); terminals and plans are available
  through [`SessionAccumulator.terminals`][acp_fast.integrations.session_state.SessionAccumulator.terminals] / [`SessionAccumulator.plans`][acp_fast.integrations.session_state.SessionAccumulator.plans]. Values the
  SDK's models cannot hold (a v2 diff, status ``"cancelled"``) are kept as they came (wire dicts
  / strings) rather than dropped.
* **Replays.** An agent answers ``session/load`` (and a v2 ``session/resume`` with a
  ``replayFrom`` cursor) by first sending the session's history again as ``session/update``
  notifications. The SDK's accumulator, which never sees the request, applies them on top of what
  it holds: a session loaded again in the same accumulator has its history twice. Here the
  request (a frame given to ``apply`` / ``feed``, or [`SessionAccumulator.replay`][acp_fast.integrations.session_state.SessionAccumulator.replay] around the
  SDK's ``load_session`` / ``resume_session`` call) starts the session afresh, as
  [`SessionAccumulator.reset`][acp_fast.integrations.session_state.SessionAccumulator.reset] does, so the replay rebuilds it, and marks what follows as
  replay ([`SessionAccumulator.replaying`][acp_fast.integrations.session_state.SessionAccumulator.replaying]) until the request's response, or until the v2
  ``replay_complete`` update for the session, or the end of the ``replay()`` block. A v1
  ``session/resume`` (or a v2 one without ``replayFrom``) replays nothing and changes nothing.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import require_sdk

require_sdk("acp_fast.integrations.session_state")

from acp.contrib.session_state import (  # noqa: E402
    SessionNotificationMismatchError,
    SessionSnapshot,
    SessionSnapshotUnavailableError,
    ToolCallView,
)
from acp.schema import (  # noqa: E402
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    PlanEntry,
    SessionNotification,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from pydantic import BaseModel, ValidationError  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast.errors import DecodeError  # noqa: E402

from .models import to_wire, tool_call_view  # noqa: E402

__all__ = [
    "LazySessionSnapshot",
    "SessionAccumulator",
    "SessionNotificationMismatchError",
    "SessionSnapshot",
    "SessionSnapshotUnavailableError",
    "ToolCallView",
]

_KIND = 1  # the tool call's kind was set by an update (the SDK's view shows None otherwise)
_STATUS = 2
_TOOL_UPDATES = frozenset(("tool_call", "tool_call_update", "tool_call_content_chunk"))
_MESSAGE_KINDS = {"user_message_chunk": 0, "agent_message_chunk": 1, "agent_thought_chunk": 2}
_MESSAGE_MODELS = (UserMessageChunk, AgentMessageChunk, AgentThoughtChunk)
_SNAPSHOT_FIELDS = tuple(SessionSnapshot.model_fields)
_LOAD = "session/load"
_RESUME = "session/resume"
_REPLAY_COMPLETE = "replay_complete"
_BY_BLOCK: Any = object()  # the request id of a replay() block: no response ends it
_LAZY_FIELDS = frozenset(
    ("tool_calls", "plan_entries", "available_commands", "user_messages", "agent_messages", "agent_thoughts")
)


# ---------------------------------------------------------------------------------------------
# State


class _Epoch:
    """One state of the tool calls that a live snapshot may still need.

    ``undo`` holds, for each tool call changed after this epoch began (first change only), what
    it was during this epoch; ``newer`` is the next epoch. Epochs are reachable only from
    snapshots (the accumulator holds the newest weakly), so nothing is recorded once no snapshot
    can look back."""

    __slots__ = ("undo", "newer", "__weakref__")

    def __init__(self) -> None:
        self.undo: Dict[str, Any] = {}
        self.newer: Optional[_Epoch] = None


class _World:
    """Everything [`SessionAccumulator.reset`][acp_fast.integrations.session_state.SessionAccumulator.reset] throws away. A reset starts a new world; the
    old one is never changed again, so the snapshots that refer to it stay valid."""

    __slots__ = ("store", "session_id", "ids", "flags", "views", "messages", "epoch", "dirty")

    def __init__(self, store: Any) -> None:
        self.store = store
        self.session_id: Optional[str] = None
        self.ids: List[str] = []  # tool-call ids, first-seen order (never removed)
        self.flags: Dict[str, int] = {}  # tool-call id -> _KIND | _STATUS
        self.views: Dict[str, ToolCallView] = {}  # current views built so far
        self.messages: Tuple[List[Any], List[Any], List[Any]] = ([], [], [])  # user, agent, thought
        self.epoch: Optional[weakref.ref[_Epoch]] = None
        self.dirty = False

    def current_view(self, tcid: str) -> ToolCallView:
        view = self.views.get(tcid)
        if view is None:
            view = self.views[tcid] = _view(self.store.get(self.session_id, tcid), self.flags[tcid])
        return view

    def before_change(self, tcid: str) -> None:
        """Keep what a live snapshot needs of ``tcid`` before the store changes it."""
        if tcid in self.flags:
            epoch = self.epoch() if self.epoch is not None else None
            if epoch is not None and tcid not in epoch.undo:
                view = self.views.get(tcid)
                epoch.undo[tcid] = (
                    view if view is not None else (self.store.get(self.session_id, tcid), self.flags[tcid])
                )
            self.views.pop(tcid, None)
        self.dirty = True

    def after_change(self, tcid: str, flags: int) -> None:
        if tcid not in self.flags:
            self.ids.append(tcid)
        self.flags[tcid] = flags

    def snapshot_epoch(self) -> _Epoch:
        epoch = self.epoch() if self.epoch is not None else None
        if epoch is None or self.dirty:
            newer = _Epoch()
            if epoch is not None:
                epoch.newer = newer
            self.epoch = weakref.ref(newer)
            self.dirty = False
            epoch = newer
        return epoch


def _view(old: Any, flags: Optional[int] = None) -> ToolCallView:
    if isinstance(old, ToolCallView):
        return old
    if flags is None:
        old, flags = old
    return tool_call_view(old, kind_set=bool(flags & _KIND), status_set=bool(flags & _STATUS))


class _Items:
    """A list that a snapshot field shows as a tuple of SDK models, converted on first use."""

    __slots__ = ("source", "models")

    def __init__(self, source: Any, models: Optional[Tuple[Any, ...]] = None) -> None:
        self.source = source  # (Message or update dict, member name, model class)
        self.models = models

    def get(self) -> Tuple[Any, ...]:
        if self.models is None:
            frame, member, model = self.source
            update = _update_of(frame)
            self.models = tuple(_to_model(model, update.get(member) or ()))
            self.source = None
        return self.models


def _to_model(model: Any, items: Any) -> List[Any]:
    out = []
    for item in items:
        try:
            out.append(model.model_validate(item))
        except ValidationError:
            out.append(item)  # kept as it came: the SDK's model cannot hold it
    return out


def _update_of(frame: Any) -> Dict[str, Any]:
    if isinstance(frame, dict):
        return frame
    update: Dict[str, Any] = frame.params["update"]
    return update


def _message_model(item: Any, index: int) -> Any:
    if isinstance(item, BaseModel):
        return item
    update = _update_of(item)
    try:
        return _MESSAGE_MODELS[index].model_validate(update)
    except ValidationError:
        return update


class _Capture:
    """What a snapshot needs to build its lazy fields."""

    __slots__ = ("world", "epoch", "n_ids", "n_messages", "plan", "commands")

    def __init__(self, world: _World, epoch: _Epoch, plan: Optional[_Items], commands: Optional[_Items]) -> None:
        self.world = world
        self.epoch = epoch
        self.n_ids = len(world.ids)
        self.n_messages = tuple(len(m) for m in world.messages)
        self.plan = plan
        self.commands = commands

    def field(self, name: str) -> Any:
        if name == "tool_calls":
            return self.tool_calls()
        if name == "plan_entries":
            return self.plan.get() if self.plan is not None else ()
        if name == "available_commands":
            return self.commands.get() if self.commands is not None else ()
        index = ("user_messages", "agent_messages", "agent_thoughts").index(name)
        items = self.world.messages[index]
        n = self.n_messages[index]
        for i in range(n):
            item = items[i]
            if not isinstance(item, BaseModel):
                items[i] = _message_model(item, index)
        return tuple(items[:n])

    def tool_calls(self) -> Dict[str, ToolCallView]:
        world = self.world
        old: Dict[str, Any] = {}
        epoch: Optional[_Epoch] = self.epoch
        while epoch is not None:
            for tcid, state in epoch.undo.items():
                old.setdefault(tcid, state)
            epoch = epoch.newer
        out: Dict[str, ToolCallView] = {}
        for tcid in world.ids[: self.n_ids]:
            state = old.get(tcid)
            out[tcid] = world.current_view(tcid) if state is None else _view(state)
        return out


# ---------------------------------------------------------------------------------------------
# Snapshots


class LazySessionSnapshot(SessionSnapshot):
    """A ``SessionSnapshot`` whose fields are built when first read.

    It is a ``SessionSnapshot`` (``isinstance`` holds), compares equal to the SDK's snapshot of
    the same state (either way round), and dumps, copies, pickles and prints as one.
    [`materialize`][acp_fast.integrations.session_state.LazySessionSnapshot.materialize] gives a plain ``SessionSnapshot``."""

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        capture = d.get("_lazy")
        if capture is not None and name in _LAZY_FIELDS:
            value = d[name] = capture.field(name)
            return value
        # pydantic defines BaseModel.__getattr__ only when not TYPE_CHECKING (it exists at run time).
        return super().__getattr__(name)  # type: ignore[misc]

    def _fill(self) -> LazySessionSnapshot:
        d = self.__dict__
        capture = d.get("_lazy")
        if capture is not None:
            fields = {name: d[name] if name in d else capture.field(name) for name in _SNAPSHOT_FIELDS}
            d.clear()  # drops the capture: lets go of the epochs and the old world
            d.update(fields)  # in the fields' order, as pydantic would have them
        return self

    def materialize(self) -> SessionSnapshot:
        """This snapshot as a plain ``SessionSnapshot`` (all fields built)."""
        self._fill()
        snapshot = SessionSnapshot.model_construct(**{name: self.__dict__[name] for name in _SNAPSHOT_FIELDS})
        return snapshot

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionSnapshot):
            return NotImplemented
        self._fill()
        if isinstance(other, LazySessionSnapshot):
            other._fill()
        return all(self.__dict__[name] == other.__dict__.get(name) for name in _SNAPSHOT_FIELDS)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # a dict field: unhashable, as the SDK's

    def __repr_args__(self) -> Any:
        self._fill()
        return super().__repr_args__()

    def __iter__(self) -> Any:
        self._fill()
        return super().__iter__()

    def __getstate__(self) -> Dict[Any, Any]:
        self._fill()
        return super().__getstate__()

    def __copy__(self) -> LazySessionSnapshot:
        self._fill()
        return super().__copy__()

    def __deepcopy__(self, memo: Optional[Dict[int, Any]] = None) -> LazySessionSnapshot:
        self._fill()
        return super().__deepcopy__(memo)

    def model_dump(self, **kwargs: Any) -> Dict[str, Any]:
        """pydantic's ``model_dump``, once the lazy fields are filled in."""
        self._fill()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """pydantic's ``model_dump_json``, once the lazy fields are filled in."""
        self._fill()
        return super().model_dump_json(**kwargs)

    def model_copy(self, **kwargs: Any) -> LazySessionSnapshot:
        """pydantic's ``model_copy``, once the lazy fields are filled in."""
        self._fill()
        return super().model_copy(**kwargs)


def _new_snapshot(session_id: str, mode: Optional[str], capture: _Capture) -> LazySessionSnapshot:
    snapshot = LazySessionSnapshot.model_construct(session_id=session_id, current_mode_id=mode)
    d = snapshot.__dict__
    d["_lazy"] = capture
    object.__setattr__(snapshot, "__pydantic_fields_set__", set(_SNAPSHOT_FIELDS))
    return snapshot


# ---------------------------------------------------------------------------------------------
# The accumulator


class SessionAccumulator:
    """Merge session updates into snapshots, as ``acp.contrib.session_state.SessionAccumulator``
    does, at a constant cost per update (see the module docstring).

    ``auto_reset_on_session_change``: as in the SDK (an update for another session resets the
    state, or raises ``SessionNotificationMismatchError`` when False). ``protocol_version``:
    ``None`` (learn it from an ``initialize`` response, version 1 until then), ``1`` or ``2`` —
    it decides how ``null`` in a ``tool_call_update`` is read. ``max_frame_bytes``: the longest
    line [`feed`][acp_fast.integrations.session_state.SessionAccumulator.feed] accepts. ``backend``: an acp-fast backend module (default: ``acp_fast``'s).
    """

    def __init__(
        self,
        *,
        auto_reset_on_session_change: bool = True,
        protocol_version: Optional[int] = None,
        max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
        backend: Any = None,
    ) -> None:
        self._backend = acp_fast if backend is None else backend
        self._auto_reset = auto_reset_on_session_change
        self._fixed_version = protocol_version
        self._max_frame_bytes = max_frame_bytes
        self._message_type = self._backend.Message
        self._decoder = self._backend.FrameDecoder(max_frame_bytes=max_frame_bytes)
        self._subscribers: List[Callable[[SessionSnapshot, Any], None]] = []
        self._world = _World(self._new_store(protocol_version))
        self._plan: Optional[_Items] = None
        self._commands: Optional[_Items] = None
        self._mode: Optional[str] = None
        # The replay under way: (session id, id of the request that asked for it), or None.
        self._replay: Optional[Tuple[str, Any]] = None

    def _new_store(self, version: Optional[int]) -> Any:
        return self._backend.ToolCallStore(version, max_frame_bytes=self._max_frame_bytes)

    # -- the SDK's surface

    @property
    def session_id(self) -> Optional[str]:
        return self._world.session_id

    @session_id.setter
    def session_id(self, value: Optional[str]) -> None:
        self._world.session_id = value

    def reset(self) -> None:
        """Clear all accumulated state (snapshots taken before keep theirs)."""
        old = self._world.store
        version = self._fixed_version if self._fixed_version is not None else old.negotiated_version
        self._world = _World(self._new_store(version))
        self._plan = None
        self._commands = None
        self._mode = None

    def subscribe(self, callback: Callable[[SessionSnapshot, Any], None]) -> Callable[[], None]:
        """Register ``callback(snapshot, notification)``, called after every applied update (the
        ``notification`` is what was applied: a ``SessionNotification``, or the frame's
        [`acp_fast.Message`][acp_fast.Message]). Returns the function that unsubscribes it."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            try:
                self._subscribers.remove(callback)
            except ValueError:
                pass

        return unsubscribe

    def apply(self, notification: Any) -> Any:
        """Merge one update and return the snapshot after it.

        ``notification``: a ``SessionNotification`` (as in the SDK), or a frame — ``bytes`` /
        ``str`` / [`acp_fast.Message`][acp_fast.Message] / message dict — of any method; a batch frame applies
        its entries in order. Returns the snapshot after the last ``session/update`` applied, or
        ``None`` when the frame held none and no session has been seen yet. A bad frame raises
        [`acp_fast.DecodeError`][acp_fast.DecodeError] and changes nothing."""
        if isinstance(notification, SessionNotification):
            return self._apply_model(notification)
        if isinstance(notification, (bytes, bytearray, memoryview, str)):
            frame = self._backend.decode(notification)
        elif isinstance(notification, (dict, list)):
            frame = self._backend.decode(self._backend.dumps(notification))
        else:
            frame = notification
        if isinstance(frame, list):
            snapshot = None
            for entry in frame:
                if isinstance(entry, DecodeError):
                    raise entry
                snapshot = self._apply_message(entry) or snapshot
            return snapshot if snapshot is not None else self._current_or_none()
        if isinstance(frame, DecodeError):
            raise frame
        if type(frame) is not self._message_type:
            raise TypeError(f"expected a SessionNotification, a frame or a Message, found {type(frame).__name__}")
        snapshot = self._apply_message(frame)
        return snapshot if snapshot is not None else self._current_or_none()

    def snapshot(self) -> LazySessionSnapshot:
        """The current state (lazy, see [`LazySessionSnapshot`][acp_fast.integrations.session_state.LazySessionSnapshot])."""
        world = self._world
        if world.session_id is None:
            raise SessionSnapshotUnavailableError()
        return _new_snapshot(
            world.session_id, self._mode, _Capture(world, world.snapshot_epoch(), self._plan, self._commands)
        )

    # -- streams

    def feed(self, data: Any) -> List[DecodeError]:
        """Apply every complete line of ``data`` (bytes in any pieces). Subscribers are called for
        each ``session/update``. Returns the bad frames and bad updates (DecodeErrors, with their
        line numbers); the stream goes on after them."""
        return self._apply_frames(self._decoder.feed(data))

    def finish(self) -> List[DecodeError]:
        """End of input: apply a last line that has no newline."""
        return self._apply_frames(self._decoder.finish())

    def _apply_frames(self, frames: List[Any]) -> List[DecodeError]:
        errors: List[DecodeError] = []
        for frame in frames:
            entries = frame if isinstance(frame, list) else (frame,)
            for entry in entries:
                if isinstance(entry, DecodeError):
                    errors.append(entry)
                    continue
                try:
                    self._apply_message(entry, False)
                except DecodeError as exc:
                    if exc.line is None:
                        exc.line = entry.line
                    errors.append(exc)
        return errors

    # -- replays

    @property
    def replaying(self) -> Optional[str]:
        """The id of the session whose history is being replayed (``session/load``, or a
        ``session/resume`` with ``replayFrom``), else None: the updates applied meanwhile are that
        history, sent again, not new activity (a subscriber can tell them apart by it)."""
        return None if self._replay is None else self._replay[0]

    @contextlib.contextmanager
    def replay(self, session_id: str) -> Iterator[None]:
        """Mark what is applied inside the block as the replay of ``session_id``'s history, for a
        client that gives ``apply`` the SDK's models (and so never shows it the request):

            with acc.replay(session_id):
                await conn.load_session(cwd=cwd, session_id=session_id)

        As a ``session/load`` request frame does: the session's accumulated state is dropped
        first (when it is the current session), so the replay rebuilds it instead of doubling it,
        and [`replaying`][acp_fast.integrations.session_state.SessionAccumulator.replaying] is ``session_id`` until the block ends."""
        self._start_replay(session_id, _BY_BLOCK)
        try:
            yield
        finally:
            if self._replay is not None and self._replay[1] is _BY_BLOCK:
                self._replay = None

    def _start_replay(self, session_id: str, request_id: Any) -> None:
        world = self._world
        if world.session_id == session_id:
            self.reset()  # snapshots taken before keep the history as it was
            self._world.session_id = session_id
        self._replay = (session_id, request_id)

    def _replay_request(self, message: Any) -> None:
        """Start a replay for a ``session/load`` request, or a ``session/resume`` one that asks
        for a replay (``replayFrom``, v2)."""
        params = message.params
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            return
        if message.method == _LOAD or params.get("replayFrom") is not None:
            self._start_replay(session_id, message.id)

    def _replay_answered(self, message: Any) -> None:
        """End the replay whose request ``message`` answers (with a result or an error)."""
        replay = self._replay
        if replay is not None and type(message.id) is type(replay[1]) and message.id == replay[1]:
            self._replay = None

    # -- extras

    @property
    def store(self) -> Any:
        """The [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore] of the current session (read it, don't feed it)."""
        return self._world.store

    @property
    def protocol_version(self) -> int:
        """The protocol version in force (fixed, else negotiated, else 1)."""
        version: int = self._world.store.protocol_version
        return version

    def tool_call(self, tool_call_id: str) -> Optional[ToolCallView]:
        """The current view of one tool call (None if unknown), without building a snapshot."""
        world = self._world
        return world.current_view(tool_call_id) if tool_call_id in world.flags else None

    def plans(self) -> Dict[str, Dict[str, Any]]:
        """Every plan of the session by plan id (v1 ``plan`` is plan ``"main"``), as records."""
        world = self._world
        return {} if world.session_id is None else world.store.plans(world.session_id)

    def terminals(self) -> Dict[str, Dict[str, Any]]:
        """Every v2 terminal of the session by terminal id, as records (``output`` is bytes)."""
        world = self._world
        return {} if world.session_id is None else world.store.terminals(world.session_id)

    # -- internals

    def _current_or_none(self) -> Optional[LazySessionSnapshot]:
        return None if self._world.session_id is None else self.snapshot()

    def _ensure_session(self, session_id: str) -> None:
        world = self._world
        if world.session_id is None:
            world.session_id = session_id
        elif session_id != world.session_id:
            if not self._auto_reset:
                raise SessionNotificationMismatchError(world.session_id, session_id)
            self.reset()
            self._world.session_id = session_id

    def _notify(self, notification: Any, want: bool = True) -> Optional[LazySessionSnapshot]:
        if not want and not self._subscribers:
            return None
        snapshot = self.snapshot()
        for callback in list(self._subscribers):
            callback(snapshot, notification)
        return snapshot

    def _apply_model(self, notification: SessionNotification) -> LazySessionSnapshot:
        self._ensure_session(notification.session_id)
        update = notification.update
        world = self._world
        if isinstance(update, (ToolCallStart, ToolCallProgress)):
            wire = to_wire(update)
            frame = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": world.session_id, "update": wire},
            }
            self._apply_tool(world, wire["toolCallId"], wire, frame, update.session_update)
        elif isinstance(update, (UserMessageChunk, AgentMessageChunk, AgentThoughtChunk)):
            world.messages[_MESSAGE_KINDS[update.session_update]].append(update.model_copy(deep=True))
        elif isinstance(update, AgentPlanUpdate):
            wire = to_wire(update)
            world.store.apply(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": world.session_id, "update": wire},
                }
            )
            self._plan = _Items(None, tuple(entry.model_copy(deep=True) for entry in update.entries))
        elif isinstance(update, CurrentModeUpdate):
            self._mode = update.current_mode_id
        elif isinstance(update, AvailableCommandsUpdate):
            self._commands = _Items(None, tuple(command.model_copy(deep=True) for command in update.available_commands))
        return self._notify(notification)  # type: ignore[return-value]  # want=True: always the snapshot

    def _apply_message(self, message: Any, want: bool = True) -> Optional[LazySessionSnapshot]:
        """Apply one decoded message; the snapshot after it when it was a session update (and
        ``want`` is true or someone subscribed)."""
        if message.method != "session/update" or message.kind != "notification":
            kind = message.kind
            if kind == "request" and message.method in (_LOAD, _RESUME):
                self._replay_request(message)
            if message.method == "session/request_permission" and kind == "request":
                self._apply_permission(message)
            else:
                self._world.store.apply(message)
            if self._replay is not None and kind in ("response", "error"):
                self._replay_answered(message)
            return None
        session_id = message.session_id
        kind = message.update_kind
        if session_id is None or kind is None:
            self._world.store.apply(message)  # raises for a bad sessionId; else ignored
            return None
        if kind in _TOOL_UPDATES:
            update = message.params["update"]
            tcid = update.get("toolCallId")
            if not isinstance(tcid, str):
                self._world.store.apply(message)  # raises the store's error, changes nothing
                return None
            self._ensure_session(session_id)
            world = self._world
            self._apply_tool(world, tcid, update, message, kind)
            return self._notify(message, want)
        self._ensure_session(session_id)
        world = self._world
        if kind in _MESSAGE_KINDS:
            world.messages[_MESSAGE_KINDS[kind]].append(message)
        else:
            world.store.apply(message)  # plans, terminals: kept by the store
            if kind == "plan":
                self._plan = _Items((message, "entries", PlanEntry))
            elif kind == "current_mode_update":
                mode = message.params["update"].get("currentModeId")
                self._mode = mode if isinstance(mode, str) else self._mode
            elif kind == "available_commands_update":
                self._commands = _Items((message, "availableCommands", AvailableCommand))
            elif kind == _REPLAY_COMPLETE and self._replay is not None and self._replay[0] == session_id:
                snapshot = self._notify(message, want)  # the marker is the replay's last update
                self._replay = None
                return snapshot
        return self._notify(message, want)

    def _apply_tool(self, world: _World, tcid: str, update: Dict[str, Any], frame: Any, kind: str) -> None:
        flags = world.flags.get(tcid, 0)
        if kind == "tool_call":
            flags = (_KIND if update.get("kind") is not None else 0) | (
                _STATUS if update.get("status") is not None else 0
            )
        elif kind == "tool_call_update":
            flags = _patch_flags(flags, update, world.store.protocol_version)
        world.before_change(tcid)
        world.store.apply(frame)
        world.after_change(tcid, flags)

    def _apply_permission(self, message: Any) -> None:
        """A permission request's tool call is applied by the store like a tool_call_update."""
        world = self._world
        params = message.params
        tool_call: Any = None
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(params, dict):
            tool_call = params.get("toolCall")
            subject = params.get("subject")
            if tool_call is None and isinstance(subject, dict) and subject.get("type") == "tool_call":
                tool_call = subject.get("toolCall")
        tcid = tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
        if session_id != world.session_id or world.session_id is None or not isinstance(tcid, str):
            world.store.apply(message)
            return
        flags = _patch_flags(world.flags.get(tcid, 0), tool_call, world.store.protocol_version)
        world.before_change(tcid)
        world.store.apply(message)
        world.after_change(tcid, flags)


def _patch_flags(flags: int, update: Dict[str, Any], version: int) -> int:
    for key, bit in (("kind", _KIND), ("status", _STATUS)):
        if key in update:
            if update[key] is not None:
                flags |= bit
            elif version == 2:
                flags &= ~bit
    return flags
