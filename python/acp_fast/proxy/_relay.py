"""One direction of the proxy's relay: read a side, frame, track state, run the middleware,
record, write whole lines to the other side (docs/PROXY.md).

A block of whole lines takes the fast path when nothing per frame is asked for: one
``ToolCallStore.feed`` over the block and one write. Lines that are not JSON-RPC, bad state
updates, a recording or middleware that changed a frame send it line by line (``slow_block`` /
``changed_block``), so that the diagnostics come in the order of the lines.

Diagnostics are the same whichever loop runs (this one or the core's, ``run_native``): the side's
own line number, and the error as [`acp_fast.decode`][acp_fast.decode] gives it for that line (for a batch with
no valid message, its first entry), at that line (``_relined``).

A ``Direction`` sees the proxy through ``Host`` (what it needs of it, no more);
``acp_fast.proxy.Proxy`` is one.
"""

from __future__ import annotations

import functools
import json
import os
import select
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Dict, List, Optional, Protocol, Tuple, cast

import orjson

import acp_fast

from .._terminal import printable
from ._middleware import Chain, Outcome, other_side

#: The exit status after ``agent_invalid="fail"`` stopped the session (EX_PROTOCOL of sysexits.h).
INVALID_LINES_STATUS = 76

__all__ = [
    "CHUNK",
    "INVALID_LINES_STATUS",
    "NOT_JSON_RPC",
    "Direction",
    "Host",
    "Output",
    "SchemaCheck",
    "Settings",
    "bridge_lines",
    "change_line",
    "line_error",
    "refusal_answer",
    "request_id",
]

CHUNK = 1 << 20
# DecodeError codes of lines that are not JSON-RPC messages (JSON errors, framing errors, invalid
# JSON-RPC). Bad state updates (-32602) are valid JSON-RPC and always forwarded.
NOT_JSON_RPC = (-32700, -32600)
#: The kind of the store's error for a batch frame under protocol v2, which has none (DESIGN §5).
NO_BATCHES = "batch_in_v2"


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Output:
    """A file descriptor written by more than one thread: whole writes under a lock, so lines
    from two writers never interleave."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.broken = False

    def write(self, data: Any) -> bool:
        """Write all of ``data``; False (and nothing more is written) once the reader is gone."""
        with self.lock:
            if self.broken:
                return False
            try:
                _write_all(self.fd, data)
            except (BrokenPipeError, ConnectionResetError):
                self.broken = True
                return False
            return True

    def close(self) -> None:
        with self.lock:
            self.broken = True
            try:
                os.close(self.fd)
            except OSError:
                pass


@dataclass(frozen=True)
class Settings:
    """The proxy's options that a direction reads (fixed for the proxy's life)."""

    max_frame_bytes: int
    #: ``agent_invalid`` and its limit: what happens to a line from the agent that is not JSON-RPC.
    agent_invalid: str = "divert"
    agent_invalid_limit: int = 1
    #: ``--strict``: answer the editor's lines that are not JSON-RPC.
    strict: bool = False
    #: ``--watch``: a stderr line for each change of the state.
    watch: bool = False
    #: Every line is recorded (``--record``, ``--trace``, ``--otlp``).
    recording: bool = False
    #: Something per frame needs Python (middleware, ``--watch``, ``--strict-schema``,
    #: ``--bridge``, ``--otlp``, a recording with ``--coalesce``): the core's relay is not used.
    per_frame: bool = False
    #: The core's relay builds the record lines (``--record``) of the lines it forwards...
    record_lines: bool = False
    #: ... and their trace events (``--trace``), ``ts`` counting from this (unix seconds).
    trace_start: Optional[float] = None
    #: ``--coalesce MS``: the agent's tool-call updates held up to MS milliseconds and merged
    #: (``acp_fast.Coalescer``); None: off.
    coalesce: Optional[float] = None
    #: ``--protocol``: the version both sides speak, when fixed (else the negotiated one).
    protocol: Optional[int] = None
    #: ``--bridge 1:2 --coalesce``: the bridge holds the agent's tool-call updates itself
    #: (``Bridge(coalesce=)``) and ``coalesce`` is None.
    bridge_holds: bool = False


class Host(Protocol):
    """What a ``Direction`` needs of the proxy that runs it (``acp_fast.proxy.Proxy``)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Any:
        """The state of every session (a ``ToolCallStore``), read and changed under ``lock``."""

    @property
    def lock(self) -> ContextManager[Any]: ...

    @property
    def chain(self) -> Chain:
        """The middleware (false when there are none)."""

    @property
    def schema(self) -> Optional[SchemaCheck]:
        """``--strict-schema``: the connection's schema check, else None."""

    @property
    def stopping(self) -> bool:
        """Set when the session is being stopped: the directions stop."""

    def note(self, text: str) -> None:
        """A diagnostic on stderr (unless quiet)."""

    def divert(self, data: bytes) -> None:
        """A line that is not JSON-RPC, diverted to stderr."""

    def stop(self, status: int, why: str) -> None:
        """Stop the session (``--agent-invalid fail``)."""

    def answer_editor(self, data: bytes, error: Any) -> None:
        """Answer the editor's invalid request ``data`` with a JSON-RPC error."""

    def lost(self, side: str) -> None:
        """Frames to ``side`` could not be delivered."""

    def bridged(self, side: str, data: bytes) -> Optional[bytes]:
        """``--bridge``: whole lines from ``side`` converted for the other side; None: no bridge."""

    def bridge_deadline(self) -> Optional[float]:
        """``--bridge 1:2 --coalesce``: when the oldest tool call the bridge holds is due
        (``time.monotonic``), None when it holds none."""

    def bridge_release(self, now: Optional[float]) -> bytes:
        """``--bridge 1:2 --coalesce``: the editor's lines for the tool calls the bridge held that
        are due at ``now`` (None: all of them)."""

    def record(
        self,
        side: str,
        data: bytes,
        is_json: bool,
        t: float,
        crlf: bool,
        eol: bool,
        action: Optional[str],
        reason: Optional[str] = None,
        withheld: bool = False,
    ) -> None:
        """Record one line of ``side`` (``withheld``: its length instead of its bytes)."""

    def record_too_large(self, side: str, length: int) -> None:
        """Record a line of ``side`` over the frame limit."""

    def recorded(self, record: bytes, trace: bytes, skipped: int) -> None:
        """Record lines and trace events the core's relay built (``skipped``: lines that gave no
        event)."""

    def deliver(self, to: str, frames: List[bytes], now: float) -> None:
        """Frames injected by the middleware, going to ``to``."""


