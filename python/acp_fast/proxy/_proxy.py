"""The proxy: starts the agent, relays both directions (``_relay``), runs the middleware
(``_middleware``), writes the reports at exit. docs/PROXY.md describes what it guarantees."""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import orjson

import acp_fast

from .._outputs import create_output, output_error
from .._terminal import printable
from ..bridge import Bridge
from ..otel import DEFAULT_MAX_OPEN, Spans, TraceContextInjector, exporter
from ..recording import FLUSH_SECONDS, RecordWriter, Writers
from ..trace import TraceWriter
from ._middleware import Chain, Context, Middleware, other_side
from ._relay import (
    INVALID_LINES_STATUS,
    Direction,
    Output,
    SchemaCheck,
    Settings,
    bridge_lines,
    change_line,
    located,
    refusal_answer,
    request_id,
)
from .chain import Successor

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DRAIN_AFTER_EXIT",
    "FORWARDED_SIGNALS",
    "INVALID_LINES_STATUS",
    "INVALID_POLICIES",
    "Proxy",
    "format_summary",
]

PIPE_SIZE = 1 << 20
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
#: What ``agent_invalid`` may be: what happens to a line from the agent that is not JSON-RPC.
INVALID_POLICIES = ("divert", "pass", "drop", "fail")
# How long the proxy waits, after the agent exited, for the agent's stdout to reach end of file
# (a grandchild may hold it open).
DRAIN_AFTER_EXIT = 5.0
# How long a stopped agent gets between SIGTERM and SIGKILL.
STOP_GRACE = 2.0
# Memory stays flat over long sessions: finished tool calls beyond this many are dropped from the
# proxy's state (they were forwarded; only the proxy's view of them goes).
#: The default bound on the tool calls the proxy's state keeps (``max_tool_calls``).
DEFAULT_MAX_TOOL_CALLS = 1000
#: The default bound on the sessions the proxy's state keeps (``max_sessions``): the store's.
DEFAULT_MAX_SESSIONS = 1000
#: ``--coalesce`` without a value: milliseconds a tool-call update is held at most.
DEFAULT_COALESCE_MS = 50.0
# The bounds inside sessions (``max_terminal_bytes``, ...) default to the store's own.
_STORE_DEFAULTS = acp_fast.ToolCallStore()


