"""The [`Bridge`][acp_fast.bridge.Bridge]: an editor speaking one ACP version, an agent speaking the other (private;
see [`acp_fast.bridge`][acp_fast.bridge] and docs/BRIDGE.md)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import acp_fast

from ..errors import AcpError, DecodeError
from . import _content as C
from . import _shapes as S

Frame = Union[bytes, bytearray, memoryview, str, "acp_fast.Message"]
_Key = Tuple[bool, Any]

#: The option a v2 editor is offered when a v1 agent asks permission with no options (v2 needs
#: one); choosing it answers the agent ``cancelled``.
REJECT_OPTION: Dict[str, Any] = {"optionId": "acp-fast-bridge-reject", "name": "Reject", "kind": "reject_once"}

_CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
_MESSAGES = ("user_message", "agent_message", "agent_thought")
_RENAMES = {
    1: {"auth/login": "authenticate", "auth/logout": "logout"},
    2: {"authenticate": "auth/login", "logout": "auth/logout"},
}
#: v1 client methods (the agent asks the editor): a v2 editor has none of them
_CLIENT_ONLY_V1 = ("fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
                   "terminal/release", "terminal/wait_for_exit", "terminal/kill")  # fmt: skip
_ONLY = {
    1: ("session/load", "session/set_mode") + _CLIENT_ONLY_V1,
    2: ("tool_call/cancel", "terminal/cancel"),
}
#: v2 session updates a v1 editor knows when it advertised the ``subagents`` client capability
_SUBAGENT_UPDATES = ("subagent_update", "session_message", "session_message_chunk")
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
#: The deepest frame the bridge converts: a converted frame may nest a few levels deeper, and the
#: codec reads and writes at most 1,024 levels (docs/DESIGN.md 2; tests/test_bridge_hostile.py
#: checks the margin against the codec's limit; docs/BRIDGE.md "Frames the bridge refuses").
BRIDGE_MAX_DEPTH = 1024 - 8
INVALID_PARAMS = -32602


class BridgeError(AcpError):
    """Strict mode: a frame says something the other side's protocol version cannot say.

    ``side`` is who sent it (``"agent"`` or ``"editor"``), ``line`` its line number (the
    message's own ``line`` when it came from a ``FrameDecoder``, else the count of frames that
    side has sent the bridge), ``what`` the method (``session/update tool_call_update``,
    ``response to initialize``, ...), ``target`` the version it could not be said in, ``reason``
    what could not be said. The bridge is left as it was before the frame.
    """

    def __init__(self, reason: str, *, side: str, line: int, what: str, target: int) -> None:
        self.reason = reason
        self.side = side
        self.line = line
        self.what = what
        self.target = target
        self.message = f"line {line} from the {side} ({what}) cannot be said in protocol v{target}: {reason}"
        super().__init__(self.message)

    def __reduce__(self) -> Any:
        return (_rebuild, (self.reason, self.side, self.line, self.what, self.target))


def _rebuild(reason: str, side: str, line: int, what: str, target: int) -> BridgeError:
    return BridgeError(reason, side=side, line=line, what=what, target=target)


def _key(value: Any) -> _Key:
    return (isinstance(value, str), value)


def _version(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value not in (1, 2):
        raise ValueError(f"expected {name} to be 1 or 2, found {value!r}")
    return value


class Bridge:
    """A stateful converter between an editor speaking protocol version ``editor`` and an agent
    speaking version ``agent`` (docs/BRIDGE.md).

    ``from_agent(frame)`` returns the frames to send the editor for one frame the agent sent;
    ``from_editor(frame)`` the frames to send the agent. A frame is ``bytes`` (or ``bytearray``,
    ``memoryview``, ``str``; line ending optional) or a ``Message``; a bad one raises the codec's
    ``DecodeError``. Every frame returned ends in one ``\\n``; a frame that needs no change comes
    back byte for byte (the very object when it was ``bytes`` ending in ``\\n``). With
    ``strict=True`` a frame whose meaning the other version cannot carry raises
    [`BridgeError`][acp_fast.bridge.BridgeError] instead of taking the documented lossy path. A request the other version
    has no form of is answered by the bridge itself: [`replies`][acp_fast.bridge.Bridge.replies] gives those answers.
    ``backend`` is an acp-fast backend module (default: the one ``acp_fast`` uses).

    ``coalesce=MS`` (a v2 agent and a v1 editor only; docs/BRIDGE.md "Coalescing"): the tool-call
    and terminal updates of the agent change the agent's record at once but the v1 frames that
    bring the editor up to it are made only when released, one per tool call however many
    updates it had meanwhile: when a tool call's update carries a final status, before any other
    frame of the agent naming its session (any response: all), ``MS`` milliseconds after its first
    held change ([`release_due`][acp_fast.bridge.Bridge.release_due], on ``clock``: ``time.monotonic`` by default), beyond
    ``max_held`` tool calls (the oldest), and on [`release`][acp_fast.bridge.Bridge.release]. Each chunk then costs what it
    holds, not the size of its tool call.
    """

    def __init__(
        self,
        editor: int = 1,
        agent: int = 2,
        *,
        strict: bool = False,
        backend: Any = None,
        coalesce: Optional[float] = None,
        max_held: int = 1000,
        clock: Callable[[], float] = time.monotonic,
        max_sessions: int = 1000,
        max_pending: int = 1000,
    ) -> None:
        self.editor = _version(editor, "editor")
        self.agent = _version(agent, "agent")
        self.strict = bool(strict)
        if coalesce is not None and not (coalesce >= 0 and math.isfinite(coalesce)):
            raise ValueError(f"expected coalesce to be a number of milliseconds >= 0, found {coalesce}")
        #: ``coalesce`` in seconds, when the bridge holds (a v2 agent, a v1 editor), else None
        self.window = coalesce / 1000.0 if coalesce is not None and (self.editor, self.agent) == (1, 2) else None
        self.max_held = max_held
        for name, value in (("max_sessions", max_sessions), ("max_pending", max_pending)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"expected {name} to be an int >= 1, found {value!r}")
        #: sessions whose conversion state is kept (docs/BRIDGE.md "Bounds"); the oldest go first
        self.max_sessions = max_sessions
        #: unanswered requests, unended prompt turns and message ids (per session) kept, each
        self.max_pending = max_pending
        #: what the bounds dropped: sessions, requests and turns, message ids, editor views
        self.dropped = 0
        self._views_sweep = max_pending  # (sweep the views of records gone from the store beyond this)
        self._clock = clock
        # held tool calls (oldest first) -> (since, the envelope of their last update)
        self._held: Dict[Tuple[str, str], Tuple[float, Dict[str, Any]]] = {}
        self._early: List[bytes] = []  # released for a frame that was then refused: due at once
        self._acp: Any = acp_fast if backend is None else backend
        self._dumps: Callable[[Any], bytes] = self._acp.dumps
        #: the agent's state, by the agent's rules
        self.store: acp_fast.ToolCallStore = self._acp.ToolCallStore(self.agent, max_tool_calls=max_pending)
        #: True once both sides speak the same version (configured so, or negotiated)
        self.passthrough = self.editor == self.agent
        self._views: Dict[Tuple[str, str], Dict[str, Any]] = {}  # each tool call as the editor holds it
        self._refs: Dict[Tuple[str, str], Dict[str, None]] = {}  # (session, terminal) -> tool calls showing it
        self._plans: Dict[str, List[Any]] = {}  # session -> entries of the v1 plan last sent
        self._asked_agent: Dict[_Key, str] = {}  # editor requests awaiting the agent: id -> method as sent
        self._asked_editor: Dict[_Key, bool] = {}  # permission requests awaiting the editor: id -> reject added
        self._prompts: Dict[str, List[Any]] = {}  # session -> prompt ids not acknowledged (v1 agent) / not ended (v2)
        self._prompt_session: Dict[_Key, str] = {}
        self._acks: Dict[_Key, Any] = {}  # v2 agent: acknowledged prompts -> the ack's _meta
        self._ended: Dict[_Key, None] = {}  # v2 agent: prompts ended (idle) before their acknowledgement
        # v1 agent: prompt id -> the user message its ack names (id, the blocks the agent got)
        self._user_messages: Dict[_Key, Tuple[str, List[Any]]] = {}
        self._message_ids: Dict[str, Tuple[str, str]] = {}  # v1 agent: session -> (chunk kind, message id)
        self._messages_seen: Dict[str, Dict[str, None]] = {}  # v2 agent: session -> message ids shown to the v1 editor
        self._echoes: Dict[str, Dict[str, None]] = {}  # v2 agent: session -> ids of the v1 editor's prompts, echoed
        self._unechoed: Dict[str, List[_Key]] = {}  # v2 agent: session -> prompts whose echo is not known yet
        self._subagents = False  # the v1 editor advertised the ``subagents`` client capability
        self._replies: Dict[str, List[bytes]] = {"agent": [], "editor": []}
        self._next_message = 0
        self._lines = {"agent": 0, "editor": 0}
        self._where: Tuple[str, int, str] = ("agent", 0, "")

    # -- public ------------------------------------------------------------------------------

    def from_agent(self, frame: Frame) -> List[bytes]:
        """The frames to send the editor for ``frame``, sent by the agent."""
        return self._frame(frame, "agent")

    def from_editor(self, frame: Frame) -> List[bytes]:
        """The frames to send the agent for ``frame``, sent by the editor."""
        return self._frame(frame, "editor")

    @property
    def deadline(self) -> Optional[float]:
        """``coalesce``: when the oldest held tool call is due (on ``clock``), None when none is held."""
        if self._early:
            return 0.0
        for since, _ in self._held.values():
            assert self.window is not None
            return since + self.window
        return None

    def release_due(self, now: Optional[float] = None) -> List[bytes]:
        """``coalesce``: the frames of the tool calls held ``MS`` or longer at ``now``."""
        if now is None:
            now = self._clock()
        out, self._early = self._early, []
        while self._held:
            key, (since, _) = next(iter(self._held.items()))
            assert self.window is not None
            if since + self.window > now:
                break
            out += self._release_key(key)
        return out

    def release(self, session: Optional[str] = None) -> List[bytes]:
        """``coalesce``: the frames of every held tool call (of ``session`` only, when given)."""
        out, self._early = self._early, []
        for key in [k for k in self._held if session is None or k[0] == session]:
            out += self._release_key(key)
        return out

    def _release_key(self, key: Tuple[str, str]) -> List[bytes]:
        held = self._held.pop(key, None)
        if held is None:
            return []
        return self._to_v1(key[0], key[1], held[1], None)[0]

    def _hold(self, sid: str, tcid: str, params: Dict[str, Any], final: bool) -> List[bytes]:
        """``coalesce``: the agent's record of tool call ``tcid`` changed; its frame is made when
        it is released (now, when ``final``)."""
        key = (sid, tcid)
        held = self._held.get(key)
        self._held[key] = (self._clock() if held is None else held[0], _envelope(params))
        out: List[bytes] = []
        if final:
            # A tool call the editor has not seen yet goes after the session's unseen ones held
            # before it: the editor learns of a session's tool calls in the agent's order.
            first = [] if key in self._views else [k for k in self._held if k[0] == sid and k not in self._views]
            for k in first[: first.index(key)] if key in first else []:
                out += self._release_key(k)
            return out + self._release_key(key)
        while len(self._held) > self.max_held:
            out += self._release_key(next(iter(self._held)))
        return out

    def replies(self, side: str) -> List[bytes]:
        """The frames the bridge itself answered to ``side`` (``"agent"`` or ``"editor"``) since the
        last call, in order, and forgets them: JSON-RPC errors for requests the other version has
        no form of (a v1 agent's ``fs/*`` and ``terminal/*`` to a v2 editor, a v2 editor's
        ``tool_call/cancel`` and ``terminal/cancel`` to a v1 agent). A caller relaying frames sends
        them back to ``side`` after each ``from_agent`` / ``from_editor``."""
        if side not in self._replies:
            raise ValueError(f"expected side to be 'agent' or 'editor', found {side!r}")
        out, self._replies[side] = self._replies[side], []
        return out

    # -- framing -----------------------------------------------------------------------------

    def _frame(self, frame: Frame, side: str) -> List[bytes]:
        self._lines[side] += 1
        if isinstance(frame, (bytes, bytearray, memoryview, str)):
            msg = self._acp.decode(frame)
        elif hasattr(frame, "raw") and hasattr(frame, "kind"):
            msg = frame
        else:
            raise TypeError(f"expected a frame (bytes, str or Message), found {type(frame).__name__}")
        whole = frame if isinstance(frame, bytes) and frame.endswith(b"\n") else bytes(msg.raw) + b"\n"
        if self.passthrough:
            return [whole]
        line = self._lines[side] if isinstance(msg, list) or msg.line is None else msg.line
        too_deep = _too_deep(msg, whole)
        if too_deep is not None:
            raise DecodeError(too_deep, code=INVALID_REQUEST, kind="depth_limit", line=line, raw=whole[:-1])
        try:
            out = self._frame_of(msg, side, whole)
        except (DecodeError, BridgeError):
            raise
        except Exception as e:  # never a crash: refused like a frame that is not JSON-RPC
            why = f"the bridge could not convert this frame ({type(e).__name__}: {e})"
            raise DecodeError(why, code=INVALID_REQUEST, kind="bridge_failed", line=line, raw=whole[:-1]) from e
        if self._early and side == "agent":
            out, self._early = self._early + out, []
        self._bound()
        return out

    # -- bounds (docs/BRIDGE.md "Bounds") ----------------------------------------------------

    def _remember(self, table: Dict[str, Dict[str, None]], sid: str, mid: str) -> None:
        """Add message id ``mid`` to session ``sid``'s ids in ``table``, the oldest beyond
        ``max_pending`` forgotten."""
        ids = table.setdefault(sid, {})
        ids[mid] = None
        if len(ids) > self.max_pending:
            del ids[next(iter(ids))]
            self.dropped += 1

    def _bound(self) -> None:
        """Keep every table within its bound, the oldest entries dropped first (after a frame)."""
        limit = self.max_pending
        for table in (self._asked_agent, self._asked_editor, self._prompt_session, self._acks, self._ended):
            while len(table) > limit:
                del table[next(iter(table))]
                self.dropped += 1
        while len(self._user_messages) > limit:
            del self._user_messages[next(iter(self._user_messages))]
            self.dropped += 1
        sessions = (self._plans, self._prompts, self._message_ids, self._messages_seen, self._echoes, self._unechoed)
        for per_session in sessions:
            while len(per_session) > self.max_sessions:
                del per_session[next(iter(per_session))]
                self.dropped += 1
        if len(self._views) > self._views_sweep:
            # Views and terminal references whose record the store no longer keeps (its own
            # bounds dropped it): swept when they have doubled since the last sweep.
            get, terminal = self.store.get, self.store.terminal
            gone = [key for key in self._views if get(*key) is None]
            for key in gone:
                del self._views[key]
            for ref in [ref for ref in self._refs if terminal(*ref) is None]:
                del self._refs[ref]
            self.dropped += len(gone)
            self._views_sweep = max(self.max_pending, 2 * len(self._views))

    def _frame_of(self, msg: Any, side: str, whole: bytes) -> List[bytes]:
        if isinstance(msg, list) and (self.agent if side == "agent" else self.editor) == 2:
            # v2 has no batches: the error a v2 ToolCallStore gives one (kind batch_in_v2)
            self._acp.ToolCallStore(2).apply(whole)
        if isinstance(msg, list):  # a batch (of a v1 side): its entries one by one
            if any(isinstance(entry, DecodeError) for entry in msg):
                return [whole]
            out: List[bytes] = []
            kept = True
            for entry in msg:
                part = self._message(entry, side)
                kept = kept and part == [bytes(entry.raw) + b"\n"]
                out += part
            return [whole] if kept else out
        return self._message(msg, side, whole)

    def _message(self, msg: Any, side: str, whole: Optional[bytes] = None) -> List[bytes]:
        if side == "agent" and self._held and not _held_kind(msg):
            # coalesce: what is held of the frame's session (of every session) goes first
            held = self.release(msg.session_id if msg.kind != "response" else None)
            try:
                return held + self._convert(msg, side, whole)
            except BaseException:
                self._early += held  # released as if due: they go out first with the next frames
                raise
        return self._convert(msg, side, whole)

    def _convert(self, msg: Any, side: str, whole: Optional[bytes]) -> List[bytes]:
        line = msg.line if msg.line is not None else self._lines[side]
        kind = msg.kind
        if kind in ("request", "notification"):
            what = msg.method
            if what == "session/update":
                update = (msg.params or {}).get("update") if isinstance(msg.params, dict) else None
                if isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str):
                    what = f"session/update {update['sessionUpdate']}"
            self._where = (side, line, what)
            out = self._agent_call(msg) if side == "agent" else self._editor_call(msg)
        else:
            asked = self._asked_agent if side == "agent" else self._asked_editor
            method = asked.get(_key(msg.id)) if side == "agent" else (
                "session/request_permission" if _key(msg.id) in asked else None)  # fmt: skip
            self._where = (side, line, f"response to {method or 'an unknown request'}")
            out = self._agent_answer(msg) if side == "agent" else self._editor_answer(msg)
        if out is None:
            return [whole if whole is not None else bytes(msg.raw) + b"\n"]
        return out

    def _check(self, problems: List[str]) -> None:
        if problems and self.strict:
            side, line, what = self._where
            target = self.editor if side == "agent" else self.agent
            raise BridgeError(problems[0], side=side, line=line, what=what, target=target)

    def _out(self, message: Dict[str, Any]) -> bytes:
        return self._dumps(message) + b"\n"

    def _answer(self, msg: Any, side: str, code: int, message: str) -> List[bytes]:
        """Answer ``side``'s request ``msg`` with a JSON-RPC error (see [`replies`][acp_fast.bridge.Bridge.replies]); a
        notification gets no answer. Nothing goes to the other side."""
        if msg.kind == "request":
            error = {"code": code, "message": message, "data": {"method": msg.method}}
            self._replies[side].append(self._out({"jsonrpc": "2.0", "id": msg.id, "error": error}))
        return []

    def _notify(self, params: Dict[str, Any], update: Dict[str, Any]) -> bytes:
        return self._out({"jsonrpc": "2.0", "method": "session/update", "params": {**params, "update": update}})

    def _state(self, session_id: str, state: str, **extra: Any) -> bytes:
        return self._notify({"sessionId": session_id}, {"sessionUpdate": "state_update", "state": state, **extra})

    # -- the agent's requests and notifications ------------------------------------------------

    def _agent_call(self, msg: Any) -> Optional[List[bytes]]:
        method = msg.method
        params = msg.params
        if self.agent == 1 and method in _ONLY[1]:
            self._check([f'the method "{method}" (v{self.editor} does not have it)'])
            if method in _CLIENT_ONLY_V1:
                why = "the editor speaks ACP v2, which has no client file or terminal methods"
                return self._answer(msg, "agent", METHOD_NOT_FOUND, f"Method not found: {method} ({why})")
            return None
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
            return None
        sid: str = params["sessionId"]
        if method == "session/update":
            update = params.get("update")
            if not isinstance(update, dict) or not isinstance(update.get("sessionUpdate"), str):
                return None
            if self.agent == 2:
                out = self._from_v2_update(msg, params, update, sid)
            else:
                out = self._from_v1_update(msg, params, update, sid)
        elif method == "session/request_permission" and msg.kind == "request":
            out = self._permission_v1(msg, params, sid) if self.agent == 2 else self._permission_v2(msg, params, sid)
        else:
            out = None
        acks = self._acks_due(sid)  # (after the frame's own conversion, which may refuse it)
        if acks:
            self._prompts.pop(sid, None)
            return acks + (out if out is not None else [bytes(msg.raw) + b"\n"])
        return out

    def _acks_due(self, sid: str) -> List[bytes]:
        """v1 agent, v2 editor: the acknowledgements (and ``running``) of the prompts of ``sid``
        not acknowledged yet, sent before the first frame of their turn."""
        if self.agent != 1 or not self._prompts.get(sid):
            return []
        out = [frame for pid in self._prompts[sid] for frame in self._ack(pid, sid)]
        return out + [self._state(sid, "running")]

    def _ack(self, pid: Any, sid: Optional[str], meta: Any = None) -> List[bytes]:
        """v1 agent, v2 editor: the acknowledgement of the prompt ``pid``, naming the user message
        it inserted (v2 drafts after alpha.3 require the id; alpha.3 allows it), with ``meta``;
        then that message's echo, a ``user_message`` with the blocks the agent was sent (the draft:
        agents MUST echo it during the live session)."""
        mid, blocks = self._user_messages.pop(_key(pid), (None, []))
        if mid is None:
            self._next_message += 1
            mid = f"acp-fast-message-{self._next_message}"
        result = {"messageId": mid} if meta is None else {"messageId": mid, "_meta": meta}
        out = [self._out({"jsonrpc": "2.0", "id": pid, "result": result})]
        if sid is not None:
            out.append(
                self._notify({"sessionId": sid}, {"sessionUpdate": "user_message", "messageId": mid, "content": blocks})
            )
        return out

    # v2 agent -> v1 editor

    def _from_v2_update(
        self, msg: Any, params: Dict[str, Any], update: Dict[str, Any], sid: str
    ) -> Optional[List[bytes]]:
        kind = update["sessionUpdate"]
        if kind in ("tool_call_update", "tool_call_content_chunk", "tool_call"):
            tcid = update.get("toolCallId")
            if isinstance(tcid, str) and self.strict:
                self._check(self._v1_tool_call_problems(kind, update, self.store.get(sid, tcid)))
            self.store.apply(msg, source="agent")
            if not isinstance(tcid, str):
                return []
            if self.window is not None:
                return self._hold(sid, tcid, params, update.get("status") in _FINAL)
            frames, passes = self._to_v1(sid, tcid, params, update if kind == "tool_call_update" else None)
            return None if passes else frames
        if kind in ("terminal_update", "terminal_output_chunk"):
            self._check(["an agent-owned terminal (v1 has none; its text is shown in the tool calls that embed it)"])
            self.store.apply(msg, source="agent")
            tid = update.get("terminalId")
            out: List[bytes] = []
            for tcid in list(self._refs.get((sid, tid), ())) if isinstance(tid, str) else ():
                if self.window is not None:
                    out += self._hold(sid, tcid, {"sessionId": sid}, False)
                else:
                    out += self._to_v1(sid, tcid, {"sessionId": sid}, None)[0]
            return out
        if kind in ("plan_update", "plan_removed", "plan"):
            self._check(self._v1_plan_problems(kind, update, sid))
            self.store.apply(msg, source="agent")
            entries = C.v1_plan_entries(self.store.plans(sid))
            sent = self._plans.get(sid)
            if (sent is None and not entries) or (sent is not None and C.same(sent, entries, self._dumps)):
                return []
            self._plans[sid] = entries
            return [self._notify(_envelope(params), {"sessionUpdate": "plan", "entries": entries})]
        if kind in ("user_message", "user_message_chunk") and self._is_echo(sid, update):
            return []  # the v1 editor shows its own prompt
        if kind in _CHUNKS:
            block = update.get("content")
            problem = C.v1_item_problem({"type": "content", "content": block})
            self._check([problem] if problem else [])
            if problem:
                return []
            if isinstance(update.get("messageId"), str):
                self._remember(self._messages_seen, sid, update["messageId"])
            return None
        if kind in _MESSAGES:
            return self._v1_message(params, update, sid)
        if kind == "state_update":
            return self._v1_state(update, sid)
        if kind == "available_commands_update":
            changed, problems = S.commands(update, 1)
            self._check(problems)
            return None if changed == update else [self._notify(params, changed)]
        if kind == "config_option_update":
            options, problems = S.config_options(update.get("configOptions"), 1)
            self._check(problems)
            return [self._notify(params, {**update, "configOptions": options})]
        if kind in ("session_info_update", "usage_update", "current_mode_update"):
            return None
        if kind in _SUBAGENT_UPDATES and self._subagents:
            return None  # the same in v1, for an editor that advertised subagents
        self._check([f'the session update "{kind}" (v1 does not know it)'])
        return []

    def _v1_tool_call_problems(self, kind: str, update: Dict[str, Any], record: Optional[Dict[str, Any]]) -> List[str]:
        if not self.strict:
            return []
        problems: List[str] = []
        if kind == "tool_call_content_chunk":
            if record is None:
                problems.append("a content chunk for a tool call not reported yet (v1 tool_call needs a title)")
            problems.append(C.v1_item_problem(update.get("content"), self._subagents) or "")
            return [p for p in problems if p]
        if record is None and not isinstance(update.get("title"), str):
            problems.append("a tool call first reported without a title (v1 tool_call requires one)")
        for key, value in update.items():
            if value is None and key not in C.V1_CLEARS and record and key in record:
                problems.append(f'"{key}": null (v1 cannot unset a field)')
        problem = C.capabilities_problem(update.get("capabilities"))
        if problem:
            problems.append(problem)
        kind_value = update.get("kind")
        if kind_value is not None and not C.is_str_in(kind_value, C.V1_KINDS):
            problems.append(f"the tool kind {kind_value!r} (v1 knows {', '.join(sorted(C.V1_KINDS))})")
        status = update.get("status")
        if status is not None and not C.is_str_in(status, C.V1_STATUSES):
            problems.append(f"the tool call status {status!r} (v1 knows {', '.join(sorted(C.V1_STATUSES))})")
        content = update.get("content")
        for item in content if isinstance(content, list) else ():
            problem = C.v1_item_problem(item, self._subagents)
            if problem:
                problems.append(problem)
        return problems

    def _to_v1(
        self, sid: str, tcid: str, params: Dict[str, Any], update: Optional[Dict[str, Any]]
    ) -> Tuple[List[bytes], bool]:
        """Bring the v1 editor's view of a tool call up to the agent's record: (frames, whether
        ``update`` itself, passed as it is, does exactly that)."""
        step, view = self._v1_step(sid, tcid)
        if view is None:
            return [], False
        fits = update is not None and (step is None or step[0] == "tool_call_update")
        if (
            fits
            and update is not None
            and C.passes(update, step[1] if step else {"toolCallId": tcid}, view, self._dumps)
        ):
            return [], True
        if step is None:
            return [], False
        return [self._notify(_envelope(params), {"sessionUpdate": step[0], **step[1]})], False

    def _v1_step(self, sid: str, tcid: str) -> Tuple[Optional[Tuple[str, Dict[str, Any]]], Optional[Dict[str, Any]]]:
        record = self.store.get(sid, tcid)
        if record is None:
            return None, None
        refs: List[str] = []
        view = C.v1_view(record, lambda tid: self.store.terminal(sid, tid), refs, self._subagents)
        for tid in refs:
            self._refs.setdefault((sid, tid), {})[tcid] = None
        before = self._views.get((sid, tcid))
        if before is not None and "_meta" in before and "_meta" not in view:
            view["_meta"] = {}  # v1 cannot unset _meta; no keys means no metadata
        step = C.v1_step(before, view, self._dumps)
        self._views[(sid, tcid)] = view
        return step, view

    def _v1_plan_problems(self, kind: str, update: Dict[str, Any], sid: str) -> List[str]:
        if not self.strict or kind != "plan_update":
            return []
        plan = update.get("plan")
        if not isinstance(plan, dict):
            return []
        if plan.get("type") != "items":
            return [f"a plan of type {plan.get('type')!r} (v1 plans are lists of entries)"]
        others = [
            pid for pid, p in self.store.plans(sid).items() if p.get("type") == "items" and pid != plan.get("planId")
        ]
        if others:
            return [f"a second plan {plan.get('planId')!r} besides {others[0]!r} (v1 has one plan per session)"]
        return list(C.entry_problems(plan.get("entries")))

    def _v1_message(self, params: Dict[str, Any], update: Dict[str, Any], sid: str) -> List[bytes]:
        mid = update.get("messageId")
        content = update.get("content")
        seen = self._messages_seen.get(sid, ())
        blocks = content if isinstance(content, list) else []
        fresh = isinstance(mid, str) and mid not in seen and bool(blocks) and update.get("_meta") is None
        problems = [] if fresh else ["a change to a message already shown (v1 only appends chunks)"]
        problems += [p for p in (C.v1_item_problem({"type": "content", "content": b}) for b in blocks) if p]
        self._check(problems)
        if not fresh:
            return []
        assert isinstance(mid, str)
        self._remember(self._messages_seen, sid, mid)
        kind = f"{update['sessionUpdate']}_chunk"
        return [
            self._notify(_envelope(params), {"sessionUpdate": kind, "content": block, "messageId": mid})
            for block in blocks
            if C.v1_item_problem({"type": "content", "content": block}) is None
        ]

    def _v1_state(self, update: Dict[str, Any], sid: str) -> List[bytes]:
        state = update.get("state")
        if state != "idle":
            known = ("running", "requires_action", "unknown")
            self._check([] if state in known else [f"the session state {state!r}"])
            return []
        stop = update.get("stopReason")
        problems = [] if stop is None or stop == "error" or C.is_str_in(stop, C.V1_STOP_REASONS) else [
            f"the stop reason {stop!r} (v1 knows {', '.join(sorted(C.V1_STOP_REASONS))})"]  # fmt: skip
        self._check(problems)
        pending = self._prompts.get(sid)
        if not pending:
            return []
        pid = pending.pop(0)
        key = _key(pid)
        self._prompt_session.pop(key, None)
        result: Dict[str, Any] = {"stopReason": "end_turn" if stop is None or problems else stop}
        if key in self._acks:
            meta = self._acks.pop(key)
            if meta is not None:
                result["_meta"] = meta
        else:
            self._ended[key] = None
        if stop == "error":  # v1 reports a failed prompt as a JSON-RPC error, not a stop reason
            return [self._out({"jsonrpc": "2.0", "id": pid, "error": C.turn_error(update.get("error"))})]
        return [self._out({"jsonrpc": "2.0", "id": pid, "result": result})]

    def _permission_v1(self, msg: Any, params: Dict[str, Any], sid: str) -> List[bytes]:
        """A v2 permission request for a v1 editor."""
        subject = params.get("subject")
        call = subject.get("toolCall") if isinstance(subject, dict) and subject.get("type") == "tool_call" else None
        tcid = call.get("toolCallId") if isinstance(call, dict) else None
        options = params.get("options")
        if self.strict:
            problems: List[str] = []
            if params.get("description") is not None:
                problems.append("a description (v1 permission requests have none)")
            if call is None:
                kind = subject.get("type") if isinstance(subject, dict) else None
                problems.append(f"a permission subject of type {kind!r} (v1 asks about a tool call)")
            elif isinstance(tcid, str):
                record = self.store.get(sid, tcid)
                problems += self._v1_tool_call_problems("tool_call_update", call, record)
                shown = call.get("title") if isinstance(call.get("title"), str) else (record or {}).get("title")
                if isinstance(params.get("title"), str) and params["title"] != shown:
                    problems.append("a title (v1 shows the tool call's own title)")
            for option in options if isinstance(options, list) else ():
                if isinstance(option, dict) and not C.is_str_in(option.get("kind"), C.V1_OPTION_KINDS):
                    problems.append(f"the permission option kind {option.get('kind')!r}")
            self._check(problems)
        self.store.apply(msg, source="agent")
        pre: List[bytes] = []
        step, view = self._v1_step(sid, tcid) if isinstance(call, dict) and isinstance(tcid, str) else (None, None)
        if isinstance(call, dict) and view is not None:
            # (the agent's store has no record when it refused the subject: asked as made up)
            tool_call: Dict[str, Any] = {"toolCallId": tcid}
            if step is not None and step[0] == "tool_call":
                pre.append(self._notify({"sessionId": sid}, {"sessionUpdate": "tool_call", **step[1]}))
            elif step is not None:
                tool_call.update(step[1])
            for key, value in call.items():
                if value is not None and key in view:
                    tool_call[key] = view[key]
        else:
            tool_call = self._made_up_tool_call(msg.id, params, subject, sid)
        out: Dict[str, Any] = {"sessionId": sid, "toolCall": tool_call}
        if isinstance(options, list):
            options = [
                {**o, "kind": "reject_once"}
                if isinstance(o, dict) and not C.is_str_in(o.get("kind"), C.V1_OPTION_KINDS)
                else o
                for o in options
            ]
        out["options"] = options
        for key, value in params.items():
            if key not in ("sessionId", "title", "description", "subject", "options"):
                out[key] = value
        self._asked_editor[_key(msg.id)] = False
        return pre + [self._out({"jsonrpc": "2.0", "id": msg.id, "method": msg.method, "params": out})]

    def _made_up_tool_call(self, rid: Any, params: Dict[str, Any], subject: Any, sid: str) -> Dict[str, Any]:
        """The tool call a v1 editor is asked about for a v2 request with no tool-call subject."""
        subject = subject if isinstance(subject, dict) else {}
        tcid = subject.get("toolCallId")
        if isinstance(tcid, str) and (sid, tcid) in self._views:
            return {"toolCallId": tcid}
        title = params.get("title")
        call: Dict[str, Any] = {
            "toolCallId": tcid if isinstance(tcid, str) else f"acp-fast-permission-{rid}",
            "title": title if isinstance(title, str) else "",
        }
        if subject.get("type") == "command":
            call["kind"] = "execute"
            call["rawInput"] = {k: subject[k] for k in ("command", "cwd") if k in subject}
        return call

    # v1 agent -> v2 editor

    def _from_v1_update(
        self, msg: Any, params: Dict[str, Any], update: Dict[str, Any], sid: str
    ) -> Optional[List[bytes]]:
        kind = update["sessionUpdate"]
        if kind in ("tool_call", "tool_call_update", "tool_call_content_chunk"):
            self._check(self._v2_tool_call_problems(update))
            self.store.apply(msg, source="agent")
            if kind == "tool_call":  # a tool call shown between two chunks: the next chunk starts a new message
                self._message_ids.pop(sid, None)
            tcid = update.get("toolCallId")
            if not isinstance(tcid, str):
                return []
            step, view = self._v2_step(sid, tcid)
            if view is None:
                return []
            if kind == "tool_call_update" and C.passes(
                update, step or {"toolCallId": tcid}, view, self._dumps, meta_patches=True
            ):
                return None
            if step is None:
                return []
            return [self._notify(_envelope(params), {"sessionUpdate": "tool_call_update", **step})]
        if kind == "plan":
            self.store.apply(msg, source="agent")
            plan = self.store.plans(sid).get("main")
            return [self._notify(_envelope(params), {"sessionUpdate": "plan_update", "plan": plan})]
        if kind in _CHUNKS:
            mid = update.get("messageId")
            current = self._message_ids.get(sid)
            if isinstance(mid, str):
                self._message_ids[sid] = (kind, mid)
                return None
            if current is None or current[0] != kind:
                self._next_message += 1
                current = (kind, f"acp-fast-message-{self._next_message}")
                self._message_ids[sid] = current
            return [self._notify(params, {**update, "messageId": current[1]})]
        if kind == "current_mode_update":
            self._check(["a session mode change (v2 has config options instead)"])
            return []
        if kind == "available_commands_update":
            changed, problems = S.commands(update, 2)
            return None if changed == update else [self._notify(params, changed)]
        if kind == "config_option_update":
            options, problems = S.config_options(update.get("configOptions"), 2)
            return [self._notify(params, {**update, "configOptions": options})]
        return None

    def _v2_tool_call_problems(self, call: Dict[str, Any]) -> List[str]:
        """What of a v1 tool call (an update, or a permission's ``toolCall``) a v2 editor cannot hold."""
        content = call.get("content")
        problems = [p for p in map(C.v2_item_problem, content if isinstance(content, list) else []) if p]
        problem = C.meta_problem(call.get("_meta"))
        return problems + [problem] if problem else problems

    def _v2_step(self, sid: str, tcid: str) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
        record = self.store.get(sid, tcid)
        if record is None:
            return None, None
        view = C.v2_view(record)
        step = C.v2_step(self._views.get((sid, tcid)), view, self._dumps)
        self._views[(sid, tcid)] = view
        return step, view

    def _permission_v2(self, msg: Any, params: Dict[str, Any], sid: str) -> List[bytes]:
        """A v1 permission request for a v2 editor."""
        call = params.get("toolCall")
        options = params.get("options")
        if self.strict:
            problems = self._v2_tool_call_problems(call) if isinstance(call, dict) else []
            if isinstance(options, list) and not options:
                problems.append("no options (v2 requires at least one)")
            if not isinstance(call, dict):
                problems.append("no tool call (v2 subjects of this kind need one)")
            self._check(problems)
        self.store.apply(msg, source="agent")
        self._message_ids.pop(sid, None)  # as a tool call: the next chunk starts a new message
        tcid = call.get("toolCallId") if isinstance(call, dict) else None
        tool_call: Dict[str, Any] = {"toolCallId": tcid if isinstance(tcid, str) else f"acp-fast-permission-{msg.id}"}
        title = None
        if isinstance(call, dict) and isinstance(tcid, str):
            step, view = self._v2_step(sid, tcid)
            assert view is not None
            tool_call.update(step or {})
            for key, value in call.items():
                if value is not None and key in view and not (key == "_meta" and step and "_meta" in step):
                    tool_call[key] = view[key]  # (a changed _meta is the step's patch)
            title = view.get("title")
        added = isinstance(options, list) and not options
        out: Dict[str, Any] = {
            "sessionId": sid,
            "title": title if isinstance(title, str) and title else f"Allow the tool call {tcid}?",
            "subject": {"type": "tool_call", "toolCall": tool_call},
            "options": [dict(REJECT_OPTION)] if added else options,
        }
        for key, value in params.items():
            if key not in ("sessionId", "toolCall", "options"):
                out[key] = value
        self._asked_editor[_key(msg.id)] = added
        return [self._out({"jsonrpc": "2.0", "id": msg.id, "method": msg.method, "params": out})]

    # -- the editor's requests and notifications -----------------------------------------------

    def _editor_call(self, msg: Any) -> Optional[List[bytes]]:
        method: str = msg.method
        params = msg.params
        target = self.agent
        new_method = _RENAMES[target].get(method, method)
        new_params: Any = params
        problems: List[str] = []
        if method in _ONLY[self.editor] and method != "session/load":
            problems.append(f'the method "{method}" (v{target} does not have it)')
        if isinstance(params, dict):
            if method == "initialize":
                new_params, problems = S.initialize_params(params, target)
            elif method == "session/new":
                new_params, problems = S.session_params(params, target, needs_servers=True)
            elif method == "session/load" and target == 2:
                new_method = "session/resume"
                new_params, problems = S.session_params(params, target, needs_servers=False)
                new_params = {**new_params, "replayFrom": {"type": "start"}}
            elif method == "session/resume":
                replay = params.get("replayFrom")
                if target == 1 and replay is not None:
                    if not (isinstance(replay, dict) and replay.get("type") == "start"):
                        problems.append(f"a replay from {replay!r} (v1 replays a whole session or none)")
                    else:
                        new_method = "session/load"
                new_params, more = S.session_params(
                    {k: v for k, v in params.items() if k != "replayFrom"} if target == 1 and replay else params,
                    target,
                    needs_servers=new_method == "session/load",
                )
                problems += more
            elif method == "session/set_config_option":
                new_params, problems = S.set_config_params(params, target)
            elif method == "session/prompt" and target == 1:
                prompt = params.get("prompt")
                blocks = prompt if isinstance(prompt, list) else []
                bad = [b for b in blocks if C.v1_item_problem({"type": "content", "content": b})]
                problems += [
                    f"a prompt block of type {b.get('type')!r}" if isinstance(b, dict) else "a bad prompt block"
                    for b in bad
                ]
                if bad:
                    new_params = {**params, "prompt": [b for b in blocks if all(b is not x for x in bad)]}
        self._check(problems)
        if method in _ONLY[2] and target == 1:  # tool_call/cancel, terminal/cancel
            return self._answer(msg, "editor", INVALID_PARAMS, _cancel_refusal(method, params))
        if method == "initialize" and target == 2 and isinstance(params, dict):
            caps = params.get("clientCapabilities")
            self._subagents = isinstance(caps, dict) and isinstance(caps.get("subagents"), dict)
        if msg.kind == "request":
            self._asked_agent[_key(msg.id)] = method
            if method == "session/prompt" and isinstance(params, dict) and isinstance(params.get("sessionId"), str):
                sid = params["sessionId"]
                self._prompts.setdefault(sid, []).append(msg.id)
                self._prompt_session[_key(msg.id)] = sid
                self._message_ids.pop(sid, None)
                if target == 1:
                    self._next_message += 1
                    sent = new_params.get("prompt") if isinstance(new_params, dict) else None
                    blocks = sent if isinstance(sent, list) else []
                    self._user_messages[_key(msg.id)] = (f"acp-fast-message-{self._next_message}", blocks)
                else:
                    self._unechoed.setdefault(sid, []).append(_key(msg.id))
        if new_method == method and new_params is params:
            return None
        out = msg.to_dict()
        out["method"] = new_method
        if new_params is not params:
            out["params"] = new_params
        return [self._out(out)]

    # -- answers -------------------------------------------------------------------------------

    def _agent_answer(self, msg: Any) -> Optional[List[bytes]]:
        """The agent's response to an editor request."""
        key = _key(msg.id)
        method = self._asked_agent.get(key)
        if method == "session/prompt":
            out = self._prompt_answer(msg, key)
            self._asked_agent.pop(key, None)
            return out
        if msg.kind != "response" or not isinstance(msg.result, dict):
            self._asked_agent.pop(key, None)
            return None
        result: Dict[str, Any] = msg.result
        target = self.editor
        if method == "initialize":
            answered = result.get("protocolVersion")
            if isinstance(answered, int) and not isinstance(answered, bool) and (1 if answered <= 1 else 2) == target:
                self._asked_agent.pop(key, None)
                self.passthrough = True  # the agent speaks the editor's version after all
                return None
            new, problems = S.initialize_result(result, target)
        elif method in ("session/new", "session/load", "session/resume", "session/set_config_option"):
            new, problems = S.session_result(result, target)
        else:
            self._asked_agent.pop(key, None)
            return None
        self._check(problems)
        self._asked_agent.pop(key, None)
        return [self._out({**msg.to_dict(), "result": new})]

    def _prompt_answer(self, msg: Any, key: _Key) -> Optional[List[bytes]]:
        sid = self._prompt_session.get(key)
        pending = self._prompts.get(sid, []) if sid is not None else []
        waiting = any(_key(pid) == key for pid in pending)
        if self.agent == 1 and msg.kind != "response" and not waiting:
            self._check(["an error after the prompt was acknowledged (v2 ends a turn with state idle)"])
        if self.agent == 2 and sid is not None:
            self._echoed(sid, key, msg.result if msg.kind == "response" else None)
        if self.agent == 2 and msg.kind == "response" and waiting:
            return self._hold_ack(msg, key)
        self._prompt_session.pop(key, None)
        if waiting:
            pending[:] = [pid for pid in pending if _key(pid) != key]
        if self.agent == 2:  # v2: an acknowledgement (the turn ends with state idle) or an error
            if key in self._ended:
                del self._ended[key]
                return [] if msg.kind == "response" else None
            return None
        # v1 agent, v2 editor: the answer ends the turn
        if msg.kind != "response":
            self._user_messages.pop(key, None)
            if waiting:
                return None
            return [self._state(sid, "idle")] if sid is not None else []
        result = msg.result if isinstance(msg.result, dict) else {}
        out: List[bytes] = []
        if waiting:
            out += self._ack(msg.id, sid, result.get("_meta"))
        if sid is not None:
            stop = result.get("stopReason")
            out.append(self._state(sid, "idle", **({"stopReason": stop} if isinstance(stop, str) else {})))
        return out

    def _echoed(self, sid: str, key: _Key, result: Any) -> None:
        """v2 agent, v1 editor: the prompt ``key`` was answered; its acknowledgement ``result``
        names the user message the agent echoes (the v1 editor shows its prompt already)."""
        unechoed = self._unechoed.get(sid, [])
        if key in unechoed:
            unechoed.remove(key)
        mid = result.get("messageId") if isinstance(result, dict) else None
        if isinstance(mid, str):
            self._remember(self._echoes, sid, mid)

    def _is_echo(self, sid: str, update: Dict[str, Any]) -> bool:
        """v2 agent, v1 editor: whether a user message (upsert or chunk) is the agent's echo of a
        prompt of the editor: the message its acknowledgement names, or the first new user
        message while a prompt awaits its acknowledgement."""
        mid = update.get("messageId")
        if not isinstance(mid, str):
            return False
        if mid in self._echoes.get(sid, ()):
            return True
        unechoed = self._unechoed.get(sid)
        if unechoed and mid not in self._messages_seen.get(sid, ()):
            unechoed.pop(0)
            self._remember(self._echoes, sid, mid)
            return True
        return False

    def _hold_ack(self, msg: Any, key: _Key) -> List[bytes]:
        """v2 agent, v1 editor: keep the acknowledgement of a prompt until its turn ends."""
        result = msg.result
        self._acks[key] = result.get("_meta") if isinstance(result, dict) else None
        return []

    def _editor_answer(self, msg: Any) -> Optional[List[bytes]]:
        """The editor's response to an agent request (a permission request is the one reshaped)."""
        key = _key(msg.id)
        if key not in self._asked_editor:
            return None
        added = self._asked_editor[key]
        if self.agent != 1 or msg.kind != "response":
            del self._asked_editor[key]
            return None
        result = msg.result
        outcome = result.get("outcome") if isinstance(result, dict) else None
        tag = outcome.get("outcome") if isinstance(outcome, dict) else None
        chose = outcome.get("optionId") if isinstance(outcome, dict) else None
        chose_reject = added and tag == "selected" and chose == REJECT_OPTION["optionId"]
        if tag in ("selected", "cancelled") and not chose_reject:
            del self._asked_editor[key]
            return None
        if not chose_reject:
            self._check([f"the permission outcome {tag!r} (v1 knows selected and cancelled)"])
        del self._asked_editor[key]
        new: Dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
        if isinstance(result, dict) and result.get("_meta") is not None:
            new["_meta"] = result["_meta"]
        return [self._out({"jsonrpc": "2.0", "id": msg.id, "result": new})]


def _cancel_refusal(method: str, params: Any) -> str:
    """The error message a v2 editor gets for a ``tool_call/cancel`` / ``terminal/cancel`` that a
    v1 agent cannot be asked (the draft's answer to a tool call that is not cancellable, or an
    unknown terminal, is -32602)."""
    params = params if isinstance(params, dict) else {}
    if method == "tool_call/cancel":
        return (
            f"the tool call {params.get('toolCallId')!r} is not cancellable (the agent speaks ACP v1, "
            "which cancels a whole prompt turn with session/cancel)"
        )
    return (
        f"the terminal {params.get('terminalId')!r} is unknown (the agent speaks ACP v1, which has no agent terminals)"
    )


#: The statuses after which a tool call changes no more (``coalesce`` releases it at once).
_FINAL = ("completed", "failed", "cancelled")
#: The agent's session updates that ``coalesce`` holds (a v2 agent).
_HELD_KINDS = ("tool_call_update", "tool_call_content_chunk", "tool_call", "terminal_update", "terminal_output_chunk")


def _held_kind(msg: Any) -> bool:
    """Whether ``msg`` is a session update of a kind ``coalesce`` holds."""
    return msg.kind == "notification" and msg.method == "session/update" and msg.update_kind in _HELD_KINDS


def _too_deep(msg: Any, whole: bytes) -> Optional[str]:
    """Why a frame nests too deeply to convert, else None. A converted frame may be a few levels
    deeper than the frame (a v1 permission's ``toolCall`` is v2's ``subject.toolCall``), and the
    codec writes at most ``MAX_DEPTH`` levels: deeper frames are refused before anything changes."""
    if whole.count(b"[") + whole.count(b"{") <= BRIDGE_MAX_DEPTH:  # (cannot nest that deep)
        return None
    stack: List[Tuple[Any, int]] = [(entry, 1) for entry in (msg if isinstance(msg, list) else [msg])]
    stack = [(getattr(m, "params", None), 2) for m, _ in stack] + [(getattr(m, "result", None), 2) for m, _ in stack]
    while stack:
        value, depth = stack.pop()
        if depth > BRIDGE_MAX_DEPTH:
            return f"nested deeper than {BRIDGE_MAX_DEPTH} levels (the bridge converts frames nested at most that deep)"
        if isinstance(value, dict):
            stack += [(v, depth + 1) for v in value.values() if isinstance(v, (dict, list))]
        elif isinstance(value, list):
            stack += [(v, depth + 1) for v in value if isinstance(v, (dict, list))]
    return None


def _envelope(params: Dict[str, Any]) -> Dict[str, Any]:
    """The params of a session update, without the update (which the caller replaces)."""
    return {key: value for key, value in params.items() if key != "update"}