class SchemaCheck:
    """``--strict-schema``: one conversation for the whole connection, both directions, that
    follows the protocol version negotiated by ``initialize`` by itself: a
    ``ToolCallStore(strict_schema=...)`` fed every frame as its sender sent it (before any
    middleware), whose verdicts (DecodeErrors of kind ``schema``) are taken. Its state is not
    used (its bounds are the least); the proxy's state is the editor's view, tracked as frames are
    delivered. ``protocol``: a fixed version (``--protocol``), else the negotiated one;
    ``unstable`` and ``draft`` (``--unstable``, ``--draft``): the schemas checked against."""

    def __init__(
        self, protocol: Optional[int], max_frame_bytes: int, unstable: bool = False, draft: Optional[str] = None
    ) -> None:
        self.store = acp_fast.ToolCallStore(
            protocol,
            strict_schema=protocol or True,
            unstable=unstable,
            draft=draft,
            max_frame_bytes=max_frame_bytes,
            max_tool_calls=1,
            max_terminal_bytes=0,
            max_content_items=0,
            max_plans=1,
            max_permissions=1,
            max_updates=0,
            max_terminals=1,
            max_entities=0,
            max_content_bytes=0,
            max_sessions=16,  # a few: the sessions that take turns are not dropped frame after frame
        )

    def block(self, data: bytes, source: str) -> Dict[int, Any]:
        """The first schema error of each line of ``data`` (whole lines) that has one, by its
        number in ``data`` (from 1). Call with the proxy's lock held."""
        base = self.store.line
        out: Dict[int, Any] = {}
        for r in self.store.feed(data, changes=False, source=source):
            if isinstance(r, acp_fast.DecodeError) and r.kind == "schema":
                assert r.line is not None  # the store's errors carry their line
                out.setdefault(r.line - base, r)
        return out

    def frame(self, data: bytes, source: str) -> Optional[Any]:
        """The first schema error of one frame (no line ending), else None. Call with the proxy's
        lock held."""
        try:
            result = self.store.apply(data, source=source)
        except acp_fast.DecodeError as e:
            return e if e.kind == "schema" else None
        if isinstance(result, list):
            return next((r for r in result if isinstance(r, acp_fast.DecodeError) and r.kind == "schema"), None)
        return None


def change_line(change: Any) -> Optional[str]:
    """``--watch``: the diagnostic of a state change (None for the changes it does not show)."""
    sid, target, ident, action, tcid = change
    if target in ("tool_call", "permission", "terminal", "plan", "file"):
        return f"[{sid}] {target} {ident} {action}"
    if target == "session" and action in ("closed", "replaying", "replayed"):
        return f"[{sid}] session {action}"
    return None


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _lines(block: bytes) -> List[bytes]:
    """The lines of a block (without ``\\n``); the last one unterminated when the block does not
    end in a newline."""
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()
    return lines