def _grow_pipe(fd: int) -> None:
    """Ask for 1 MiB pipe buffers (fewer, larger reads and writes); ignored where not a pipe."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, PIPE_SIZE)  # F_SETPIPE_SZ
    except OSError:
        pass


class Proxy:
    """A byte-exact stdio proxy between an editor (this process's stdin and stdout) and the agent
    it starts (``agent_command``), keeping every session's state ([`store`][acp_fast.proxy.Proxy.store]) and running
    ``middleware`` on every message (the [`acp_fast.proxy.Middleware`][acp_fast.proxy.Middleware] protocol).

        >>> proxy = Proxy(["my-agent", "--stdio"], middleware=[AutoApprove({"read"})])  # doctest: +SKIP
        >>> sys.exit(proxy.run())  # doctest: +SKIP

    The options are those of ``acp-fast proxy`` (docs/CLI.md), by the same names: ``record``,
    ``state_json`` and ``summary_json`` are file paths (created owner-only; an existing file is
    refused unless ``force``); ``agent_invalid`` is ``"divert"``, ``"pass"``, ``"drop"`` or
    ``"fail"`` (with ``agent_invalid_limit`` lines, default 1); ``bridge`` is ``(editor,
    agent)`` protocol versions; ``coalesce`` is ``--coalesce``'s milliseconds (None: off);
    ``max_terminal_bytes`` ... ``max_entities`` are the store's bounds
    inside sessions (default: the store's defaults; None: no bound); `otlp` is an OTLP/HTTP
    endpoint to send OpenTelemetry spans and metrics to (`acp_fast.otel`; ImportError naming the
    `otel` extra when it is not installed) and `otlp_inject` adds the turn's `traceparent`
    to the prompts sent to the agent. `chain`: a component in the ACP conductor's chain
    (`acp_fast.proxy.chain`, no agent command). [`run`][acp_fast.proxy.Proxy.run] returns the exit status."""

    def __init__(
        self,
        agent_command: Sequence[str],
        middleware: Sequence[Middleware] = (),
        *,
        max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
        agent_invalid: str = "divert",
        agent_invalid_limit: int = 1,
        strict: bool = False,
        strict_schema: bool = False,
        unstable: bool = False,
        draft: Optional[str] = None,
        watch: bool = False,
        quiet: bool = False,
        protocol: Optional[int] = None,
        bridge: Optional[Tuple[int, int]] = None,
        coalesce: Optional[float] = None,
        max_tool_calls: Optional[int] = DEFAULT_MAX_TOOL_CALLS,
        max_terminal_bytes: Optional[int] = _STORE_DEFAULTS.max_terminal_bytes,
        max_content_items: Optional[int] = _STORE_DEFAULTS.max_content_items,
        max_plans: Optional[int] = _STORE_DEFAULTS.max_plans,
        max_permissions: Optional[int] = _STORE_DEFAULTS.max_permissions,
        max_updates: Optional[int] = _STORE_DEFAULTS.max_updates,
        max_terminals: Optional[int] = _STORE_DEFAULTS.max_terminals,
        max_entities: Optional[int] = _STORE_DEFAULTS.max_entities,
        max_content_bytes: Optional[int] = _STORE_DEFAULTS.max_content_bytes,
        max_sessions: Optional[int] = DEFAULT_MAX_SESSIONS,
        record: Optional[str] = None,
        trace: Optional[str] = None,
        chain: bool = False,
        otlp: Optional[str] = None,
        otlp_inject: bool = False,
        state_json: Optional[str] = None,
        summary: bool = False,
        summary_json: Optional[str] = None,
        force: bool = False,
    ) -> None:
        if chain and agent_command:
            raise ValueError("expected no agent command with chain=True (the conductor runs the agent)")
        if not agent_command and not chain:
            raise ValueError("expected an agent command")
        #: `--chain`: a component under the ACP conductor (`chain.Successor` stands for the agent).
        self.chain_mode = chain
        if agent_invalid not in INVALID_POLICIES:
            raise ValueError(
                f"expected agent_invalid to be one of {', '.join(INVALID_POLICIES)}, found {agent_invalid!r}"
            )
        if agent_invalid_limit < 1:
            raise ValueError(f"expected agent_invalid_limit to be at least 1, found {agent_invalid_limit}")
        self.command: List[str] = list(agent_command)
        self.max_frame_bytes = max_frame_bytes
        self.agent_invalid = agent_invalid
        self.agent_invalid_limit = agent_invalid_limit
        self.strict = strict
        self.strict_schema = strict_schema
        #: ``--strict-schema``: one check for the whole connection, following the negotiation.
        self.schema: Optional[SchemaCheck] = (
            SchemaCheck(protocol, max_frame_bytes, unstable, draft) if strict_schema else None
        )
        self.watch = watch
        self.quiet = quiet
        self.record_path = record
        self.state_json = state_json
        self.summary_stderr = summary
        self.summary_json = summary_json
        self.force = force
        #: The state of every session, as the editor sees it (docs/PROXY.md).
        self.store = acp_fast.ToolCallStore(
            protocol,
            max_tool_calls=max_tool_calls or None,
            max_frame_bytes=max_frame_bytes,
            max_terminal_bytes=max_terminal_bytes,
            max_content_items=max_content_items,
            max_plans=max_plans,
            max_permissions=max_permissions,
            max_updates=max_updates,
            max_terminals=max_terminals,
            max_entities=max_entities,
            max_content_bytes=max_content_bytes,
            max_sessions=max_sessions,
        )
        #: Held while the state is read or changed and while the middleware run.
        self.lock: threading.RLock = threading.RLock()
        self.stderr = Output(2)
        self.stdout = Output(1)
        self.record_lock = threading.Lock()
        self.trace_path = trace
        #: `--record`, `--trace` and `--otlp`: (option, path or URL, writer, file or None); the
        #: files are closed in _finish.
        self._outputs: List[Tuple[str, str, Any, Optional[IO[bytes]]]] = []
        if record:
            out = create_output(record, force)
            writer = RecordWriter(out, self.command, acp_fast.__version__, flush_every=FLUSH_SECONDS)
            self._outputs.append(("--record", record, writer, out))
        if trace:
            try:
                out = create_output(trace, force)
            except BaseException:
                self._close_outputs()
                raise
            self._outputs.append(("--trace", trace, TraceWriter(out, time.time(), flush_every=FLUSH_SECONDS), out))
        trace_start = next((w.start for o, _, w, _ in self._outputs if o == "--trace"), None)
        #: `--otlp`: the OpenTelemetry mapping (`acp_fast.otel.Spans`), given every line too.
        self.spans: Optional[Spans] = None
        if otlp:
            try:
                self.spans = Spans(exporter(otlp, warn=self.note), max_open=DEFAULT_MAX_OPEN)
            except BaseException:
                self._close_outputs()
                raise
            self._outputs.append(("--otlp", otlp, self.spans, None))
        if otlp_inject:
            if self.spans is None:
                raise ValueError("otlp_inject needs otlp (the turn's span is what is injected)")
            middleware = [*middleware, TraceContextInjector(self.spans)]
        #: What every line seen is given to (`--record`, `--trace`, `--otlp`).
        self.recorder: Optional[Writers] = Writers([w for _, _, w, _ in self._outputs]) if self._outputs else None
        self.agent: Optional[subprocess.Popen[bytes]] = None
        self.agent_stdin: Optional[Output] = None
        self.started = time.time()
        self._lost_reported: Set[str] = set()
        self.bridge = None if bridge is None else Bridge(editor=bridge[0], agent=bridge[1], coalesce=coalesce)
        bridge_holds = self.bridge is not None and self.bridge.window is not None
        # --record and --trace alone are written by the core's relay (not --otlp, nor with
        # --coalesce, whose held and merged lines the Python loop records).
        native_record = self.recorder is not None and coalesce is None and otlp is None
        self.bridge_lock = threading.Lock()
        self.chain = Chain(self, middleware)
        #: What the directions read of the options.
        self.settings = Settings(
            max_frame_bytes=max_frame_bytes,
            agent_invalid=agent_invalid,
            agent_invalid_limit=agent_invalid_limit,
            strict=strict,
            watch=watch,
            recording=self.recorder is not None,
            per_frame=bool(self.chain)
            or (self.recorder is not None and not native_record)
            or watch
            or strict_schema
            or bridge is not None,
            record_lines=bool(record),
            trace_start=trace_start,
            coalesce=None if bridge_holds else coalesce,
            protocol=protocol,
            bridge_holds=bridge_holds,
        )
        #: Set when the session is being stopped (``agent_invalid="fail"``): the relays stop.
        self.stopping = False
        self._stop_status: Optional[int] = None
        editor = Direction(self, "editor", 0, Output(-1))
        agent = Direction(self, "agent", -1, self.stdout)
        self.directions: Tuple[Direction, Direction] = (editor, agent)

    @property
    def middleware(self) -> List[Middleware]:
        return list(self.chain.middleware)

    def context(self, middleware: Middleware) -> Context:
        """The [`Context`][acp_fast.proxy.Context] of one of the proxy's middleware (to inject frames from outside)."""
        for m, ctx in zip(self.chain.middleware, self.chain.contexts):
            if m is middleware:
                return ctx
        raise ValueError("not one of this proxy's middleware")

    # -- messages to the user --------------------------------------------------------------

    def note(self, text: str) -> None:
        """Write ``text`` to stderr as one ``acp-fast proxy:`` line (unless quiet)."""
        if not self.quiet:
            self.stderr.write(f"acp-fast proxy: {printable(text)}\n".encode("utf-8", "replace"))

    def divert(self, data: bytes) -> None:
        """Write a diverted line (not JSON-RPC) to stderr."""
        self.stderr.write(data + b"\n")

    def lost(self, side: str) -> None:
        """Note, once per side, that frames to ``side`` could not be delivered."""
        if side in self._lost_reported:
            return
        self._lost_reported.add(side)
        other = other_side(side)
        self.note(f"the {other} stopped reading; {side} output from now on is discarded")
        if side == "agent":
            # The editor is gone: tell the agent (end of its input) and let it finish.
            self.close_agent_stdin()

    def show_change(self, change: Any) -> None:
        """``--watch``: one stderr line for a state change."""
        text = change_line(change)
        if text is not None:
            self.note(text)

    # -- recording ---------------------------------------------------------------------------

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
        """Record one line of ``side`` (with its action when it was not forwarded as it came;
        ``withheld``: its length instead of its bytes, ``Context.withhold``)."""
        recorder = self.recorder
        assert recorder is not None  # called only while recording
        with self.record_lock:
            recorder.line(side, data, is_json, t, crlf=crlf, eol=eol, action=action, reason=reason, withheld=withheld)

    def recorded(self, record: bytes, trace: bytes, skipped: int) -> None:
        """Record lines and trace events the core's relay built (``skipped``: lines without an
        event), written to ``--record`` and ``--trace`` as they are."""
        with self.record_lock:
            for option, _, writer, _ in self._outputs:
                if option == "--record":
                    writer.write_lines(record)
                elif option == "--trace":
                    writer.write_events(trace, skipped)

    def record_too_large(self, side: str, length: int) -> None:
        """Record a line of ``side`` that was over the frame limit (``length`` bytes)."""
        recorder = self.recorder
        assert recorder is not None  # called only while recording
        with self.record_lock:
            recorder.too_large(side, length, time.time())

    # -- frames the middleware injected --------------------------------------------------------

    def deliver(self, to: str, frames: List[bytes], now: float) -> None:
        """Frames injected by the middleware, going to ``to``: tracked and recorded (``"from"``
        the other side, action ``injected``), then written."""
        sender = other_side(to)
        direction = self.directions[0 if sender == "editor" else 1]
        out: List[bytes] = []
        for frame in frames:
            if self.schema is not None:  # into the connection's conversation (its verdict is not asked)
                with self.lock:
                    self.schema.frame(frame.rstrip(b"\r\n"), direction.source)
            errors = direction.track(frame)
            for error in errors:
                direction.state_error(0, error)
            direction.stats["injected"] += 1
            record = direction.injected_record(frame, now) if self.recorder is not None else None
            out.append(direction.through(frame, not errors, now, record))  # --coalesce keeps its order
        data = b"".join(out)
        if not data:
            return
        if direction.write(data, coalesce=False):
            direction.stats["bytes_out"] += len(data)

    def send(self, ctx: Optional[Context], message: acp_fast.Message, to: str) -> None:
        """A frame injected outside a middleware call (another thread, a timer): through the
        middleware after ``ctx``'s on the way to ``to``, then delivered."""
        with self.lock:
            outcome = self.chain.deliveries(ctx, message, to)
        now = time.time()
        if outcome.delivered:
            self.deliver(to, [w for w, _ in outcome.delivered if w is not None], now)
        if outcome.back:
            self.deliver(other_side(to), outcome.back, now)

    # -- --bridge ------------------------------------------------------------------------------

    def bridged(self, side: str, data: bytes) -> Optional[bytes]:
        """Whole lines from ``side``, converted for the other side (docs/BRIDGE.md); a line the
        bridge cannot read is left as it is (the usual rules for invalid lines apply to it).
        None without ``--bridge``."""
        if self.bridge is None:
            return None
        convert = self.bridge.from_agent if side == "agent" else self.bridge.from_editor
        direction = self.directions[1 if side == "agent" else 0]

        def progress() -> None:
            direction.active = time.monotonic()  # a long conversion is progress

        with self.bridge_lock:
            out, refused = bridge_lines(convert, data, progress)
            # What the bridge answered itself (a request the other version has no form of) goes
            # back to `side`, outside the lock: delivering writes, and writing comes back here.
            back = self.bridge.replies(side)
        for line, error in refused:
            back += self.bridge_refused(side, direction, line, error)
        if back:
            self.deliver(side, back, time.time())
        return b"".join(out)

    def bridge_refused(self, side: str, direction: Direction, line: bytes, error: Any) -> List[bytes]:
        """A frame of ``side`` the bridge refused (docs/BRIDGE.md "Frames the bridge refuses"; it
        left the bridge's state as it was): handled as a line that is not JSON-RPC (from the agent:
        ``--agent-invalid``, where ``pass`` diverts it, as it cannot be passed on in the agent's
        version; from the editor: not forwarded). A request is answered with a JSON-RPC error:
        the frames to send back to ``side``."""
        answer = refusal_answer(line, error)
        asks = answer is not None
        if side == "agent":  # never passed on in the agent's version
            action = direction.invalid(line, error, error.line, passable=False)
        else:
            action = "answered" if asks else "dropped"
            direction.stats["invalid"] += 1
            direction.stats[action] += 1
            self.note(f"{located('editor', error.line, error)} ({action}, not forwarded)")
        if self.recorder is not None:
            self.record(side, line, True, time.time(), False, True, action)
        return [] if answer is None else [answer]

    def bridge_deadline(self) -> Optional[float]:
        """``--bridge 1:2 --coalesce``: when the oldest tool call the bridge holds is due."""
        if self.bridge is None or self.bridge.window is None:
            return None
        with self.bridge_lock:
            return self.bridge.deadline

    def bridge_release(self, now: Optional[float]) -> bytes:
        """``--bridge 1:2 --coalesce``: the editor's lines for the held tool calls due at ``now``
        (None: all)."""
        if self.bridge is None:
            return b""
        with self.bridge_lock:
            frames = self.bridge.release() if now is None else self.bridge.release_due(now)
        return b"".join(frames)

    # -- strict mode -------------------------------------------------------------------------

    def answer_editor(self, data: bytes, error: Any) -> None:
        """Answer the editor's invalid request ``data`` with a JSON-RPC error built from ``error``."""
        response = {
            "jsonrpc": "2.0",
            "id": request_id(data),
            "error": {
                "code": error.code,
                "message": str(error),
                "data": {"line": error.line, "position": error.position},
            },
        }
        self.stdout.write(orjson.dumps(response) + b"\n")

    # -- running -----------------------------------------------------------------------------

    def close_agent_stdin(self) -> None:
        """Close the agent's stdin (end of the editor's input)."""
        if self.agent_stdin is not None:
            self.agent_stdin.close()

    def stop(self, status: int, why: str) -> None:
        """Stop the session: the relays stop, the agent is terminated (SIGTERM, SIGKILL after
        ``STOP_GRACE`` seconds) and the proxy exits with ``status`` (reports still written)."""
        if self.stopping:
            return
        self.stopping = True
        self._stop_status = status
        self.stderr.write(f"acp-fast proxy: {why}; stopping the session (exit status {status})\n".encode())
        self.close_agent_stdin()
        agent = self.agent
        if agent is not None and agent.poll() is None:
            try:
                agent.terminate()
            except ProcessLookupError:  # pragma: no cover - raced with its exit
                pass

            def kill() -> None:
                if agent.poll() is None:
                    agent.kill()

            timer = threading.Timer(STOP_GRACE, kill)
            timer.daemon = True
            timer.start()

    def run(self) -> int:
        """Start the agent, relay until it exits, write the reports; the exit status."""
        if self.chain_mode:
            successor = Successor(self.stdout)
            self.agent = successor  # type: ignore[assignment]  # the calls of a Popen the proxy makes
            return self._relay(successor.agent_in, successor.agent_out, successor.editor_fd)
        try:
            # The agent gets its own process group: a terminal's Ctrl-C reaches it once, through
            # the proxy's forwarding, not twice.
            group: Dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
            self.agent = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, bufsize=0, **group
            )
        except OSError as e:
            print(f"acp-fast proxy: cannot start the agent {self.command[0]!r}: {e}", file=sys.stderr)
            self._close_outputs()
            return 127 if isinstance(e, FileNotFoundError) else 126
        assert self.agent.stdin is not None and self.agent.stdout is not None
        agent_in = os.dup(self.agent.stdin.fileno())
        agent_out = os.dup(self.agent.stdout.fileno())
        self.agent.stdin.close()
        self.agent.stdout.close()
        return self._relay(agent_in, agent_out, 0)

    def _relay(self, agent_in: int, agent_out: int, editor_in: int) -> int:
        """Relay between the editor (`editor_in`, and stdout) and the agent (its stdin `agent_in`,
        its stdout `agent_out`) until the agent exits; the reports; the exit status."""
        assert self.agent is not None
        for fd in (editor_in, 1, agent_in, agent_out):
            _grow_pipe(fd)
        self.agent_stdin = Output(agent_in)
        self._forward_signals()
        editor, agent = self.directions
        editor.src = editor_in
        editor.dst = self.agent_stdin
        agent.src = agent_out
        to_agent = threading.Thread(target=editor.run, name="editor->agent", daemon=True)
        to_editor = threading.Thread(target=agent.run, name="agent->editor", daemon=True)
        to_agent.start()
        to_editor.start()
        status = self.agent.wait()
        # What the agent wrote before it exited is relayed however long that takes (a slow
        # conversion, a slow editor): the proxy stops only when nothing moved for DRAIN_AFTER_EXIT.
        while True:
            to_editor.join(DRAIN_AFTER_EXIT)
            if not to_editor.is_alive() or self.stopping:
                break
            if time.monotonic() - agent.active >= DRAIN_AFTER_EXIT:
                self.note(f"the agent exited but its stdout stayed open for {DRAIN_AFTER_EXIT:.0f} s; stopping")
                break
        code = status if status >= 0 else 128 - status
        if self._stop_status is not None:
            code = self._stop_status
        self._finish(code)
        return code

    def _forward_signals(self) -> None:
        def forward(signum: int, frame: Any) -> None:
            if self.agent is not None and self.agent.poll() is None:
                try:
                    self.agent.send_signal(signum)
                except ProcessLookupError:  # pragma: no cover - raced with its exit
                    pass

        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        for name in FORWARDED_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, forward)

    def summary(self, status: int) -> Dict[str, Any]:
        """The exit report (``--summary-json``): counts per direction, state and the agent's ``status``."""
        statuses: Dict[str, int] = {}
        with self.lock:
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
            "evicted_sessions": self.store.evicted_sessions,
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }

    def _finish(self, status: int) -> None:
        """The exit reports. Each is written on its own: one that fails is reported in one line on
        stderr and neither skips the others nor changes the proxy's exit status (the agent's)."""
        with self.record_lock:
            for option, path, writer, out in self._outputs:
                self._report(option, path, functools.partial(self._close_output, writer, out, status))
        if self.state_json:
            path = self.state_json
            self._report("--state-json", path, lambda: self._write_file(path, self._state()))
        if self.summary_stderr or self.summary_json:
            info = self.summary(status)
            if self.summary_json:
                data = orjson.dumps(info, option=orjson.OPT_INDENT_2) + b"\n"
                path = self.summary_json
                self._report("--summary-json", path, lambda: self._write_file(path, data))
            if self.summary_stderr:
                self.stderr.write(
                    "".join(printable(line) + "\n" for line in format_summary(info).splitlines()).encode()
                )

    def _report(self, option: str, path: str, write: Callable[[], None]) -> None:
        try:
            write()
        except OSError as e:
            self.stderr.write(f"acp-fast proxy: {option} {output_error(path, e)}\n".encode("utf-8", "replace"))
        except Exception as e:  # noqa: BLE001 - any failure of one report must leave the others
            self.stderr.write(f"acp-fast proxy: {option} {path}: not written: {e}\n".encode("utf-8", "replace"))

    @staticmethod
    def _close_output(writer: Any, out: Optional[IO[bytes]], status: Optional[int]) -> None:
        """End one `--record` / `--trace` / `--otlp` output (`status`: the agent's exit,
        None: never started)."""
        try:
            if status is not None:
                writer.exit(status)
        finally:
            try:
                writer.close()
            finally:
                if out is not None:
                    out.close()

    def _close_outputs(self) -> None:
        """Close the outputs of an agent that never started."""
        for _, _, writer, out in self._outputs:
            try:
                self._close_output(writer, out, None)
            except OSError:
                pass

    def _state(self) -> bytes:
        with self.lock:
            return bytes(self.store.to_json())

    def _write_file(self, path: str, data: bytes) -> None:
        with create_output(path, self.force) as f:
            f.write(data)


