"""One direction of the proxy's relay: read a side, frame, track state, run the middleware,
record, write whole lines to the other side (docs/PROXY.md).

A block of whole lines takes the fast path when nothing per frame is asked for: one
``ToolCallStore.feed`` over the block and one write. Lines that are not JSON-RPC, a recording or
middleware that changed a frame send it line by line (``slow_block`` / ``changed_block``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

import orjson

import acp_fast

from ._middleware import Outcome

if TYPE_CHECKING:  # pragma: no cover - typing only (the proxy imports this module)
    from ._proxy import Proxy

#: The exit status after ``agent_invalid="fail"`` stopped the session (EX_PROTOCOL of sysexits.h).
INVALID_LINES_STATUS = 76

__all__ = ["CHUNK", "INVALID_LINES_STATUS", "NOT_JSON_RPC", "Direction", "Output", "all_invalid", "request_id"]

CHUNK = 1 << 20
# DecodeError codes of lines that are not JSON-RPC messages (JSON errors, framing errors, invalid
# JSON-RPC). Bad state updates (-32602) are valid JSON-RPC and always forwarded.
NOT_JSON_RPC = (-32700, -32600)


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

    def __init__(self, proxy: Proxy, side: str, src: int, dst: Output) -> None:
        self.proxy = proxy
        self.side = side  # who sends: "editor" or "agent"
        self.source = "client" if side == "editor" else "agent"
        self.src = src
        self.dst = dst
        # The lines of this side, exactly as they came, the whole lines of each read in one piece.
        self.framer = acp_fast.Framer(max_frame_bytes=proxy.max_frame_bytes, joined=True)
        # The messages of each block, for the middleware (whole lines only: it never holds a partial one).
        self.decoder = acp_fast.FrameDecoder(max_frame_bytes=proxy.max_frame_bytes)
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

    def run(self) -> None:
        relay = self.proxy.native_relay(self)
        if relay is not None:
            self.run_native(relay)
            return
        try:
            read = os.read
            src = self.src
            while not self.proxy.stopping:
                try:
                    chunk = read(src, CHUNK)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
                except OSError as e:
                    self.proxy.note(f"{self.side} stream read failed: {e}")
                    break
                if not chunk:
                    break
                self.stats["bytes_in"] += len(chunk)
                self.events(self.framer.feed(chunk), True)
            # End of input: a last line without a newline is handled (and forwarded) as it is.
            if not self.proxy.stopping:
                self.events(self.framer.finish(), False)
        except BaseException as e:  # never die silently: report and close the direction
            self.proxy.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            raise
        finally:
            self.dst.close()  # end of input passed on: the agent's stdin, or the editor's stdout

    def run_native(self, relay: Any) -> None:
        """The loop in the core (``_native._Relay``, rust/relay.rs): each step reads a chunk,
        tracks its lines and gives back the lines to forward, with the interpreter released;
        what needs Python (lines that are not JSON-RPC, lines over the limit, bad state updates)
        comes back as notices, handled here as in the Python loop."""
        proxy = self.proxy
        stats = self.stats
        try:
            while not proxy.stopping:
                try:
                    step = relay.pump()
                except OSError as e:
                    proxy.note(f"{self.side} stream read failed: {e}")
                    break
                if step is None:
                    break
                data, notices = step
                if data and self.write(data):
                    stats["bytes_out"] += len(data)
                for notice in notices:
                    self.notice(notice)
                    if self.proxy.stopping:  # set by the notice (--agent-invalid fail)
                        break
        except BaseException as e:  # never die silently: report and close the direction
            proxy.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            raise
        finally:
            stats["bytes_in"] = relay.bytes_in
            stats["lines"] = relay.lines
            self.dst.close()

    def notice(self, notice: Tuple[Any, ...]) -> None:
        """A notice of the native relay: a line over the limit, a bad state update (forwarded),
        or a line that is not JSON-RPC (not forwarded unless its rule says so)."""
        kind, line = notice[0], notice[1]
        if kind == "too_large":
            self.stats["lines"] -= 1  # counted by the relay (skipped() counts it again)
            self.skipped(line, notice[2])
        elif kind == "state_error":
            self.stats["state_errors"] += 1
            self.proxy.note(f"{self.side} line {line}: {notice[2]} (forwarded)")
        else:
            wire, error = notice[2], notice[3]
            data = wire[:-1] if wire.endswith(b"\n") else wire
            if data.endswith(b"\r"):
                data = data[:-1]
            if self.invalid(data, error, line) is None and self.write(wire):
                self.stats["bytes_out"] += len(wire)

    def events(self, events: List[Any], eol: bool) -> None:
        """The framer's events: whole lines (ending in ``\\n`` when ``eol``, else the last line of
        the stream) and lines over the limit (their length)."""
        for line, data in events:
            if self.proxy.stopping:
                return
            if type(data) is int:
                self.skipped(line, data)
            else:
                self.block(data, line - 1, eol)

    def skipped(self, line: int, length: int) -> None:
        """Line ``line``, over the limit (``length`` bytes, newline included), was skipped."""
        self.stats["lines"] += 1
        self.stats["too_large"] += 1
        self.proxy.note(
            f"{self.side} line {line}: expected a frame of at most {self.proxy.max_frame_bytes} bytes, "
            f"found {length} bytes; not forwarded"
        )
        if self.proxy.recorder is not None:
            self.proxy.record_too_large(self.side, length)

    # -- one block of whole lines --------------------------------------------------------------

    def block(self, block: bytes, before: int, eol: bool) -> None:
        """Track and forward ``block``: whole lines ending in ``\\n`` (``eol``), or the last
        unterminated line of the stream; ``before`` is the number of the line before it."""
        proxy = self.proxy
        if proxy.bridge is not None and self.side == "agent":  # --bridge: the editor's version from here on
            block = proxy.bridged(self.side, block if eol else block + b"\n")
            eol = True
            if not block:
                return
        if proxy.chain:
            self.middleware_block(block, before, eol)
            return
        self.tracked_block(block, before, eol)

    def tracked_block(self, block: bytes, before: int, eol: bool, schema: Optional[Dict[int, Any]] = None) -> None:
        """Track ``block`` in the state, then forward it (each line as it came). ``schema``: the
        ``--strict-schema`` errors of its lines, when already known."""
        proxy = self.proxy
        fed = block if eol else block + b"\n"
        with proxy.lock:
            base = proxy.store.line
            results = proxy.store.feed(fed, changes=proxy.watch, source=self.source)
            self.stats["lines"] += proxy.store.line - base  # the store's framer counted the block's lines
        bad: Dict[int, Any] = {}
        for r in results:
            if isinstance(r, acp_fast.DecodeError):
                assert r.line is not None  # the store's errors carry their line
                rel = r.line - base
                if r.code in NOT_JSON_RPC:
                    bad[rel] = r
                else:
                    self.stats["state_errors"] += 1
                    proxy.note(f"{self.side} line {before + rel}: {r} (forwarded)")
            elif proxy.watch:
                proxy.show_change(r)
        if schema is not None:
            bad.update(schema)
        elif proxy.strict_schema:
            self.schema_check(block, bad, before)
        if not bad and proxy.recorder is None:
            if self.write(block):
                self.stats["bytes_out"] += len(block)
            return
        self.slow_block(block, bad, before)

    def schema_check(self, block: bytes, bad: Dict[int, Any], before: int) -> None:
        """``--strict-schema``: add the frames of the block that the official schema (or a protocol
        rule) refuses to ``bad``, as DecodeErrors of kind ``schema``; warnings are noted."""
        for index, wire in enumerate(_lines(block), 1):
            data = wire[:-1] if wire.endswith(b"\r") else wire
            if index in bad or not data.strip():
                continue
            error = self.schema_error(data, before + index)
            if error is not None:
                bad[index] = error

    def schema_error(self, data: bytes, line: int) -> Optional[Any]:
        """``--strict-schema``: the DecodeError (kind ``schema``) of a frame that the official schema
        or a protocol rule refuses, else None; warnings are noted."""
        proxy = self.proxy
        with proxy.lock:
            problems = proxy.schema_validator().validate(data, sender=self.side)
        errors = [p for p in problems if p.severity == "error"]
        for p in problems:
            if p.severity != "error":
                proxy.note(f"{self.side} line {line}: {p.message} ({p.rule})")
        if not errors:
            return None
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        error = acp_fast.DecodeError(errors[0].message + more, code=-32602, kind="schema", line=line, raw=data)
        error.problems = errors  # type: ignore[attr-defined]  # the list, for whoever wants it
        return error

    def slow_block(self, block: bytes, bad: Dict[int, Any], before: int) -> None:
        """Line by line: the block has lines that are not JSON-RPC, or is being recorded."""
        proxy = self.proxy
        lines = acp_fast.Framer(max_frame_bytes=proxy.max_frame_bytes, keepends=True)
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
            # An invalid entry of a batch: the batch is a frame when it holds at least one valid
            # message (JSON-RPC answers the bad entries), else it is not JSON-RPC.
            if error is not None and error.raw is not None and error.raw != data and not all_invalid(data):
                error = None
            action = None
            if error is not None:
                action = self.invalid(data, error, before + index)
            if action is None:
                out.append(wire)
            if proxy.recorder is not None:
                # Embedded verbatim when it is JSON (valid, or JSON but not JSON-RPC); blank lines
                # and non-JSON lines are recorded as text / base64.
                is_json = (error is None or error.code != -32700) and bool(data.strip())
                proxy.record(self.side, data, is_json, now, crlf, line_eol, action)
            if proxy.stopping:
                break
        if out:
            data = b"".join(out)
            if self.write(data):
                self.stats["bytes_out"] += len(data)

    # -- with middleware -------------------------------------------------------------------------

    def middleware_block(self, block: bytes, before: int, eol: bool) -> None:
        """Every message of the block through the middleware, each tracked in the state as it is
        delivered (so a middleware sees the state of the frames before its own); then the block is
        forwarded as it came when no middleware changed anything, else line by line."""
        proxy = self.proxy
        run = proxy.chain.run
        side = self.side
        outcomes: Dict[int, Outcome] = {}
        bad: Dict[int, Any] = {}
        schema = proxy.strict_schema
        message_type = acp_fast.Message
        apply = proxy.store.apply
        source = self.source
        watch = proxy.watch
        lines = _lines(block)
        with proxy.lock:
            base = self.decoder.line
            # Messages (Batches, DecodeErrors) of the block, with their line numbers; blank lines skipped.
            items: List[Any] = self.decoder.feed(block if eol else block + b"\n")
            for item in items:
                index = item.line - base
                if isinstance(item, acp_fast.DecodeError):  # not JSON-RPC: the usual rules, never middleware
                    bad[index] = _relined(item, before + index, _strip_cr(lines[index - 1]))
                    continue
                if type(item) is not message_type and not any(isinstance(m, message_type) for m in item):
                    bad[index] = _relined(item[0], before + index, _strip_cr(lines[index - 1]))  # no valid message
                    continue
                if schema:
                    error = self.schema_error(_strip_cr(lines[index - 1]), before + index)
                    if error is not None:  # refused: handled as a line that is not JSON-RPC (tracked all the same)
                        bad[index] = error
                        self.track(item, before + index)
                        continue
                outcome = run(item, side) if type(item) is message_type else self.batch(item)
                if outcome is None:  # unchanged: tracked here (the common case, inline)
                    try:
                        change = apply(item, source=source)
                    except acp_fast.DecodeError as e:
                        self.stats["state_errors"] += 1
                        proxy.note(f"{side} line {before + index}: {e} (forwarded)")
                        continue
                    if watch and change is not None:
                        for c in change if isinstance(change, list) else [change]:
                            if c is not None:
                                proxy.show_change(c)
                    continue
                outcomes[index] = outcome
                for wire, _ in outcome.delivered:
                    self.track(item if wire is None else wire, before + index)
            self.stats["lines"] += self.decoder.line - base
        if not outcomes:
            if not bad and proxy.recorder is None:
                if self.write(block):
                    self.stats["bytes_out"] += len(block)
                return
            self.slow_block(block, bad, before)
        else:
            self.changed_block(lines, eol, before, outcomes, bad)

    def batch(self, frame: Any) -> Optional[Outcome]:
        """A batch line's entries through the middleware: None (the line as it came) when no entry
        was changed, else the entries' frames one per line (its invalid entries are not
        forwarded)."""
        entries = [m for m in frame if isinstance(m, acp_fast.Message)]
        runs = [self.proxy.chain.run(m, self.side) for m in entries]
        if all(r is None for r in runs):
            return None
        outcome = Outcome()
        outcome.action = "replaced"
        outcome.reason = "; ".join(r.reason for r in runs if r is not None and r.reason) or "a batch entry changed"
        for m, r in zip(entries, runs):
            if r is None:
                outcome.delivered.append((m.raw + b"\n", True))
                continue
            outcome.back += r.back
            outcome.delivered += [(m.raw + b"\n" if w is None else w, True) for w, _ in r.delivered]
        return outcome

    def changed_block(
        self, lines: List[bytes], eol: bool, before: int, outcomes: Dict[int, Outcome], bad: Dict[int, Any]
    ) -> None:
        """Line by line (already tracked), with what the middleware made of each message."""
        proxy = self.proxy
        out: List[bytes] = []
        back: List[bytes] = []
        now = time.time()
        for index, wire in enumerate(lines, 1):
            line_eol = eol or index < len(lines)
            crlf = wire.endswith(b"\r")
            data = wire[:-1] if crlf else wire
            line = wire + b"\n" if line_eol else wire
            outcome = outcomes.get(index)
            if outcome is None:  # unchanged, or not a message: as without middleware
                error = bad.get(index)
                action = self.invalid(data, error, before + index) if error is not None else None
                if action is None:
                    out.append(line)
                if proxy.recorder is not None:
                    is_json = (error is None or error.code != -32700) and bool(data.strip())
                    proxy.record(self.side, data, is_json, now, crlf, line_eol, action)
                if proxy.stopping:
                    break
                continue
            if outcome.action is not None:
                self.stats[outcome.action] += 1
                if proxy.recorder is not None:
                    proxy.record(self.side, data, True, now, crlf, line_eol, outcome.action, outcome.reason)
            for wire_out, injected in outcome.delivered:
                out.append(line if wire_out is None else wire_out)
                if injected:
                    self.stats["injected"] += 1
                if proxy.recorder is not None:
                    if wire_out is None:
                        proxy.record(self.side, data, True, now, crlf, line_eol, None)
                    else:
                        proxy.record(self.side, wire_out.rstrip(b"\r\n"), True, now, False, True, "injected")
            back += outcome.back
        if out:
            data = b"".join(out)
            if self.write(data):
                self.stats["bytes_out"] += len(data)
        if back:  # injected by the middleware, going back to this side
            proxy.deliver(self.side, back, now)

    def track(self, frame: Any, line: int) -> None:
        """Apply one delivered frame (a Message, Batch or bytes) to the state (a bad state update
        is noted and forwarded)."""
        proxy = self.proxy
        with proxy.lock:
            try:
                change = proxy.store.apply(frame, source=self.source)
            except acp_fast.DecodeError as e:
                self.stats["state_errors"] += 1
                proxy.note(f"{self.side} line {line}: {e} (forwarded)")
                return
        if proxy.watch:
            for c in change if isinstance(change, list) else [change]:
                if isinstance(c, acp_fast.Change):
                    proxy.show_change(c)

    # -- lines that are not JSON-RPC ---------------------------------------------------------------

    def invalid(self, data: bytes, error: Any, line: int) -> Optional[str]:
        """What to do with a line that is not JSON-RPC: None (forward it) or the action taken."""
        proxy = self.proxy
        self.stats["invalid"] += 1
        where = f"{self.side} line {line}"
        if self.side == "agent":
            policy = proxy.agent_invalid
            if policy == "pass":
                proxy.note(f"{where}: {error} (passed on)")
                return None
            if policy == "drop":
                self.stats["dropped"] += 1
                proxy.note(f"{where}: {error} (dropped)")
                return "dropped"
            self.stats["diverted"] += 1
            proxy.divert(data)
            if policy == "fail" and self.stats["invalid"] >= proxy.agent_invalid_limit:
                n = self.stats["invalid"]
                proxy.stop(
                    INVALID_LINES_STATUS,
                    f"{where}: {error}; {n} line{'s' if n > 1 else ''} from the agent "
                    f"{'were' if n > 1 else 'was'} not JSON-RPC (--agent-invalid fail={proxy.agent_invalid_limit})",
                )
            return "diverted"
        if not (proxy.strict or (proxy.strict_schema and error.kind == "schema")):
            proxy.note(f"{where}: {error} (forwarded)")
            return None
        self.stats["answered"] += 1
        proxy.note(f"{where}: {error} (answered with an error, not forwarded)")
        proxy.answer_editor(data, error)
        return "answered"

    def write(self, data: bytes) -> bool:
        if self.proxy.bridge is not None and self.side == "editor":  # --bridge: into the agent's version
            data = self.proxy.bridged(self.side, data)
        if self.dst.write(data):
            return True
        self.stats["undelivered"] += len(data)
        self.proxy.lost(self.side)
        return False


def _relined(error: Any, line: int, data: bytes) -> Any:
    """``error`` (the decoder's, for line ``data``) as the error of line ``line`` of this side."""
    pos = error.position
    return acp_fast.DecodeError(
        error.msg,
        code=error.code,
        kind=error.kind,
        position=pos,
        lineno=None if pos is None else line,
        colno=None if pos is None else pos + 1,
        line=line,
        raw=data,
    )


def all_invalid(line: bytes) -> bool:
    """Whether a batch line holds no valid message."""
    try:
        frame = acp_fast.decode(line)
    except acp_fast.DecodeError:
        return True
    return isinstance(frame, list) and all(isinstance(entry, acp_fast.DecodeError) for entry in frame)


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