class Direction:
    """One direction of the relay: reads ``src``, tracks state, writes whole lines to ``dst``."""

    def __init__(self, host: Host, side: str, src: int, dst: Output) -> None:
        self.host = host
        self.settings = host.settings
        self.side = side  # who sends: "editor" or "agent"
        self.source = "client" if side == "editor" else "agent"
        self.src = src
        self.dst = dst
        max_frame_bytes = self.settings.max_frame_bytes
        # The lines of this side, exactly as they came, the whole lines of each read in one piece.
        # (An oversized line comes with its first bytes: its id, to answer it.)
        self.framer = acp_fast.Framer(max_frame_bytes=max_frame_bytes, joined=True, heads=True)
        # The messages of each block, for the middleware (whole lines only: it never holds a partial one).
        self.decoder = acp_fast.FrameDecoder(max_frame_bytes=max_frame_bytes)
        #: When this direction last moved (read, converted, wrote; ``time.monotonic``): after the
        #: agent exits, the proxy waits for its output as long as this keeps moving.
        self.active = time.monotonic()
        # --coalesce: the agent's tool-call updates on their way to the editor (docs/PROXY.md).
        coalesce = self.settings.coalesce
        self.coalescer: Optional[Any] = None
        if coalesce is not None and side == "agent":
            self.coalescer = acp_fast.Coalescer(coalesce, protocol=self.settings.protocol)
        self.stats: Dict[str, int] = dict(
            bytes_in=0,
            bytes_out=0,
            lines=0,
            invalid=0,
            diverted=0,
            dropped=0,
            answered=0,
            too_large=0,
            state_errors=0,
            undelivered=0,
            replaced=0,
            injected=0,
        )

    # -- the loop ----------------------------------------------------------------------------

    def native_relay(self) -> Optional[Any]:
        """The core's relay (``_native._Relay``) for this direction, when the native backend is in
        use and nothing per frame needs Python; None: the Python loop."""
        if self.settings.per_frame or os.environ.get("ACP_FAST_PROXY_RELAY") == "python":  # (to compare)
            return None
        relay_type = getattr(getattr(acp_fast, "_native", None), "_Relay", None)
        if relay_type is None or acp_fast.BACKEND != "rust":
            return None
        coalesce = self.settings.coalesce if self.side == "agent" else None
        settings = self.settings
        if settings.recording:  # --record / --trace: recorded by the core's relay (never with --coalesce)
            return relay_type(
                self.host.store,
                self.src,
                self.source,
                settings.max_frame_bytes,
                None,
                record=settings.record_lines,
                trace_start=settings.trace_start,
            )
        return relay_type(self.host.store, self.src, self.source, settings.max_frame_bytes, coalesce)

    def run(self) -> None:
        try:
            relay = self.native_relay()
        except BaseException as e:  # never die silently: the direction still closes its output
            self.host.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            self.dst.close()
            raise
        if relay is not None:
            self.run_native(relay)
            return
        host = self.host
        try:
            read = os.read
            src = self.src
            holding = self.coalescer is not None or (self.side == "agent" and self.settings.bridge_holds)
            while not host.stopping:
                if holding and not self.wait():
                    continue
                try:
                    chunk = read(src, CHUNK)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
                except OSError as e:
                    host.note(f"{self.side} stream read failed: {e}")
                    break
                self.active = time.monotonic()
                if not chunk:
                    break
                self.stats["bytes_in"] += len(chunk)
                self.events(self.framer.feed(chunk), True)
            # End of input: a last line without a newline is handled (and forwarded) as it is.
            if not host.stopping:
                self.events(self.framer.finish(), False)
        except BaseException as e:  # never die silently: report and close the direction
            host.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            raise
        finally:
            # Nothing held is lost: at the end, on a stop, on an error.
            try:
                if self.side == "agent" and self.settings.bridge_holds:
                    self.converted(host.bridge_release(None), self.stats["lines"], True)
            finally:
                if self.coalescer is not None:
                    self.released(self.coalescer.flush())
                    self.stats["coalesced"] = self.coalescer.updates_in
                    self.stats["coalesced_out"] = self.coalescer.frames_out
                self.dst.close()  # end of input passed on: the agent's stdin, or the editor's stdout

    def run_native(self, relay: Any) -> None:
        """The loop in the core (``_native._Relay``, rust/relay.rs): each step reads a chunk,
        tracks its lines and gives back the lines to forward, with the interpreter released;
        what needs Python (lines that are not JSON-RPC, lines over the limit, bad state updates)
        comes back as notices, handled here as in the Python loop. With ``--record`` /
        ``--trace`` the core builds the record lines and trace events of the lines it forwards
        (rust/record.rs), given to the writers once per step; the lines of the notices are
        recorded here, in their place (a notice's line stops the step)."""
        host = self.host
        stats = self.stats
        recording = self.settings.recording
        try:
            while not host.stopping:
                try:
                    step = relay.pump()
                except OSError as e:
                    host.note(f"{self.side} stream read failed: {e}")
                    break
                self.active = time.monotonic()
                if step is None:
                    break
                data, notices = step
                if recording:
                    host.recorded(*relay.records())
                if data and self.write(data, coalesce=False):
                    stats["bytes_out"] += len(data)
                for notice in notices:
                    if notice[0] == "invalid" and self.settings.agent_invalid == "pass":
                        # A line passed on goes after what is held (as in the Python loop).
                        rest = relay.flush()
                        if rest and self.write(rest, coalesce=False):
                            stats["bytes_out"] += len(rest)
                    self.notice(notice)
                    if self.host.stopping:  # set by the notice (--agent-invalid fail)
                        break
        except BaseException as e:  # never die silently: report and close the direction
            host.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            raise
        finally:
            if recording:
                host.recorded(*relay.records())
            rest = relay.flush()  # what --coalesce held (on a stop; at the end pump gave it)
            if rest and self.write(rest, coalesce=False):
                stats["bytes_out"] += len(rest)
            stats["bytes_in"] = relay.bytes_in
            stats["lines"] = relay.lines
            if self.settings.coalesce is not None and self.side == "agent":
                stats["coalesced"], stats["coalesced_out"] = relay.coalesced
            self.dst.close()

    def notice(self, notice: Tuple[Any, ...]) -> None:
        """A notice of the native relay: a line over the limit, a bad state update (forwarded),
        or a line that is not JSON-RPC (not forwarded unless its rule says so). Its errors are
        the core's, at the side's line, as the Python loop gives them."""
        kind, line = notice[0], notice[1]
        if kind == "too_large":
            self.stats["lines"] -= 1  # counted by the relay (skipped() counts it again)
            self.skipped(line, notice[2], notice[3])
        elif kind == "state_error":
            self.state_error(line, notice[2])
        else:
            wire, error = notice[2], notice[3]
            data = wire[:-1] if wire.endswith(b"\n") else wire
            if data.endswith(b"\r"):
                data = data[:-1]
            action = self.invalid(data, error, line)
            if self.settings.recording:  # as slow_block records it
                eol = wire.endswith(b"\n")
                data = wire[:-1] if eol else wire
                crlf = eol and data.endswith(b"\r")
                if crlf:
                    data = data[:-1]
                is_json = error.code != -32700 and bool(data.strip())
                self.host.record(self.side, data, is_json, time.time(), crlf, eol, action)
            if action is None and self.write(wire, coalesce=False):
                self.stats["bytes_out"] += len(wire)

    def events(self, events: List[Any], eol: bool) -> None:
        """The framer's events: whole lines (ending in ``\\n`` when ``eol``, else the last line of
        the stream) and lines over the limit (their length)."""
        for event in events:
            if self.host.stopping:
                return
            line, data = event[0], event[1]
            if type(data) is int:
                self.skipped(line, data, event[2])
            else:
                self.block(data, line - 1, eol)

    def skipped(self, line: int, length: int, head: bytes) -> None:
        """Line ``line``, over the limit (``length`` bytes, newline included), was skipped;
        ``head``: its first bytes. A request is answered with the error the SDK integration
        gives an oversized frame, with the request's id; a response goes to the side that asked
        as that error, so that neither side waits for a frame that will never come."""
        self.stats["lines"] += 1
        self.stats["too_large"] += 1
        kind, rid = frame_head(head)
        to = None if rid is None else self.side if kind == "request" else other_side(self.side)
        self.host.note(
            f"{self.side} line {line}: expected a frame of at most {self.settings.max_frame_bytes} bytes, "
            f"found {length} bytes; not forwarded"
            + ("" if to is None else f" (the {kind} {printable(repr(rid))} answered with an error to the {to})")
        )
        if self.settings.recording:
            self.host.record_too_large(self.side, length)
        if to is not None:
            details = f"{self.side} line {line}: expected a frame of at most {self.settings.max_frame_bytes} bytes, found {length}"
            error = {"code": -32700, "message": "Parse error", "data": {"details": details}}
            self.host.deliver(to, [orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n"], time.time())

    def state_error(self, line: int, error: Any) -> None:
        """A bad state update (−32602) at line ``line``: reported; the frame is forwarded."""
        self.stats["state_errors"] += 1
        self.host.note(f"{located(self.side, line, error)} (forwarded)")

    def show_change(self, change: Any) -> None:
        """``--watch``: one stderr line for a state change."""
        text = change_line(change)
        if text is not None:
            self.host.note(text)

    def show_evicted(self, count: int) -> None:
        """``--watch``: the sessions ``--max-sessions`` dropped while a block was tracked."""
        self.host.note(f"{count} least recently active session{'s' if count > 1 else ''} evicted (--max-sessions)")

    # -- one block of whole lines --------------------------------------------------------------

    def block(self, block: bytes, before: int, eol: bool) -> None:
        """Track and forward ``block``: whole lines ending in ``\\n`` (``eol``), or the last
        unterminated line of the stream; ``before`` is the number of the line before it."""
        host = self.host
        if self.side == "agent":  # --bridge: the editor's version from here on
            bridged = host.bridged(self.side, block if eol else block + b"\n")
            if bridged is not None:
                block, eol = bridged, True
                if not block:
                    return
        self.converted(block, before, eol)

    def converted(self, block: bytes, before: int, eol: bool) -> None:
        """``block`` in the editor's version (after ``--bridge``): tracked, through the middleware,
        recorded and forwarded."""
        if not block:
            return
        host = self.host
        if host.chain:
            self.middleware_block(block, before, eol)
            return
        self.tracked_block(block, before, eol)

    def tracked_block(self, block: bytes, before: int, eol: bool) -> None:
        """Track ``block`` in the state, then forward it (each line as it came)."""
        host = self.host
        watch = self.settings.watch
        fed = block if eol else block + b"\n"
        with host.lock:
            base = host.store.line
            evicted = host.store.evicted_sessions if watch else 0
            results = host.store.feed(fed, changes=watch, source=self.source)
            if watch:
                evicted = host.store.evicted_sessions - evicted
            self.stats["lines"] += host.store.line - base  # the store's framer counted the block's lines
            schema = host.schema.block(fed, self.source) if host.schema is not None else None
        suspect: List[int] = []  # lines with an error of a line that is not JSON-RPC (or of a batch entry)
        batches: Dict[int, Any] = {}  # batch lines under v2, which has none: the store's error
        state: Dict[int, List[Any]] = {}
        for r in results:
            if isinstance(r, acp_fast.DecodeError):
                assert r.line is not None  # the store's errors carry their line
                rel = r.line - base
                if r.kind == NO_BATCHES:
                    batches[rel] = r
                elif r.code in NOT_JSON_RPC:
                    if not suspect or suspect[-1] != rel:
                        suspect.append(rel)
                else:
                    state.setdefault(rel, []).append(r)
            elif watch:
                self.show_change(r)
        if evicted:
            self.show_evicted(evicted)
        if not suspect and not state and not schema and not batches and not self.settings.recording:
            if self.write(block):
                self.stats["bytes_out"] += len(block)
            return
        bad: Dict[int, Any] = {}
        if suspect or schema or batches:
            lines = _lines(block)
            for rel, error in batches.items():
                bad[rel] = _relined(error, before + rel, _strip_cr(lines[rel - 1]))
            for rel in suspect:
                error = line_error(_strip_cr(lines[rel - 1]), before + rel)
                if error is not None:  # else a batch with a valid message: a frame
                    bad[rel] = error
            for rel, error in (schema or {}).items():
                if rel not in bad:
                    bad[rel] = _relined(error, before + rel, _strip_cr(lines[rel - 1]))
        self.slow_block(block, bad, before, state)

    def schema_error(self, data: bytes, line: int) -> Optional[Any]:
        """``--strict-schema``: the DecodeError (kind ``schema``) of a frame that the official schema
        or a protocol rule refuses, at line ``line``, else None (call with the lock held)."""
        assert self.host.schema is not None
        error = self.host.schema.frame(data, self.source)
        return None if error is None else _relined(error, line, data)

    def slow_block(self, block: bytes, bad: Dict[int, Any], before: int, state: Dict[int, List[Any]]) -> None:
        """Line by line: the block has lines that are not JSON-RPC (``bad``: their errors by line
        in the block), bad state updates (``state``), or is being recorded."""
        host = self.host
        recording = self.settings.recording
        lines = acp_fast.Framer(max_frame_bytes=self.settings.max_frame_bytes, keepends=True)
        out: List[bytes] = []
        now = time.time()
        # Every line of the block is within the limit (longer ones were skipped): (line, bytes) events.
        events = cast(List[Tuple[int, bytes]], lines.feed(block) + lines.finish())
        for index, wire in events:
            line_eol = wire.endswith(b"\n")
            data = wire[:-1] if line_eol else wire
            crlf = line_eol and data.endswith(b"\r")
            if crlf:
                data = data[:-1]
            error = bad.get(index)
            action = None
            if error is not None:
                action = self.invalid(data, error, before + index)
            # Embedded verbatim when it is JSON (valid, or JSON but not JSON-RPC); blank lines
            # and non-JSON lines are recorded as text / base64.
            is_json = (error is None or error.code != -32700) and bool(data.strip())
            if action is None:
                # A line not forwarded (diverted, dropped) left the state as it was: its bad state
                # update is not reported as forwarded.
                for e in state.get(index, ()):
                    self.state_error(before + index, _relined(e, before + index, data))
                record = None
                if recording:
                    record = functools.partial(host.record, self.side, data, is_json, now, crlf, line_eol)
                out.append(self.through(wire, index not in state and error is None, now, record))
            elif recording:
                host.record(self.side, data, is_json, now, crlf, line_eol, action)
            if host.stopping:
                break
        if out:
            data = b"".join(out)
            if self.write(data, coalesce=False):
                self.stats["bytes_out"] += len(data)

    # -- with middleware -------------------------------------------------------------------------

    def middleware_block(self, block: bytes, before: int, eol: bool) -> None:
        """Every message of the block through the middleware, each tracked in the state as it is
        delivered (so a middleware sees the state of the frames before its own); then the block is
        forwarded as it came when no middleware changed anything, else line by line."""
        host = self.host
        run = host.chain.run
        side = self.side
        outcomes: Dict[int, Outcome] = {}
        bad: Dict[int, Any] = {}
        state: Dict[int, List[Any]] = {}
        schema = host.schema is not None
        message_type = acp_fast.Message
        apply = host.store.apply
        source = self.source
        watch = self.settings.watch
        lines = _lines(block)
        with host.lock:
            base = self.decoder.line
            # Messages (Batches, DecodeErrors) of the block, with their line numbers; blank lines skipped.
            items: List[Any] = self.decoder.feed(block if eol else block + b"\n")
            for item in items:
                index = item.line - base
                if isinstance(item, acp_fast.DecodeError):  # not JSON-RPC: the usual rules, never middleware
                    bad[index] = _relined(item, before + index, _strip_cr(lines[index - 1]))
                    continue
                single = type(item) is message_type
                if not single and not any(isinstance(m, message_type) for m in item):
                    bad[index] = _relined(item[0], before + index, _strip_cr(lines[index - 1]))  # no valid message
                    continue
                if not single and host.store.protocol_version == 2:
                    try:  # v2 has no batches: the store's error for the whole line, nothing applied
                        apply(item.raw, source=source)
                    except acp_fast.DecodeError as e:
                        bad[index] = _relined(e, before + index, _strip_cr(lines[index - 1]))
                        continue
                if schema:
                    error = self.schema_error(_strip_cr(lines[index - 1]), before + index)
                    if error is not None:  # refused: handled as a line that is not JSON-RPC (tracked all the same)
                        bad[index] = error
                        state[index] = self.track(item)
                        continue
                outcome = run(item, side) if single else host.chain.run_batch(item, side)
                if outcome is None:  # unchanged: tracked here (the common case, inline)
                    try:
                        # A batch as its line: its state errors at their offsets in the line.
                        change = apply(item if single else item.raw, source=source)
                    except acp_fast.DecodeError as e:
                        state[index] = [e]
                        continue
                    if single:
                        if watch and change is not None:
                            self.show_change(change)
                        continue
                    for c in change:
                        if isinstance(c, acp_fast.DecodeError):
                            if c.code not in NOT_JSON_RPC:  # (an invalid entry is not a state error)
                                state.setdefault(index, []).append(c)
                        elif watch and c is not None:
                            self.show_change(c)
                    continue
                outcomes[index] = outcome
                for wire, _ in outcome.delivered:
                    errors = self.track(item if wire is None else wire)
                    if errors:
                        state.setdefault(index, []).extend(errors)
            self.stats["lines"] += self.decoder.line - base
        if not outcomes:
            if not bad and not state and not self.settings.recording:
                if self.write(block):
                    self.stats["bytes_out"] += len(block)
                return
            self.slow_block(block, bad, before, state)
        else:
            self.changed_block(lines, eol, before, outcomes, bad, state)

    def changed_block(
        self,
        lines: List[bytes],
        eol: bool,
        before: int,
        outcomes: Dict[int, Outcome],
        bad: Dict[int, Any],
        state: Dict[int, List[Any]],
    ) -> None:
        """Line by line (already tracked), with what the middleware made of each message."""
        host = self.host
        recording = self.settings.recording
        out: List[bytes] = []
        back: List[bytes] = []
        now = time.time()
        for index, wire in enumerate(lines, 1):
            line_eol = eol or index < len(lines)
            crlf = wire.endswith(b"\r")
            data = wire[:-1] if crlf else wire
            line = wire + b"\n" if line_eol else wire
            for e in state.get(index, ()):
                self.state_error(before + index, _relined(e, before + index, data))
            outcome = outcomes.get(index)
            if outcome is None:  # unchanged, or not a message: as without middleware
                error = bad.get(index)
                action = self.invalid(data, error, before + index) if error is not None else None
                is_json = (error is None or error.code != -32700) and bool(data.strip())
                if action is None:
                    record: Optional[Callable[[Optional[str]], None]] = None
                    if recording:
                        record = functools.partial(host.record, self.side, data, is_json, now, crlf, line_eol)
                    out.append(self.through(line, index not in state and error is None, now, record))
                elif recording:
                    host.record(self.side, data, is_json, now, crlf, line_eol, action)
                if host.stopping:
                    break
                continue
            if outcome.action is not None:
                self.stats[outcome.action] += 1
                if recording:
                    host.record(
                        self.side, data, True, now, crlf, line_eol, outcome.action, outcome.reason, outcome.withheld
                    )
            tracked = index not in state
            for wire_out, injected in outcome.delivered:
                if injected:
                    self.stats["injected"] += 1
                record = None
                if recording:
                    if wire_out is None:
                        record = functools.partial(host.record, self.side, data, True, now, crlf, line_eol)
                    else:
                        record = self.injected_record(wire_out, now)
                out.append(self.through(line if wire_out is None else wire_out, tracked, now, record))
            back += outcome.back
        if out:
            data = b"".join(out)
            if self.write(data, coalesce=False):
                self.stats["bytes_out"] += len(data)
        if back:  # injected by the middleware, going back to this side
            host.deliver(self.side, back, now)

    def track(self, frame: Any) -> List[Any]:
        """Apply one delivered frame (a Message, Batch or bytes) to the state: its bad state
        updates (the frame is forwarded all the same), for the caller to report."""
        host = self.host
        watch = self.settings.watch
        with host.lock:
            evicted = host.store.evicted_sessions if watch else 0
            try:
                change = host.store.apply(frame, source=self.source)
            except acp_fast.DecodeError as e:
                return [e]
            if watch:
                evicted = host.store.evicted_sessions - evicted
        if evicted:
            self.show_evicted(evicted)
        errors: List[Any] = []
        for c in change if isinstance(change, list) else [change]:
            if isinstance(c, acp_fast.DecodeError):
                if c.code not in NOT_JSON_RPC:
                    errors.append(c)
            elif self.settings.watch and isinstance(c, acp_fast.Change):
                self.show_change(c)
        return errors

    # -- lines that are not JSON-RPC ---------------------------------------------------------------

    def invalid(self, data: bytes, error: Any, line: int, passable: bool = True) -> Optional[str]:
        """What to do with a line that is not JSON-RPC: None (forward it) or the action taken.
        ``passable=False``: a line of the agent that cannot be passed on as it is (the bridge
        refused it) is diverted under ``--agent-invalid pass``."""
        host = self.host
        settings = self.settings
        self.stats["invalid"] += 1
        where = located(self.side, line, error)
        if self.side == "agent":
            policy = settings.agent_invalid
            if policy == "pass" and passable:
                host.note(f"{where} (passed on)")
                return None
            if policy == "drop":
                self.stats["dropped"] += 1
                host.note(f"{where} (dropped)")
                return "dropped"
            self.stats["diverted"] += 1
            host.divert(data)
            if policy == "fail" and self.stats["invalid"] >= settings.agent_invalid_limit:
                n = self.stats["invalid"]
                host.stop(
                    INVALID_LINES_STATUS,
                    f"{where}; {n} line{'s' if n > 1 else ''} from the agent "
                    f"{'were' if n > 1 else 'was'} not JSON-RPC (--agent-invalid fail={settings.agent_invalid_limit})",
                )
            return "diverted"
        if not (settings.strict or (host.schema is not None and error.kind == "schema")):
            host.note(f"{where} (forwarded)")
            return None
        self.stats["answered"] += 1
        host.note(f"{where} (answered with an error, not forwarded)")
        host.answer_editor(data, error)
        return "answered"

    # -- --coalesce ----------------------------------------------------------------------------

    def through(self, wire: bytes, tracked: bool, now: float, record: Optional[Callable[..., None]] = None) -> bytes:
        """Lines to forward (``wire``), through ``--coalesce`` when it is on: the bytes to write
        for them now. ``tracked``: the state applied them without error. ``record`` (one line,
        while recording): records the line itself, given its action (None: forwarded,
        ``"coalesced"``: held, its effect sent later in a merged line); the lines the coalescer
        releases are recorded around it as ``"injected"``."""
        c = self.coalescer
        if c is None:
            if record is not None:
                record(None)
            return wire
        if c.protocol is None:
            c.protocol = self.host.store.negotiated_version
        if record is None:
            return bytes(c.push(wire, time.monotonic(), tracked=tracked))
        before = c.updates_in
        out = bytes(c.push(wire, time.monotonic(), tracked=tracked))
        held = c.updates_in != before
        released = out if held else out[: len(out) - len(wire)]
        if not held:
            self.record_released(released, now)
        record("coalesced" if held else None)
        if held:
            self.record_released(released, now)
        return out

    def injected_record(self, wire: bytes, now: float) -> Callable[[Optional[str]], None]:
        """The ``record`` of ``through`` for a frame the proxy injected: recorded as
        ``"injected"`` when it is written as it is, not at all when held (the merged line that
        carries its effect is)."""
        host = self.host

        def record(action: Optional[str]) -> None:
            if action is None:
                host.record(self.side, wire.rstrip(b"\r\n"), True, now, False, True, "injected")

        return record

    def record_released(self, data: bytes, now: float) -> None:
        """Record the lines ``--coalesce`` released (``"injected"``, reason ``coalesced``)."""
        if not data or not self.settings.recording:
            return
        for line in _lines(data):
            crlf = line.endswith(b"\r")
            self.host.record(self.side, line[:-1] if crlf else line, True, now, crlf, True, "injected", "coalesced")

    def wait(self) -> bool:
        """Before a read (``--coalesce``): wait for input until the oldest held update is due;
        when it is, release what is due (False: nothing to read yet)."""
        c = self.coalescer
        due = [d for d in (c.deadline if c is not None else None, self.host.bridge_deadline()) if d is not None]
        if not due:
            return True
        timeout = min(due) - time.monotonic()
        if timeout > 0 and select.select([self.src], [], [], timeout)[0]:
            return True
        now = time.monotonic()
        if self.settings.bridge_holds:
            self.converted(self.host.bridge_release(now), self.stats["lines"], True)
        if c is not None:
            self.released(c.due(now))
        return False

    def released(self, data: bytes) -> None:
        """Write (and record) lines the coalescer released on its own (due, or at the end)."""
        if not data:
            return
        self.record_released(data, time.time())
        if self.write(data, coalesce=False):
            self.stats["bytes_out"] += len(data)

    def write(self, data: bytes, coalesce: bool = True) -> bool:
        """Write lines to the other side (with ``coalesce``, through ``--coalesce`` first)."""
        if coalesce and self.coalescer is not None:
            data = self.through(data, True, 0.0)
            if not data:
                return True
        if self.side == "editor":  # --bridge: into the agent's version
            bridged = self.host.bridged(self.side, data)
            if bridged is not None:
                data = bridged
        written = self.dst.write(data)
        self.active = time.monotonic()
        if written:
            return True
        self.stats["undelivered"] += len(data)
        self.host.lost(self.side)
        return False


def bridge_lines(
    convert: Callable[[bytes], List[bytes]], data: bytes, progress: Optional[Callable[[], None]] = None
) -> Tuple[List[bytes], List[Tuple[bytes, Any]]]:
    """``--bridge``: whole lines ``data`` of one side through ``convert`` (the bridge's
    ``from_agent`` or ``from_editor``): the lines for the other side (each ending in ``\\n``; a
    line that is not JSON-RPC is left as it is, for the usual rules further on), and the frames
    the bridge refused with its errors (docs/BRIDGE.md "Frames the bridge refuses"; they left the
    bridge as it was). ``progress`` is called before each line."""
    out: List[bytes] = []
    refused: List[Tuple[bytes, Any]] = []
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        if progress is not None:
            progress()
        if not line.strip():
            out.append(line + b"\n")
            continue
        try:
            out += convert(line + b"\n")
        except acp_fast.DecodeError as e:
            if line_error(_strip_cr(line), 0) is not None:
                out.append(line + b"\n")  # not JSON-RPC: the usual rules apply further on
            else:
                refused.append((_strip_cr(line), e))  # a frame the bridge cannot convert
    return out, refused


def refusal_answer(line: bytes, error: Any) -> Optional[bytes]:
    """The JSON-RPC error (a line ending in ``\\n``) answering a request the bridge refused with
    ``error``; None when ``line`` is not a request (nothing to answer)."""
    frame = acp_fast.decode(line)
    if isinstance(frame, list) or frame.kind != "request":
        return None
    answer = {"code": error.code, "message": str(error), "data": {"bridge": error.kind}}
    return orjson.dumps({"jsonrpc": "2.0", "id": frame.id, "error": answer}) + b"\n"


def located(side: str, line: int, error: Any) -> str:
    """``"editor line 5 column 1: expected a JSON value, found 'h'"``: where ``error`` is, with one
    line number, the line's on its side (a decode error's own message without the position it
    carries), for the proxy's stderr notes."""
    msg = getattr(error, "msg", None)
    column = getattr(error, "colno", None)
    if isinstance(msg, str) and isinstance(column, int) and column > 0:
        return f"{side} line {line} column {column}: {msg}"
    return f"{side} line {line}: {error}"


def _relined(error: Any, line: int, data: bytes) -> Any:
    """``error`` (of line ``data``, at its offsets in it) as the error of line ``line`` of its side."""
    pos = error.position
    out = acp_fast.DecodeError(
        error.msg,
        code=error.code,
        kind=error.kind,
        position=pos,
        lineno=None if pos is None else line,
        colno=None if pos is None else pos + 1,
        line=line,
        raw=data,
    )
    problems = getattr(error, "problems", None)
    if problems is not None:  # a schema error's list of problems
        out.problems = problems  # type: ignore[attr-defined]
    return out


def line_error(data: bytes, line: int) -> Optional[Any]:
    """The error of a line that is not JSON-RPC, as [`acp_fast.decode`][acp_fast.decode] gives it (for a batch
    with no valid message, its first entry's), at line ``line`` of its side; None when the line
    is a frame (a batch holding at least one valid message is one)."""
    try:
        frame = acp_fast.decode(data)
    except acp_fast.DecodeError as e:
        return _relined(e, line, data)
    if isinstance(frame, list) and frame and all(isinstance(entry, acp_fast.DecodeError) for entry in frame):
        return _relined(frame[0], line, data)
    return None


def frame_head(head: bytes) -> Tuple[Optional[str], Any]:
    """What the first bytes of a frame say: (``"request"`` or ``"response"``, its id), or
    (None, None) when they do not say both (a notification, an id that is not a string or an
    integer, or members cut before they tell). Read member by member as far as they are whole."""
    text = head.decode("utf-8", "ignore")
    decode = _JSON.raw_decode
    members: Dict[str, Any] = {}
    at = _skip_ws(text, 0)
    if text[at : at + 1] == "{":
        try:
            at = _skip_ws(text, at + 1)
            while at < len(text) and text[at] == '"':
                key, at = decode(text, at)
                at = _skip_ws(text, at)
                if text[at : at + 1] != ":":
                    break
                at = _skip_ws(text, at + 1)
                members[key] = None
                members[key], at = decode(text, at)
                at = _skip_ws(text, at)
                if text[at : at + 1] != ",":
                    break
                at = _skip_ws(text, at + 1)
        except (ValueError, RecursionError):  # cut here (or deeper than json reads): what came before
            pass
    rid = members.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        return None, None
    if "method" in members or "params" in members:
        return "request", rid
    if "result" in members or "error" in members:
        return "response", rid
    return None, None


_JSON = json.JSONDecoder()


def _skip_ws(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def request_id(data: bytes) -> Any:
    """The id of an invalid request, when one can be read (JSON-RPC: else null)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict):
        rid = value.get("id")
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            return rid
    return None
