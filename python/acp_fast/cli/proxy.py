"""``acp-fast proxy``: a byte-exact stdio proxy between an editor and an ACP agent.

    acp-fast proxy [options] -- AGENT COMMAND...

The editor starts the proxy as if it were the agent; the proxy starts the agent and relays
editor → agent and agent → editor. What it does is described in docs/CLI.md ("proxy"); in short:

* Frames are forwarded byte-exact and in order. Each direction is read in large chunks and only
  whole lines are forwarded (a partial line waits for its newline, at most ``--max-frame-bytes``
  of it), so a line is never split between two writes: an :class:`acp_fast.Framer` with
  ``joined=True`` cuts each direction into runs of whole lines.
* Both directions go through the state engine (one :class:`ToolCallStore`, ``source="client"``
  for the editor's lines and ``"agent"`` for the agent's), so the proxy always knows every
  session's tool calls, permission requests, terminals and plans.
* Lines from the agent that are not JSON-RPC (not JSON, or JSON that is not a JSON-RPC message)
  follow ``--agent-invalid``: ``divert`` (default: written to stderr, so an agent's stray prints
  never corrupt the editor's stream), ``pass`` or ``drop``. Invalid lines from the editor are
  forwarded, or with ``--strict`` answered with a JSON-RPC error response and not forwarded.
  A line longer than ``--max-frame-bytes`` is never forwarded (either side): it is reported and
  skipped, and the proxy resynchronises at the next newline, holding at most the limit.
* Backpressure: writes block, and a direction whose writer is blocked stops reading, so memory
  stays bounded by the pipe buffers, one read chunk and one partial line per direction.
* End of input and signals: when the editor closes the proxy's stdin, the rest is forwarded and
  the agent's stdin is closed; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH
  are passed to the agent (which runs in its own process group, so it gets each signal once).
  When the agent exits, everything it wrote is forwarded, and the proxy exits with the agent's
  status (128 + N when the agent was killed by signal N). The agent's stderr is the proxy's.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, cast

import orjson

import acp_fast

from ..recording import RecordWriter
from ._streams import check_output, create_output, output_error

__all__ = ["main", "Proxy", "Direction"]

CHUNK = 1 << 20
PIPE_SIZE = 1 << 20
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
INVALID_POLICIES = ("divert", "pass", "drop")
# DecodeError codes of lines that are not JSON-RPC messages (JSON errors, framing errors, invalid
# JSON-RPC). Bad state updates (-32602) are valid JSON-RPC and always forwarded.
NOT_JSON_RPC = (-32700, -32600)
# How long the proxy waits, after the agent exited, for the agent's stdout to reach end of file
# (a grandchild may hold it open).
DRAIN_AFTER_EXIT = 5.0
# Memory stays flat over long sessions: finished tool calls beyond this many are dropped from the
# proxy's state (they were forwarded; only the proxy's view of them goes).
DEFAULT_MAX_TOOL_CALLS = 1000


def _grow_pipe(fd: int) -> None:
    """Ask for 1 MiB pipe buffers (fewer, larger reads and writes); ignored where not a pipe."""
    try:
        fcntl.fcntl(fd, 1031, PIPE_SIZE)  # F_SETPIPE_SZ
    except OSError:
        pass


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
        )

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        try:
            read = os.read
            src = self.src
            while True:
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
            self.events(self.framer.finish(), False)
        except BaseException as e:  # never die silently: report and close the direction
            self.proxy.note(f"{self.side} relay stopped: {type(e).__name__}: {e}")
            raise
        finally:
            self.dst.close()  # end of input passed on: the agent's stdin, or the editor's stdout

    def events(self, events: List[Any], eol: bool) -> None:
        """The framer's events: whole lines (ending in ``\\n`` when ``eol``, else the last line of
        the stream) and lines over the limit (their length)."""
        for line, data in events:
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
        fed = block if eol else block + b"\n"
        with proxy.state_lock:
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
        if not bad and proxy.recorder is None:
            if self.write(block):
                self.stats["bytes_out"] += len(block)
            return
        self.slow_block(block, bad, before)

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
            if error is not None and error.raw is not None and error.raw != data and not _all_invalid(data):
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
        if out:
            data = b"".join(out)
            if self.write(data):
                self.stats["bytes_out"] += len(data)

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
            return "diverted"
        if not proxy.strict:
            proxy.note(f"{where}: {error} (forwarded)")
            return None
        self.stats["answered"] += 1
        proxy.note(f"{where}: {error} (answered with an error, not forwarded)")
        proxy.answer_editor(data, error)
        return "answered"

    def write(self, data: bytes) -> bool:
        if self.dst.write(data):
            return True
        self.stats["undelivered"] += len(data)
        self.proxy.lost(self.side)
        return False


def _all_invalid(line: bytes) -> bool:
    """Whether a batch line holds no valid message."""
    try:
        frame = acp_fast.decode(line)
    except acp_fast.DecodeError:
        return True
    return isinstance(frame, list) and all(isinstance(entry, acp_fast.DecodeError) for entry in frame)


def _request_id(data: bytes) -> Any:
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


class Proxy:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.command: List[str] = args.command
        self.max_frame_bytes: int = args.max_frame_bytes
        self.agent_invalid: str = args.agent_invalid
        self.strict: bool = args.strict
        self.watch: bool = args.watch
        self.quiet: bool = args.quiet
        self.store = acp_fast.ToolCallStore(
            args.protocol,
            max_tool_calls=args.max_tool_calls or None,
            max_frame_bytes=args.max_frame_bytes,
            max_terminal_bytes=args.max_terminal_bytes,
            max_content_items=args.max_content_items,
            max_plans=args.max_plans,
            max_permissions=args.max_permissions,
            max_updates=args.max_updates,
        )
        self.state_lock = threading.Lock()
        self.stderr = Output(2)
        self.stdout = Output(1)
        self.record_lock = threading.Lock()
        self.recorder: Optional[RecordWriter] = None
        self._record_file: Any = None
        if args.record:
            self._record_file = create_output(args.record, args.force)  # closed in _finish
            self.recorder = RecordWriter(self._record_file, self.command, acp_fast.__version__)
        self.agent: Optional[subprocess.Popen[bytes]] = None
        self.agent_stdin: Optional[Output] = None
        self.started = time.time()
        self._lost_reported: Set[str] = set()

    # -- messages to the user --------------------------------------------------------------

    def note(self, text: str) -> None:
        if not self.quiet:
            self.stderr.write(f"acp-fast proxy: {text}\n".encode("utf-8", "replace"))

    def divert(self, data: bytes) -> None:
        self.stderr.write(data + b"\n")

    def lost(self, side: str) -> None:
        if side in self._lost_reported:
            return
        self._lost_reported.add(side)
        other = "agent" if side == "editor" else "editor"
        self.note(f"the {other} stopped reading; {side} output from now on is discarded")
        if side == "agent":
            # The editor is gone: tell the agent (end of its input) and let it finish.
            self.close_agent_stdin()

    def show_change(self, change: Any) -> None:
        sid, target, ident, action, tcid = change
        if target in ("tool_call", "permission", "terminal", "plan"):
            self.note(f"[{sid}] {target} {ident} {action}")

    # -- recording ---------------------------------------------------------------------------

    def record(
        self, side: str, data: bytes, is_json: bool, t: float, crlf: bool, eol: bool, action: Optional[str]
    ) -> None:
        recorder = self.recorder
        assert recorder is not None  # called only while recording
        with self.record_lock:
            recorder.line(side, data, is_json, t, crlf=crlf, eol=eol, action=action)

    def record_too_large(self, side: str, length: int) -> None:
        recorder = self.recorder
        assert recorder is not None  # called only while recording
        with self.record_lock:
            recorder.too_large(side, length, time.time())

    # -- strict mode -------------------------------------------------------------------------

    def answer_editor(self, data: bytes, error: Any) -> None:
        response = {
            "jsonrpc": "2.0",
            "id": _request_id(data),
            "error": {
                "code": error.code,
                "message": str(error),
                "data": {"line": error.line, "position": error.position},
            },
        }
        self.stdout.write(orjson.dumps(response) + b"\n")

    # -- running -----------------------------------------------------------------------------

    def close_agent_stdin(self) -> None:
        if self.agent_stdin is not None:
            self.agent_stdin.close()

    def run(self) -> int:
        try:
            # The agent gets its own process group: a terminal's Ctrl-C reaches it once, through
            # the proxy's forwarding, not twice.
            group: Dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
            self.agent = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, bufsize=0, **group
            )
        except OSError as e:
            print(f"acp-fast proxy: cannot start the agent {self.command[0]!r}: {e}", file=sys.stderr)
            return 127 if isinstance(e, FileNotFoundError) else 126
        assert self.agent.stdin is not None and self.agent.stdout is not None
        agent_in = os.dup(self.agent.stdin.fileno())
        agent_out = os.dup(self.agent.stdout.fileno())
        self.agent.stdin.close()
        self.agent.stdout.close()
        for fd in (0, 1, agent_in, agent_out):
            _grow_pipe(fd)
        self.agent_stdin = Output(agent_in)
        self._forward_signals()
        editor = Direction(self, "editor", 0, self.agent_stdin)
        agent = Direction(self, "agent", agent_out, self.stdout)
        self.directions = (editor, agent)
        to_agent = threading.Thread(target=editor.run, name="editor->agent", daemon=True)
        to_editor = threading.Thread(target=agent.run, name="agent->editor", daemon=True)
        to_agent.start()
        to_editor.start()
        status = self.agent.wait()
        to_editor.join(DRAIN_AFTER_EXIT)
        if to_editor.is_alive():
            self.note(f"the agent exited but its stdout stayed open for {DRAIN_AFTER_EXIT:.0f} s; stopping")
        code = status if status >= 0 else 128 - status
        self._finish(code)
        return code

    def _forward_signals(self) -> None:
        def forward(signum: int, frame: Any) -> None:
            if self.agent is not None and self.agent.poll() is None:
                try:
                    self.agent.send_signal(signum)
                except ProcessLookupError:  # pragma: no cover - raced with its exit
                    pass

        for name in FORWARDED_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, forward)

    def summary(self, status: int) -> Dict[str, Any]:
        statuses: Dict[str, int] = {}
        with self.state_lock:
            snapshot = self.store.snapshot()
            permissions: Dict[str, int] = {}
            for sid in snapshot:
                for p in self.store.permissions(sid):
                    permissions[p["outcome"]] = permissions.get(p["outcome"], 0) + 1
        for calls in snapshot.values():
            for record in calls.values():
                found = record.get("status")
                key = found if isinstance(found, str) else "none"
                statuses[key] = statuses.get(key, 0) + 1
        editor, agent = self.directions
        return {
            "status": status,
            "seconds": round(time.time() - self.started, 3),
            "editor_to_agent": dict(editor.stats),
            "agent_to_editor": dict(agent.stats),
            "sessions": len(snapshot),
            "tool_calls": sum(statuses.values()),
            "tool_calls_by_status": dict(sorted(statuses.items())),
            "permissions_by_outcome": dict(sorted(permissions.items())),
            "evicted_tool_calls": self.store.evicted,
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }

    def _finish(self, status: int) -> None:
        """The exit reports. Each is written on its own: one that fails is reported in one line on
        stderr and neither skips the others nor changes the proxy's exit status (the agent's)."""
        if self.recorder is not None:
            with self.record_lock:
                self._report("--record", self.args.record, lambda: self._close_recording(status))
        if self.args.state_json:
            self._report("--state-json", self.args.state_json, self._write_state)
        if self.args.summary or self.args.summary_json:
            info = self.summary(status)
            if self.args.summary_json:
                data = orjson.dumps(info, option=orjson.OPT_INDENT_2) + b"\n"
                self._report(
                    "--summary-json", self.args.summary_json, lambda: self._write_file(self.args.summary_json, data)
                )
            if self.args.summary:
                self.stderr.write(format_summary(info).encode())

    def _report(self, option: str, path: str, write: Callable[[], None]) -> None:
        try:
            write()
        except OSError as e:
            self.stderr.write(f"acp-fast proxy: {option} {output_error(path, e)}\n".encode("utf-8", "replace"))
        except Exception as e:  # noqa: BLE001 - any failure of one report must leave the others
            self.stderr.write(f"acp-fast proxy: {option} {path}: not written: {e}\n".encode("utf-8", "replace"))

    def _close_recording(self, status: int) -> None:
        assert self.recorder is not None
        try:
            self.recorder.exit(status)
        finally:
            self._record_file.close()

    def _write_state(self) -> None:
        with self.state_lock:
            checkpoint = self.store.to_json()
        self._write_file(self.args.state_json, checkpoint)

    def _write_file(self, path: str, data: bytes) -> None:
        with create_output(path, self.args.force) as f:
            f.write(data)


def format_summary(info: Dict[str, Any]) -> str:
    lines = [f"acp-fast proxy: agent exited with status {info['status']} after {info['seconds']:.1f} s"]
    for key, label in (("editor_to_agent", "editor → agent"), ("agent_to_editor", "agent → editor")):
        s = info[key]
        extra = ", ".join(
            f"{s[k]} {k.replace('_', ' ')}"
            for k in ("invalid", "diverted", "dropped", "answered", "too_large", "state_errors")
            if s[k]
        )
        lines.append(
            f"  {label}: {s['lines']} lines, {s['bytes_in']} bytes read, {s['bytes_out']} forwarded"
            + (f" ({extra})" if extra else "")
        )
    by_status = ", ".join(f"{n} {k}" for k, n in info["tool_calls_by_status"].items()) or "none"
    lines.append(f"  sessions: {info['sessions']}; tool calls: {info['tool_calls']} ({by_status})")
    if info["permissions_by_outcome"]:
        lines.append(
            "  permission requests: " + ", ".join(f"{n} {k}" for k, n in info["permissions_by_outcome"].items())
        )
    lines.append(f"  peak RSS: {info['peak_rss_kib'] / 1024:.1f} MiB")
    return "\n".join(lines) + "\n"


def _count(text: str) -> int:
    """``--max-tool-calls``: 0 (keep all) or a positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, found {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, found {value}")
    return value


def _bound(least: int) -> Callable[[str], Optional[int]]:
    """A bound of the state engine (``--max-updates``, ...): an integer from ``least`` to 2**63-1,
    or ``none`` (no bound)."""

    def parse(text: str) -> Optional[int]:
        if text.strip().lower() == "none":
            return None
        what = f"an integer from {least} to 2**63-1 or none"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        if not least <= value < 2**63:
            raise argparse.ArgumentTypeError(f"expected {what}, found {value}")
        return value

    return parse


def _positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= acp_fast.MAX_FRAME_BYTES:
        raise argparse.ArgumentTypeError(f"expected 1..{acp_fast.MAX_FRAME_BYTES}, found {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="acp-fast proxy",
        usage="acp-fast proxy [options] -- AGENT COMMAND...",
        description="Relay an editor and an ACP agent byte-exact, tracking every session's state.",
    )
    p.add_argument("--record", metavar="FILE", help="write an NDJSON recording of both directions (docs/CLI.md)")
    p.add_argument(
        "--max-frame-bytes",
        type=_positive,
        default=acp_fast.DEFAULT_MAX_FRAME_BYTES,
        metavar="N",
        help="longest line forwarded (default 64 MiB)",
    )
    p.add_argument(
        "--agent-invalid",
        choices=INVALID_POLICIES,
        default="divert",
        help="lines from the agent that are not JSON-RPC: divert to stderr (default), pass on, or drop",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="answer invalid lines from the editor with a JSON-RPC error instead of forwarding them",
    )
    p.add_argument("--summary", action="store_true", help="print a summary to stderr when the agent exits")
    p.add_argument("--summary-json", metavar="FILE", help="write the summary as JSON to FILE")
    p.add_argument(
        "--state-json",
        metavar="FILE",
        help="write the state engine's checkpoint (ToolCallStore.to_json) to FILE at exit",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite existing --record / --state-json / --summary-json files (default: refuse)",
    )
    p.add_argument(
        "--watch", action="store_true", help="print each tool call, permission, terminal and plan change to stderr"
    )
    p.add_argument("--quiet", action="store_true", help="no diagnostics on stderr (diverted lines still go there)")
    p.add_argument(
        "--protocol", type=int, choices=(1, 2), default=None, help="protocol version (default: learned from initialize)"
    )
    p.add_argument(
        "--max-tool-calls",
        type=_count,
        default=DEFAULT_MAX_TOOL_CALLS,
        metavar="N",
        help=f"tool calls kept in the state, the oldest finished dropped first (default {DEFAULT_MAX_TOOL_CALLS}; 0 keeps all)",
    )
    # The bounds inside sessions (docs/API.md "Bounds and checkpoints"), the store's defaults.
    defaults = acp_fast.ToolCallStore()
    for option, least, what in (
        ("--max-terminal-bytes", 0, "output bytes kept per terminal, the last ones"),
        ("--max-content-items", 0, "content items kept per tool call, the last ones"),
        ("--max-plans", 1, "plans kept per session, the oldest dropped first"),
        ("--max-permissions", 1, "permission records kept per session, the oldest resolved dropped first"),
        ("--max-updates", 0, "updates of kinds the state engine has no rule for, kept per session"),
    ):
        default = getattr(defaults, option[2:].replace("-", "_"))
        help = f"{what} (default {default}; none: all)"
        p.add_argument(option, type=_bound(least), default=default, metavar="N", help=help)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" in args:
        split = args.index("--")
        options, command = args[:split], args[split + 1 :]
    else:
        options, command = args, []
    p = parser()
    ns = p.parse_args(options)
    if not command:
        p.error("expected the agent command after --, e.g. acp-fast proxy -- acp-fast demo-agent")
    ns.command = command
    # Files that will hold the session's traffic: a mistake is a usage error now, not a lost report
    # at exit (they are created owner-only, never through a symbolic link; see create_output).
    for option, path in (("--state-json", ns.state_json), ("--summary-json", ns.summary_json)):
        if path:
            problem = check_output(path, ns.force)
            if problem is not None:
                p.error(f"{option} {path}: {problem}")
    try:
        proxy = Proxy(ns)
    except OSError as e:
        p.error(f"--record {output_error(ns.record, e)}")
    return proxy.run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