def format_summary(info: Dict[str, Any]) -> str:
    """The exit report of [`Proxy.summary`][acp_fast.proxy.Proxy.summary] as the lines ``--summary`` prints."""
    lines = [f"acp-fast proxy: agent exited with status {info['status']} after {info['seconds']:.1f} s"]
    for key, label in (("editor_to_agent", "editor → agent"), ("agent_to_editor", "agent → editor")):
        s = info[key]
        extra = ", ".join(
            f"{s[k]} {k.replace('_', ' ')}"
            for k in ("invalid", "diverted", "dropped", "answered", "too_large", "state_errors", "replaced", "injected")
            if s.get(k)
        )
        lines.append(
            f"  {label}: {s['lines']} lines, {s['bytes_in']} bytes read, {s['bytes_out']} forwarded"
            + (f" ({extra})" if extra else "")
        )
        if s.get("coalesced"):
            lines.append(
                f"    --coalesce: {s['coalesced']} tool-call updates held, {s['coalesced_out']} lines in their place"
            )
    by_status = ", ".join(f"{n} {k}" for k, n in info["tool_calls_by_status"].items()) or "none"
    lines.append(f"  sessions: {info['sessions']}; tool calls: {info['tool_calls']} ({by_status})")
    if info.get("evicted_sessions"):
        lines.append(f"  evicted sessions: {info['evicted_sessions']} (--max-sessions), their state dropped")
    if info["permissions_by_outcome"]:
        lines.append(
            "  permission requests: " + ", ".join(f"{n} {k}" for k, n in info["permissions_by_outcome"].items())
        )
    lines.append(f"  peak RSS: {info['peak_rss_kib'] / 1024:.1f} MiB")
    return "\n".join(lines) + "\n"
