"""``acp-fast demo-agent``: a small scripted ACP agent speaking NDJSON on stdin / stdout.

It answers ``initialize`` (``protocolVersion`` = ``--protocol``), ``session/new`` (a fresh
``sessionId``) and, for each ``session/prompt``, plays one scripted turn:

1. a thought (``agent_thought_chunk``) and a plan (v1 ``plan`` / v2 ``plan_update``);
2. a read tool call with text output (v1 ``tool_call`` + ``tool_call_update``; v2
   ``tool_call_update`` upserts + ``tool_call_content_chunk``);
3. the agent's message, streamed in ``--chunks`` ``agent_message_chunk`` pieces;
4. an edit tool call carrying a diff, and a ``session/request_permission`` request for it: the
   agent waits for the client's answer; an ``allow_*`` option completes the edit, anything else
   (reject, cancelled, an error) makes the tool call ``failed``;
5. a terminal: v1 a tool call whose content is a ``terminal`` item; v2 an agent-owned terminal
   (``terminal_update`` + ``terminal_output_chunk`` with base64 output + the exit status);
6. the final plan, a last message chunk, and the end of the turn: v1 the ``session/prompt``
   response ``{"stopReason":"end_turn"}``; v2 ``state_update`` ``idle`` with ``stopReason``
   (v2 acknowledges the prompt with ``{}`` at once and reports ``running`` first).

``session/cancel`` ends the running turn: unfinished tool calls become ``failed`` and the stop
reason is ``cancelled``. Unknown requests get a ``-32601`` error
response; bad lines get ``-32700`` / ``-32600`` error responses with ``id: null``.

When a person types the frames (stdin or stderr is a terminal, as at ``acp-fast proxy -- acp-fast
demo-agent`` run in a shell), the agent prints on stderr, after each permission request, the two
answer lines to paste (allow, reject). Ctrl-C ends it with status 130 and no traceback.

Frames are written with [`acp_fast.builders`][acp_fast.builders] and read with [`acp_fast.FrameDecoder`][acp_fast.FrameDecoder].
``--chunks N`` makes the streams longer (N message chunks, N terminal output chunks), ``--delay
SECONDS`` paces every frame of a turn (a ``session/cancel`` is noticed during the pauses).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from typing import Any, BinaryIO, Dict, List, Optional, TextIO

import acp_fast
from acp_fast import builders

from ._usage import Parser, integer, number

NAME = "acp-fast-demo-agent"

README = "# demo project\n\nA tiny project for the acp-fast demo agent.\n\nRun the tests with `pytest -q`.\n"
OLD_APP = 'def greet(name):\n    return "Hello " + name\n'
NEW_APP = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
WORDS = (
    "I read the README and found the greeting in src/app.py; "
    "it lacks a comma and type hints, so I will fix it and run the tests."
).split(" ")

_EOF = object()


class _Cancelled(Exception):
    """The client sent session/cancel for the running turn."""


class _Closed(Exception):
    """stdin reached its end while the agent was waiting for an answer."""


class DemoAgent:
    """The scripted agent. ``run()`` serves until stdin ends; returns the exit status."""

    def __init__(
        self,
        stdin: BinaryIO,
        stdout: BinaryIO,
        *,
        protocol_version: int = 1,
        chunks: int = 4,
        delay: float = 0.0,
        permission: bool = True,
        hint: Optional[TextIO] = None,
    ):
        if protocol_version not in (1, 2):
            raise ValueError(f"protocol_version must be 1 or 2, found {protocol_version!r}")
        self.version = protocol_version
        self.chunks = max(1, chunks)
        self.delay = max(0.0, delay)
        self.permission = permission
        #: where to say how to answer a permission request (a person at a terminal), or None
        self.hint = hint
        self._stdin = stdin
        self._stdout = stdout
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._deferred: List[Any] = []
        self._sessions: Dict[str, str] = {}  # sessionId -> cwd
        self._next_session = 1
        self._next_request = 0
        self._turns = 0
        self._eof = False
        # the running turn
        self._turn_session: Optional[str] = None
        self._cancelled = False
        self._waiting_for: Any = None
        self._answer: Any = None

    # -- transport -------------------------------------------------------------------------

    def _reader(self) -> None:
        decoder = acp_fast.FrameDecoder()
        fd = self._stdin.fileno() if hasattr(self._stdin, "fileno") else None
        try:
            while True:
                data = os.read(fd, 65536) if fd is not None else self._stdin.read(65536)
                if not data:
                    break
                for item in decoder.feed(data):
                    self._inbox.put(item)
            for item in decoder.finish():
                self._inbox.put(item)
        except (OSError, ValueError):
            pass
        finally:
            self._inbox.put(_EOF)

    def _send(self, frame: bytes) -> None:
        self._stdout.write(frame)
        self._stdout.flush()

    def _next(self, timeout: Optional[float] = None) -> Any:
        """The next incoming item (deferred ones first); None on timeout."""
        if self._deferred and self._turn_session is None:
            return self._deferred.pop(0)
        try:
            return self._inbox.get(timeout=timeout) if timeout is not None else self._inbox.get()
        except queue.Empty:
            return None

    # -- main loop -------------------------------------------------------------------------

    def run(self) -> int:
        threading.Thread(target=self._reader, name="demo-agent-stdin", daemon=True).start()
        try:
            while True:
                item = self._next()
                if item is _EOF:
                    return 0
                self._dispatch(item)
        except (BrokenPipeError, _Closed):
            return 0

    def _dispatch(self, item: Any) -> None:
        if isinstance(item, acp_fast.DecodeError):
            self._send(builders.error_response(None, item.code, item.msg))
            return
        if isinstance(item, list):  # a batch: answer its requests in one array
            replies = [self._handle(entry, batch=True) for entry in item]
            frames = [r for r in replies if r]
            if frames:
                self._send(b"[" + b",".join(f.rstrip(b"\n") for f in frames) + b"]\n")
            return
        reply = self._handle(item)
        if reply:
            self._send(reply)

    def _handle(self, msg: Any, batch: bool = False) -> Optional[bytes]:
        """Handle one message; returns the reply frame (if any) for the caller to send."""
        if isinstance(msg, acp_fast.DecodeError):
            return builders.error_response(None, msg.code, msg.msg)
        if msg.kind not in ("request", "notification"):
            return None  # a response nobody waits for
        method = msg.method
        if msg.kind == "notification":
            return None  # session/cancel outside a turn, $/cancel_request, extensions: nothing to do
        params = msg.params
        if method == "initialize":
            return builders.response(msg.id, self._initialize_result())
        if method == "session/new":
            cwd = params.get("cwd") if isinstance(params, dict) else None
            if not isinstance(cwd, str):
                return builders.error_response(msg.id, -32602, 'Invalid params: "cwd" must be a string')
            session_id = f"sess_{self._next_session}"
            self._next_session += 1
            self._sessions[session_id] = cwd if cwd.startswith("/") else "/workspace"
            return builders.response(msg.id, {"sessionId": session_id})
        if method == "session/prompt":
            asked = params.get("sessionId") if isinstance(params, dict) else None
            if not isinstance(asked, str) or asked not in self._sessions:
                return builders.error_response(msg.id, -32602, f"Invalid params: unknown session {asked!r}")
            if batch:
                return builders.error_response(msg.id, -32600, "session/prompt cannot be batched")
            prompt = params.get("prompt")
            self._turn(msg.id, asked, prompt if isinstance(prompt, list) else [])
            return None
        return builders.error_response(msg.id, -32601, f"Method not found: {method}")

    def _initialize_result(self) -> Dict[str, Any]:
        info = {"name": NAME, "title": "acp-fast demo agent", "version": acp_fast.__version__}
        if self.version == 1:
            return {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": False,
                    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                },
                "authMethods": [],
                "agentInfo": info,
            }
        return {"protocolVersion": 2, "info": info, "capabilities": {}, "authMethods": []}

    # -- during a turn: pauses, permission answers, cancellation ------------------------------

    def _incoming(self, item: Any) -> None:
        """An item that arrived while a turn runs."""
        if item is _EOF:
            self._eof = True
            if self._waiting_for is not None:
                raise _Closed()
            self._deferred.append(_EOF)  # the main loop stops once the turn is over
            return
        if isinstance(item, acp_fast.Message):
            if item.kind in ("response", "error") and self._waiting_for is not None and item.id == self._waiting_for:
                self._answer = item
                return
            if item.kind == "notification" and item.method == "session/cancel":
                params = item.params
                if isinstance(params, dict) and params.get("sessionId") == self._turn_session:
                    self._cancelled = True
                return
            if item.kind in ("response", "error"):
                return
        self._deferred.append(item)  # another request: served after the turn

    def _pause(self) -> None:
        """Between two frames: take what arrived (waiting ``--delay``), stop if cancelled."""
        if self._eof:
            return
        if self.delay:
            import time

            deadline = time.monotonic() + self.delay
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                item = self._next(left)
                if item is None:
                    break
                self._incoming(item)
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            self._incoming(item)
        if self._cancelled:
            raise _Cancelled()

    def _emit(self, frame: bytes) -> None:
        self._pause()
        self._send(frame)

    def _ask_permission(self, session_id: str, tool_call: Dict[str, Any], title: str) -> Any:
        """Send session/request_permission and wait for the client's answer (a Message)."""
        request_id = self._next_request
        self._next_request += 1
        options = [
            builders.permission_option("allow", "Allow", "allow_once"),
            builders.permission_option("reject", "Reject", "reject_once"),
        ]
        if self.version == 1:
            frame = builders.request_permission(request_id, session_id, tool_call, options)
        else:
            frame = builders.request_permission(
                request_id, session_id, tool_call, options, protocol_version=2, title=title
            )
        self._pause()
        if self._eof:
            raise _Closed()
        self._waiting_for = request_id
        self._answer = None
        self._send(frame)
        if self.hint is not None:
            self.hint.write(permission_hint(request_id))
            self.hint.flush()
        try:
            while self._answer is None:
                item = self._inbox.get()
                self._incoming(item)
        finally:
            self._waiting_for = None
        return self._answer

    # -- the scripted turn -------------------------------------------------------------------

    def _turn(self, request_id: Any, session_id: str, prompt: List[Any]) -> None:
        self._turns += 1
        turn = self._turns
        self._turn_session = session_id
        self._cancelled = False
        open_calls: List[str] = []
        v2 = self.version == 2
        try:
            if v2:
                # the answer names the user message the prompt became, which is echoed
                user = f"msg_{turn}_user"
                self._send(builders.response(request_id, {"messageId": user}))
                echo = {"sessionUpdate": "user_message", "messageId": user, "content": prompt}
                self._send(builders.session_update(session_id, echo))
                self._send(builders.session_update(session_id, {"sessionUpdate": "state_update", "state": "running"}))
            self._script(session_id, turn, open_calls)
            stop = "end_turn"
        except _Cancelled:
            for call_id in open_calls:
                self._send(
                    builders.failed_tool_call_update(
                        session_id, call_id, "cancelled by the client", protocol_version=self.version
                    )
                )
            stop = "cancelled"
        finally:
            self._turn_session = None
        if v2:
            self._send(
                builders.session_update(
                    session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop}
                )
            )
        else:
            self._send(builders.response(request_id, {"stopReason": stop}))

    def _message_id(self, turn: int, n: int) -> Optional[str]:
        return f"msg_{turn}_{n}" if self.version == 2 else None

    def _plan(self, session_id: str, statuses: List[str]) -> bytes:
        titles = ("Read README.md", "Fix the greeting in src/app.py", "Run the tests")
        entries = [
            builders.plan_entry(title, priority=p, status=s)
            for title, p, s in zip(titles, ("high", "high", "medium"), statuses)
        ]
        if self.version == 1:
            return builders.plan(session_id, entries)
        return builders.plan_update(session_id, "main", entries)

    def _script(self, sid: str, turn: int, open_calls: List[str]) -> None:
        v2 = self.version == 2
        pv = self.version
        cwd = self._sessions[sid]
        readme, app = f"{cwd}/README.md", f"{cwd}/src/app.py"
        chunk = builders.message_chunk
        self._emit(
            chunk(
                sid,
                "Let me look at the project first.",
                kind="agent_thought_chunk",
                message_id=self._message_id(turn, 0),
            )
        )
        self._emit(self._plan(sid, ["in_progress", "pending", "pending"]))

        # 1. read a file
        read_id = f"call_{turn}_read"
        open_calls.append(read_id)
        if v2:
            self._emit(
                builders.tool_call_update(
                    sid,
                    read_id,
                    title="Read README.md",
                    kind="read",
                    status="in_progress",
                    locations=[builders.location(readme)],
                    protocol_version=2,
                )
            )
            for line in README.splitlines(keepends=True):
                self._emit(builders.tool_call_content_chunk(sid, read_id, builders.text_content(line)))
            self._emit(builders.tool_call_update(sid, read_id, status="completed", protocol_version=2))
        else:
            self._emit(
                builders.tool_call(
                    sid, read_id, "Read README.md", kind="read", status="pending", locations=[builders.location(readme)]
                )
            )
            self._emit(builders.tool_call_update(sid, read_id, status="in_progress"))
            self._emit(
                builders.tool_call_update(sid, read_id, status="completed", content=[builders.text_content(README)])
            )
        open_calls.remove(read_id)
        self._emit(self._plan(sid, ["completed", "in_progress", "pending"]))

        # 2. the message, streamed
        message_id = self._message_id(turn, 1)
        for i in range(self.chunks):
            word = WORDS[i % len(WORDS)]
            self._emit(chunk(sid, word + " ", message_id=message_id))

        # 3. an edit that needs permission
        edit_id = f"call_{turn}_edit"
        open_calls.append(edit_id)
        if v2:
            patch = (
                f"diff --git a{app} b{app}\n--- a{app}\n+++ b{app}\n@@ -1,2 +1,2 @@\n"
                + "".join("-" + line + "\n" for line in OLD_APP.splitlines())
                + "".join("+" + line + "\n" for line in NEW_APP.splitlines())
            )
            diff = {
                "type": "diff",
                "changes": [{"operation": "modify", "path": app, "fileType": "text"}],
                "patch": {"format": "git_patch", "text": patch},
            }
            self._emit(
                builders.tool_call_update(
                    sid,
                    edit_id,
                    title="Edit src/app.py",
                    kind="edit",
                    status="pending",
                    content=[diff],
                    locations=[builders.location(app, 1)],
                    protocol_version=2,
                )
            )
        else:
            diff = builders.diff_content(app, NEW_APP, OLD_APP)
            self._emit(
                builders.tool_call(
                    sid,
                    edit_id,
                    "Edit src/app.py",
                    kind="edit",
                    status="pending",
                    content=[diff],
                    locations=[builders.location(app, 1)],
                )
            )
        approved, why = True, ""
        if self.permission:
            tool_call = {"toolCallId": edit_id, "title": "Edit src/app.py", "kind": "edit", "status": "pending"}
            answer = self._ask_permission(sid, tool_call, "Allow editing src/app.py?")
            approved, why = _approved(answer)
        if approved:
            self._emit(builders.tool_call_update(sid, edit_id, status="in_progress", protocol_version=pv))
            self._emit(builders.tool_call_update(sid, edit_id, status="completed", protocol_version=pv))
        else:
            self._emit(builders.failed_tool_call_update(sid, edit_id, f"Not applied: {why}", protocol_version=pv))
        open_calls.remove(edit_id)
        if self._cancelled:
            raise _Cancelled()
        self._emit(self._plan(sid, ["completed", "completed" if approved else "pending", "in_progress"]))

        # 4. a terminal
        run_id = f"call_{turn}_run"
        term_id = f"term_{turn}"
        open_calls.append(run_id)
        output = [f"test_{i} PASSED\n".encode() for i in range(self.chunks)] + [f"{self.chunks} passed\n".encode()]
        if v2:
            self._emit(
                builders.tool_call_update(
                    sid,
                    run_id,
                    title="Run the tests",
                    kind="execute",
                    status="in_progress",
                    content=[builders.terminal_content(term_id)],
                    protocol_version=2,
                )
            )
            self._emit(builders.terminal_update(sid, term_id, command="pytest -q", cwd=cwd))
            for piece in output:
                self._emit(builders.terminal_output_chunk(sid, term_id, piece))
            self._emit(builders.terminal_update(sid, term_id, exit_status={"exitCode": 0}))
            self._emit(builders.tool_call_update(sid, run_id, status="completed", protocol_version=2))
        else:
            self._emit(
                builders.tool_call(
                    sid,
                    run_id,
                    "Run the tests",
                    kind="execute",
                    status="in_progress",
                    content=[builders.terminal_content(term_id)],
                )
            )
            self._emit(
                builders.tool_call_update(
                    sid,
                    run_id,
                    status="completed",
                    content=[builders.terminal_content(term_id), builders.text_content(b"".join(output).decode())],
                )
            )
        open_calls.remove(run_id)
        self._emit(self._plan(sid, ["completed", "completed" if approved else "pending", "completed"]))
        self._emit(chunk(sid, "Done." if approved else "Done, without the edit.", message_id=self._message_id(turn, 2)))


