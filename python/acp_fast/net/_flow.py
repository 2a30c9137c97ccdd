"""What happens to each frame of one connection of `acp-fast serve` or `acp-fast connect` between
its two sides, as in `acp-fast proxy` (docs/PROXY.md, docs/NETWORK.md): `--bridge`, the
middleware, the state and the recording (the connection's `Tap`), `--coalesce`.

The order is the proxy's. A line from the editor (the network client of `serve`, the stdio
editor of `connect`) goes through the middleware, into the state and the recording, then through
the bridge into the agent's version. A line from the agent goes through the bridge into the
editor's version first, then through the middleware, into the state and the recording, then
through the coalescer. So the middleware, the state and the recording see the editor's version;
with `--bridge 1:2 --coalesce` the bridge holds the tool-call updates itself (`Bridge(coalesce=)`)
and there is no coalescer. The bridge's refusals and its own answers, and the middleware's
injections, are handled as the proxy handles them (`bridge_lines`, `refusal_answer`,
`acp_fast.proxy` `Chain`).

A `Flow` lives in its connection's event loop: each call gives back the lines (without their line
ending) to write to each side, in order, and the owner writes them. A frame a middleware injects
from another thread, or outside a call, reaches the owner through `post` in the loop.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

import acp_fast

from ..bridge import Bridge
from ..proxy._middleware import Chain, Context, Middleware, Outcome, other_side
from ..proxy._relay import bridge_lines, line_error, located, refusal_answer
from ._tap import Tap

__all__ = ["Flow", "Sends"]

#: What a call gives back: (lines to the editor, lines to the agent), each without its line ending.
Sends = Tuple[List[bytes], List[bytes]]


def _frame(line: bytes) -> Any:
    """The Message or batch of a JSON-RPC line; None when it is not one (`line_error`'s rule)."""
    try:
        frame = acp_fast.decode(line)
    except acp_fast.DecodeError:
        return None
    if isinstance(frame, list) and frame and all(isinstance(entry, acp_fast.DecodeError) for entry in frame):
        return None
    return frame


class Flow:
    """One connection's frames between the editor and the agent. `bridge`: `(editor, agent)`
    protocol versions (`--bridge`); `coalesce`: `--coalesce`'s milliseconds; `middleware`: this
    connection's own instances, from the editor to the agent; `note`: a diagnostic; `post`: where
    the lines of a frame injected outside a call go (called in the loop)."""

    def __init__(
        self,
        tap: Tap,
        *,
        bridge: Optional[Tuple[int, int]] = None,
        coalesce: Optional[float] = None,
        middleware: Sequence[Middleware] = (),
        note: Callable[[str], None],
        post: Callable[[Sends], None],
    ) -> None:
        self.tap = tap
        self._note = note
        self._post = post
        self.bridge: Optional[Bridge] = (
            None if bridge is None else Bridge(editor=bridge[0], agent=bridge[1], coalesce=coalesce)
        )
        holds = self.bridge is not None and self.bridge.window is not None
        #: `--coalesce` (None with a bridge that holds the updates itself)
        self.coalescer: Optional[Any] = None if coalesce is None or holds else acp_fast.Coalescer(coalesce)
        #: Held while the state changes and the middleware run (`Context.lock`).
        self.lock = threading.RLock()
        self.chain = Chain(self, middleware)
        self._loop = asyncio.get_running_loop()
        self._out: Sends = ([], [])

    # -- what the middleware's contexts need (acp_fast.proxy._middleware.Host) -------------------

    @property
    def store(self) -> acp_fast.ToolCallStore:
        return self.tap.store

    def note(self, text: str) -> None:
        self._note(text)

    def send(self, ctx: Optional[Context], message: acp_fast.Message, to: str) -> None:
        """A frame a middleware injected outside a call (another thread, a timer): handled in the
        loop, its lines given to `post`."""
        self._loop.call_soon_threadsafe(self._send, ctx, message, to)

    def _send(self, ctx: Optional[Context], message: acp_fast.Message, to: str) -> None:
        with self.lock:
            outcome = self.chain.deliveries(ctx, message, to)
            self._deliver(to, [w for w, _ in outcome.delivered if w is not None])
            self._deliver(other_side(to), outcome.back)
            sends = self._take()
        if sends[0] or sends[1]:
            self._post(sends)

    # -- the two sides -----------------------------------------------------------------------------

    def from_editor(self, line: bytes, *, crlf: bool = False, eol: bool = True) -> Sends:
        """A line of the editor (no line ending; not blank), forwarded: the lines to write."""
        with self.lock:
            self._editor_line(line, crlf, eol)
            return self._take()

    def from_agent(self, line: bytes, *, crlf: bool = False, eol: bool = True) -> Sends:
        """A JSON line of the agent (no line ending): the lines to write."""
        with self.lock:
            if self.bridge is None:
                self._agent_line(line, crlf, eol)
            else:
                out, refused = bridge_lines(self.bridge.from_agent, line + b"\n")
                back = self.bridge.replies("agent")
                for frame, error in refused:  # never passed on in the agent's version: diverted
                    self._note(f"{located('agent', error.line, error)} (diverted here)")
                    sys.stderr.buffer.write(frame + b"\n")
                    sys.stderr.buffer.flush()
                    self.tap.line("agent", frame, action="diverted")
                    answer = refusal_answer(frame, error)
                    if answer is not None:
                        back.append(answer)
                self._deliver("agent", back)
                for converted in out:
                    self._agent_line(converted[:-1], False, True)
            return self._take()

    @property
    def deadline(self) -> Optional[float]:
        """When the oldest update held (by the coalescer or the bridge) is due (`time.monotonic`)."""
        due = [
            d
            for d in (
                None if self.coalescer is None else self.coalescer.deadline,
                None if self.bridge is None else self.bridge.deadline,
            )
            if d is not None
        ]
        return min(due) if due else None

    def due(self, now: float) -> Sends:
        """The held updates due at `now`."""
        with self.lock:
            if self.bridge is not None and self.bridge.window is not None:
                for frame in self.bridge.release_due(now):
                    self._agent_line(frame[:-1], False, True)
            if self.coalescer is not None:
                self._released(bytes(self.coalescer.due(now)))
            return self._take()

    def flush(self) -> Sends:
        """Every update still held (the end of the connection)."""
        with self.lock:
            if self.bridge is not None and self.bridge.window is not None:
                for frame in self.bridge.release():
                    self._agent_line(frame[:-1], False, True)
            if self.coalescer is not None:
                self._released(bytes(self.coalescer.flush()))
            return self._take()

    def inject(self, to: str, line: bytes) -> Sends:
        """A frame the endpoint itself sends `to` a side (an answer of its own): tracked, recorded
        as `"injected"` and written as the middleware's injected frames are."""
        with self.lock:
            self._deliver(to, [line + b"\n"])
            return self._take()

    # -- the steps -------------------------------------------------------------------------------

    def _take(self) -> Sends:
        out, self._out = self._out, ([], [])
        return out

    def _editor_line(self, line: bytes, crlf: bool, eol: bool) -> None:
        tap = self.tap
        error = line_error(line, 0)
        if error is not None:  # not JSON-RPC (forwarded without --strict): never the middleware's
            tap.lines["editor"] += 1
            tap.record("editor", line, is_json=error.code != -32700, crlf=crlf, eol=eol)
            self._to_agent(line + b"\n")
            return
        outcome: Optional[Outcome] = None
        if self.chain:
            frame = acp_fast.decode(line)
            if isinstance(frame, acp_fast.Message):
                outcome = self.chain.run(frame, "editor")
            else:
                outcome = self.chain.run_batch(frame, "editor")
        if outcome is None:
            tap.line("editor", line, crlf=crlf, eol=eol)
            self._to_agent(line + b"\n")
            return
        tap.lines["editor"] += 1
        if outcome.action is not None:
            tap.record(
                "editor", line, crlf=crlf, eol=eol, action=outcome.action, reason=outcome.reason,
                withheld=outcome.withheld,
            )  # fmt: skip
        for wire, injected in outcome.delivered:
            data = line if wire is None else wire.rstrip(b"\r\n")
            tap.track("editor", data)
            if injected:
                tap.record("editor", data, action="injected")
            else:
                tap.record("editor", data, crlf=crlf, eol=eol)
            self._to_agent(data + b"\n")
        self._deliver("editor", outcome.back)

    def _to_agent(self, data: bytes) -> None:
        """Lines of the editor, delivered (tracked, recorded): into the agent's version."""
        if self.bridge is None:
            self._out[1].append(data[:-1])
            return
        out, refused = bridge_lines(self.bridge.from_editor, data)
        back = self.bridge.replies("editor")
        for frame, error in refused:  # not forwarded: a request is answered
            answer = refusal_answer(frame, error)
            action = "dropped" if answer is None else "answered"
            self._note(f"{located('editor', error.line, error)} ({action}, not forwarded)")
            self.tap.record("editor", frame, action=action)
            if answer is not None:
                back.append(answer)
        self._out[1].extend(line[:-1] for line in out)
        self._deliver("editor", back)

    def _agent_line(self, line: bytes, crlf: bool, eol: bool) -> None:
        """A line of the agent in the editor's version: the middleware, the state, the recording,
        the coalescer."""
        tap = self.tap
        outcome: Optional[Outcome] = None
        if self.chain:
            frame = _frame(line)
            if isinstance(frame, acp_fast.Message):
                outcome = self.chain.run(frame, "agent")
            elif frame is not None:
                outcome = self.chain.run_batch(frame, "agent")
        tap.lines["agent"] += 1
        if outcome is None:
            tracked = tap.track("agent", line)
            self._through(line, tracked, lambda action: tap.record("agent", line, crlf=crlf, eol=eol, action=action))
            return
        if outcome.action is not None:
            tap.record(
                "agent", line, crlf=crlf, eol=eol, action=outcome.action, reason=outcome.reason,
                withheld=outcome.withheld,
            )  # fmt: skip
        for wire, injected in outcome.delivered:
            data = line if wire is None else wire.rstrip(b"\r\n")
            tracked = tap.track("agent", data)
            if injected:
                self._through(data, tracked, self._injected_record("agent", data))
            else:
                self._through(
                    data, tracked, lambda action: tap.record("agent", line, crlf=crlf, eol=eol, action=action)
                )
        self._deliver("agent", outcome.back)

    def _injected_record(self, side: str, data: bytes) -> Callable[[Optional[str]], None]:
        """Records an injected frame when it is written as it is (held: the merged line is)."""

        def record(action: Optional[str]) -> None:
            if action is None:
                self.tap.record(side, data, action="injected")

        return record

    def _deliver(self, to: str, frames: List[bytes]) -> None:
        """Frames injected towards `to` (the middleware's, the bridge's answers): tracked and
        recorded as the other side's (`"injected"`), then written on the way to `to`."""
        sender = other_side(to)
        for frame in frames:
            data = frame.rstrip(b"\r\n")
            tracked = self.tap.track(sender, data)
            if to == "editor":
                self._through(data, tracked, self._injected_record(sender, data))
            else:
                self.tap.record(sender, data, action="injected")
                self._to_agent(data + b"\n")

    def _through(self, line: bytes, tracked: bool, record: Callable[[Optional[str]], None]) -> None:
        """A line to the editor, through `--coalesce` when it is on (`record` records the line
        itself given its action: None, or `"coalesced"` when held)."""
        c = self.coalescer
        if c is None:
            record(None)
            self._out[0].append(line)
            return
        if c.protocol is None:
            c.protocol = self.tap.store.negotiated_version
        wire = line + b"\n"
        before = c.updates_in
        out = bytes(c.push(wire, time.monotonic(), tracked=tracked))
        if c.updates_in != before:  # held: its effect goes out later, in a merged line
            record("coalesced")
            self._released(out)
        else:
            self._released(out[: len(out) - len(wire)])
            record(None)
            self._out[0].append(line)

    def _released(self, data: bytes) -> None:
        """Lines the coalescer released (merged updates): recorded, to the editor."""
        for line in data.split(b"\n"):
            if line:
                self.tap.record("agent", line, action="injected", reason="coalesced")
                self._out[0].append(line)
