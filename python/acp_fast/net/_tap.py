"""What a connection of `acp-fast serve` or `acp-fast connect` keeps of its traffic, as
`acp-fast proxy` does for its one connection: the sessions' state (`acp_fast.ToolCallStore`), a
recording (`--record`) and a trace (`--trace`), each line given with its side (`"editor"`, the
network client; `"agent"`). One `Tap` per connection, in the event loop's thread: no lock, no
flush thread (the owner calls [`flush`][acp_fast.net._tap.Tap.flush])."""

from __future__ import annotations

import os
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

import acp_fast

from .._outputs import create_output
from ..proxy import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOOL_CALLS
from ..recording import RecordWriter
from ..trace import TraceWriter

__all__ = ["Tap", "output_path"]


def output_path(template: str, connection_id: str, number: int, suffix: str) -> str:
    """The file of one connection for `--record` / `--trace` `template`: a directory gets
    `<connection id><suffix>` in it; otherwise `{id}` and `{n}` (the connection's number, from 1)
    are replaced."""
    if os.path.isdir(template):
        return os.path.join(template, connection_id + suffix)
    return template.replace("{id}", connection_id).replace("{n}", str(number))


class Tap:
    """One connection's state, recording and trace. `record` / `trace`: file paths (None: off),
    created owner-only and never overwritten; `argv`: the agent command the recording's header
    names."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        record: Optional[str] = None,
        trace: Optional[str] = None,
        max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
        max_tool_calls: Optional[int] = DEFAULT_MAX_TOOL_CALLS,
        max_sessions: Optional[int] = DEFAULT_MAX_SESSIONS,
    ) -> None:
        self.store = acp_fast.ToolCallStore(
            max_tool_calls=max_tool_calls, max_sessions=max_sessions, max_frame_bytes=max_frame_bytes
        )
        #: Lines by side, and the bad state updates seen (forwarded all the same).
        self.lines: Dict[str, int] = {"editor": 0, "agent": 0}
        self.state_errors = 0
        self._outputs: List[Tuple[Any, IO[bytes]]] = []
        self.paths: List[str] = []
        try:
            if record:
                out = create_output(record, False)
                self._outputs.append((RecordWriter(out, argv, acp_fast.__version__), out))
                self.paths.append(record)
            if trace:
                out = create_output(trace, False)
                self._outputs.append((TraceWriter(out, time.time()), out))
                self.paths.append(trace)
        except BaseException:
            self.close(None)
            raise
        self.dirty = False

    @property
    def recording(self) -> bool:
        return bool(self._outputs)

    def line(
        self,
        side: str,
        data: bytes,
        *,
        is_json: bool = True,
        crlf: bool = False,
        eol: bool = True,
        action: Optional[str] = None,
        reason: Optional[str] = None,
    ) -> None:
        """One line of `side` (without its line ending): into the state when it was forwarded as
        JSON, then into the recording and the trace."""
        self.lines[side] += 1
        if is_json and action is None:
            self.track(side, data)
        self.record(side, data, is_json=is_json, crlf=crlf, eol=eol, action=action, reason=reason)

    def track(self, side: str, data: bytes) -> bool:
        """A line of `side` into the state only (no line counted, nothing recorded): False when
        the state found an error in it (the line is forwarded all the same)."""
        source = "agent" if side == "agent" else "client"
        ok = True
        for change in self.store.feed(data + b"\n", changes=False, source=source):
            if isinstance(change, acp_fast.DecodeError):
                self.state_errors += 1
                ok = False
        return ok

    def record(
        self,
        side: str,
        data: bytes,
        *,
        is_json: bool = True,
        crlf: bool = False,
        eol: bool = True,
        action: Optional[str] = None,
        reason: Optional[str] = None,
        withheld: bool = False,
    ) -> None:
        """A line of `side` into the recording and the trace only (`withheld`: its length, not its
        bytes; a middleware's `ctx.withhold()`)."""
        if self._outputs:
            t = time.time()
            for writer, _ in self._outputs:
                writer.line(side, data, is_json, t, crlf=crlf, eol=eol, action=action, reason=reason, withheld=withheld)
            self.dirty = True

    def too_large(self, side: str, length: int) -> None:
        """A line over the frame limit (`length` bytes), dropped."""
        self.lines[side] += 1
        t = time.time()
        for writer, _ in self._outputs:
            writer.too_large(side, length, t)
        self.dirty = bool(self._outputs)

    def flush(self) -> None:
        """Write out what the recording and the trace hold."""
        if self.dirty:
            self.dirty = False
            for writer, _ in self._outputs:
                try:
                    writer.flush()
                except (OSError, ValueError):  # seen again at close
                    pass

    def close(self, status: Optional[int]) -> None:
        """The end: the recording's footer (the agent's exit `status`; None: never started), then
        the files closed."""
        outputs, self._outputs = self._outputs, []
        for writer, out in outputs:
            try:
                if status is not None:
                    writer.exit(status)
                writer.close()
            finally:
                out.close()

    def summary(self) -> str:
        """One line: the lines each way, the sessions and tool calls of the state."""
        snap = self.store.snapshot()
        calls = sum(len(c) for c in snap.values())
        text = (
            f"{self.lines['editor']} lines from the client, {self.lines['agent']} from the agent, "
            f"{len(snap)} sessions with tool calls, "
            f"{calls} tool calls"
        )
        if self.state_errors:
            text += f", {self.state_errors} bad state updates"
        return text