def permission_hint(request_id: int) -> str:
    """What the demo agent prints on stderr at a terminal after it asks for permission: the
    answer frames to paste, one line each (the ``allow`` and ``reject`` options)."""
    allow = builders.permission_response(request_id, "allow").decode().rstrip("\n")
    reject = builders.permission_response(request_id, "reject").decode().rstrip("\n")
    return (
        f"acp-fast demo-agent: waiting for the answer to permission request {request_id}; paste one line:\n"
        f"  allow:  {allow}\n"
        f"  reject: {reject}\n"
    )


def _approved(answer: Any) -> tuple[bool, str]:
    """(approved, why not) from the client's answer to a permission request."""
    if answer.kind == "error":
        return False, "the permission request failed"
    result = answer.result
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict):
        return False, "invalid permission response"
    if outcome.get("outcome") == "cancelled":
        return False, "permission request cancelled"
    if outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow":
        return True, ""
    if outcome.get("outcome") == "selected":
        return False, "rejected by the user"
    return False, "unknown permission outcome"


def main(argv: Optional[List[str]] = None) -> int:
    parser = Parser(
        prog="acp-fast demo-agent",
        description="A small scripted ACP agent on stdin/stdout (NDJSON), for demos, tests and proxy benchmarks.",
    )
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=1, help="protocol version to speak (default 1)")
    parser.add_argument(
        "--chunks",
        type=integer(1),
        default=4,
        metavar="N",
        help="message chunks and terminal output chunks per turn (default 4)",
    )
    parser.add_argument(
        "--delay", type=number(0), default=0.0, metavar="SECONDS", help="pause before every frame of a turn (default 0)"
    )
    parser.add_argument("--no-permission", action="store_true", help="do not ask for permission (the edit is applied)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    agent = DemoAgent(
        sys.stdin.buffer,
        sys.stdout.buffer,
        protocol_version=args.protocol,
        chunks=args.chunks,
        delay=args.delay,
        permission=not args.no_permission,
        hint=sys.stderr if _at_a_terminal() else None,
    )
    return agent.run()


def _at_a_terminal() -> bool:
    """A person is typing the frames: stdin is a terminal, or (behind ``acp-fast proxy`` run at a
    terminal, which relays what is typed) stderr, which reaches the same terminal."""
    for stream in (sys.stdin, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return True
        except (AttributeError, ValueError, OSError):
            continue
    return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
