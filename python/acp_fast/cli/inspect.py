"""``acp-fast inspect FILE``: replay a recording or an NDJSON stream through the state engine and
show the final state.

Every frame goes to one [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore]: for a proxy recording, frames the editor
sent are applied with ``source="client"`` and frames the agent sent with ``source="agent"``; a
plain stream is applied with ``source=None``. Bad lines (JSON, JSON-RPC, bad state updates,
malformed records) are counted and the first ones listed; they never stop the replay.

The output shows, per session: the tool calls (id, title, kind, status, a content summary), the
permission requests and their outcomes, the plans with their entries, the terminals (exit
status, bytes of output, last line) and the updates of kinds the state engine has no rule for
(the last ``--max-updates`` per session are kept, 1000 by default), counted by kind. ``--json``
prints the store's checkpoint (``to_json()``: numbers as received) with summary counts instead.

From Python, [`replay`][acp_fast.cli.inspect.replay] gives the store (to compare with a live one):

    from acp_fast.cli.inspect import replay
    store = replay("session.rec")            # a path, or the bytes of a stream / recording
    store.snapshot() == live_store.snapshot()

and ``replay_file`` the store with the counts and errors (``Replay``).
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, DefaultDict, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

import orjson

import acp_fast

from .._terminal import printable
from ..recording import RecordingError, parse_lines, record_limit
from ..trace import parse_lines as trace_lines
from ._streams import Progress, chunks_of, open_input, read_chunks, sniff, string_offset
from ._usage import Parser, bound, fail, integer

#: The longest line a replay reads by default (``acp_fast.DEFAULT_MAX_FRAME_BYTES``).
DEFAULT_MAX_FRAME_BYTES = acp_fast.DEFAULT_MAX_FRAME_BYTES
#: Unknown updates kept per session: the store's default.
DEFAULT_MAX_UPDATES: int = acp_fast.ToolCallStore().max_updates or 0
#: v2 entities kept per target and session: the store's default.
DEFAULT_MAX_ENTITIES: int = acp_fast.ToolCallStore().max_entities or 0
#: What [`replay`][acp_fast.cli.inspect.replay] reads: a path, the bytes themselves, or an open binary file.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


class ReplayError(NamedTuple):
    """A line that could not be applied: where (line and byte column of the file), code, kind, why."""

    line: int  # the 1-based line of the file
    column: int  # the 1-based byte column in that line
    code: Optional[int]  # the JSON-RPC error code of a bad frame, None for a bad record
    kind: str  # a stable snake_case id, as DecodeError.kind
    message: str  # what is wrong, in words

    def to_json(self) -> Dict[str, Any]:
        """The error as the ``errors`` entries of ``acp-fast inspect --json`` write it."""
        return {"line": self.line, "column": self.column, "code": self.code, "kind": self.kind, "message": self.message}


@dataclass
class Replay:
    """The result of a replay: the store, and what was read."""

    store: Any
    format: str = "ndjson"
    lines: int = 0
    frames: int = 0
    applied: int = 0
    skipped: int = 0  # frames not forwarded by the proxy, skipped with forwarded_only=True
    errors: List[ReplayError] = field(default_factory=list)
    error_count: int = 0
    errors_by_kind: Counter[str] = field(default_factory=Counter)
    header: Optional[Dict[str, Any]] = None
    exit_status: Optional[int] = None
    # unknown updates kept by the store (``max_updates``), by session, then kind
    updates_by_kind: DefaultDict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))


class _Replayer:
    def __init__(self, store: Any, *, max_frame_bytes: int, max_errors: Optional[int], forwarded_only: bool):
        self.result = Replay(store)
        self.store = store
        self.max_frame_bytes = max_frame_bytes
        self.max_errors = max_errors
        self.forwarded_only = forwarded_only

    def error(self, line: int, column: int, code: Optional[int], kind: str, message: str) -> None:
        r = self.result
        r.error_count += 1
        r.errors_by_kind[kind] += 1
        if self.max_errors is None or len(r.errors) < self.max_errors:
            r.errors.append(ReplayError(line, max(1, column), code, kind, message))

    def decode_error(self, exc: Any, line: int, base: int) -> None:
        code = exc.code
        kind = {-32700: "json", -32600: "jsonrpc", -32602: "state"}.get(code, "json")
        self.error(line, base + (exc.position or 0) + 1, code, kind, exc.msg)

    def apply(self, frame: Any, line: int, base: int, source: Optional[str]) -> None:
        r = self.result
        r.frames += 1
        try:
            changes = self.store.apply(frame, source=source)
        except acp_fast.DecodeError as exc:
            self.decode_error(exc, line, base)
            return
        r.applied += 1
        for change in changes if isinstance(changes, list) else (changes,):
            if isinstance(change, acp_fast.DecodeError):  # a batch: entry errors are returned in place
                self.decode_error(change, line, base)
            elif change is not None and change.target == "update":
                r.updates_by_kind[change.session_id][change.id] += 1

    def ndjson(self, chunks: Iterable[bytes]) -> None:
        self.result.format = "ndjson"
        decoder = acp_fast.FrameDecoder(max_frame_bytes=self.max_frame_bytes)
        for chunk in chunks:
            for item in decoder.feed(chunk):
                self._item(item)
        for item in decoder.finish():
            self._item(item)
        self.result.lines = decoder.line

    def _item(self, item: Any) -> None:
        if isinstance(item, acp_fast.DecodeError):
            self.decode_error(item, item.line or 0, 0)
        else:
            self.apply(item, item.line or 0, 0, None)

    def recording(self, chunks: Iterable[bytes], trace: bool = False) -> None:
        r = self.result
        r.format = "trace" if trace else "recording"
        parse = trace_lines if trace else parse_lines
        for number, record in parse(chunks, record_limit(self.max_frame_bytes)):
            r.lines = number
            if record is None:
                continue
            if isinstance(record, RecordingError):
                self.error(number, record.column, None, "recording", record.message)
                continue
            if record.kind == "header":
                r.header = record.value
                continue
            if record.kind == "footer":
                r.exit_status = record.value.get("status")
                continue
            if self.forwarded_only and not record.forwarded:
                r.skipped += 1
                continue
            if record.payload == "frame":
                self.apply(record.data, record.line, record.offset, record.source)
            elif "withheld" in record.value:  # dropped or replaced, kept out of the recording: never delivered
                r.skipped += 1
            elif record.payload is None:
                self.error(
                    record.line,
                    1,
                    -32700,
                    "json",
                    f"expected a frame within the proxy's limit, found a line of {record.value['too_large']} bytes (not recorded)",
                )
            else:  # a line that was not JSON
                assert record.data is not None  # a text or base64 record holds its line
                try:
                    frame = acp_fast.decode(record.data)
                except acp_fast.DecodeError as exc:
                    if record.payload == "text":
                        column = record.offset + string_offset(record.raw, exc.position or 0) + 1
                    else:
                        column = record.offset + 1
                    kind = "json" if exc.code == -32700 else "jsonrpc"
                    self.error(record.line, column, exc.code, kind, exc.msg)
                    continue
                self.apply(frame, record.line, record.offset, record.source)


def _chunks(source: Source) -> Tuple[Iterator[bytes], Optional[int], str, Any]:
    """(chunks, size, display name, stream to close or None)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return chunks_of(source), len(source), "<bytes>", None
    if isinstance(source, (str, os.PathLike)):
        stream, size, name = open_input(os.fspath(source))
        return read_chunks(stream), size, name, (stream if stream is not sys.stdin.buffer else None)
    if hasattr(source, "read"):
        return read_chunks(source), None, getattr(source, "name", "<stream>"), None
    raise TypeError(f"expected a path, bytes or a binary file, found {type(source).__name__}")


def replay_file(
    source: Source,
    *,
    protocol_version: Optional[int] = None,
    max_tool_calls: Optional[int] = None,
    max_updates: Optional[int] = DEFAULT_MAX_UPDATES,
    max_entities: Optional[int] = DEFAULT_MAX_ENTITIES,
    max_sessions: Optional[int] = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    forwarded_only: bool = False,
    input_format: str = "auto",
    max_errors: Optional[int] = 100,
    progress: Optional[Progress] = None,
) -> Replay:
    """Replay ``source`` (a path — ``"-"`` is stdin —, bytes, or a binary file) into a new
    [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore]; returns the ``Replay`` (store, counts, first
    ``max_errors`` errors). ``forwarded_only`` skips recorded frames the proxy did not forward
    (``"action"`` records). ``input_format``: ``auto``, ``ndjson`` or ``recording``. ``max_updates``:
    unknown updates kept per session, the last ones (the store's default, 1000; 0: none).
    ``max_entities``: v2 entities kept per target and session (the store's default; 0: none).
    ``max_sessions``: sessions kept (None, the default: every session of the recording)."""
    store = acp_fast.ToolCallStore(
        protocol_version,
        max_tool_calls=max_tool_calls,
        max_frame_bytes=max_frame_bytes,
        max_updates=max_updates,
        max_entities=max_entities,
        max_sessions=max_sessions,
    )
    replayer = _Replayer(store, max_frame_bytes=max_frame_bytes, max_errors=max_errors, forwarded_only=forwarded_only)
    chunks, _size, _name, stream = _chunks(source)
    try:
        if progress is not None:
            chunks = progress.wrap(chunks)
        kind, chunks = sniff(chunks)
        if input_format != "auto":
            kind = input_format
        if kind in ("recording", "trace"):
            replayer.recording(chunks, trace=kind == "trace")
        else:
            replayer.ndjson(chunks)
    finally:
        if stream is not None:
            stream.close()
        if progress is not None:
            progress.close()
    return replayer.result


def replay(source: Source, **options: Any) -> Any:
    """Replay a recording or an NDJSON stream (a path, or its bytes) and return the
    [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore] holding the final state. Options as ``replay_file``."""
    return replay_file(source, **options).store


# ---------------------------------------------------------------------------------------------
# Summaries


def content_summary(content: Any) -> str:
    """``"2 items: diff /repo/app.py, text 120 chars"`` for a tool call's content."""
    if not isinstance(content, list) or not content:
        return "-"
    parts = [_item_summary(item) for item in content[:3]]
    if len(content) > 3:
        parts.append("...")
    noun = "item" if len(content) == 1 else "items"
    return f"{len(content)} {noun}: " + ", ".join(parts)


def _item_summary(item: Any) -> str:
    if not isinstance(item, dict):
        return "?"
    kind = item.get("type")
    if kind == "content":
        block = item.get("content")
        if isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                return f"text {len(block['text'])} chars"
            if block.get("type") == "resource_link":
                return f"link {block.get('uri', '?')}"
            return _label(block.get("type", "?"))
        return "content"
    if kind == "diff":
        if isinstance(item.get("path"), str):
            return f"diff {item['path']}"
        changes = item.get("changes")
        if isinstance(changes, list):
            paths = [c.get("path") for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str)]
            if len(paths) == 1:
                return f"diff {paths[0]}"
            return f"diff {len(changes)} files"
        return "diff"
    if kind == "terminal":
        return f"terminal {item.get('terminalId', '?')}"
    return _label(kind) if kind is not None else "?"


def entity_row(target: str, value: Any) -> List[str]:
    """A row of the entities table: the target, how many entities it holds (``-`` for a target
    held as one value), and its latest entity in short (a message as its text)."""
    keyed = acp_fast.ENTITY_TARGETS.get(target) is not None
    latest = next(reversed(value.values()), None) if keyed and isinstance(value, dict) else value
    count = str(len(value)) if keyed and isinstance(value, dict) else "-"
    if isinstance(latest, dict):
        blocks = latest.get("content", latest.get("summary"))
        if isinstance(blocks, list):
            text = "".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
            if text:
                return [target, count, _text(text, 60)]
        latest = {k: v for k, v in latest.items() if k != "_meta"}
    return [target, count, _text(latest, 60)]


def _text(value: Any, width: int = 48) -> str:
    text = (
        value
        if isinstance(value, str)
        else ("-" if value is None else acp_fast.dumps(value).decode("utf-8", "replace"))
    )
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _label(value: Any) -> str:
    """A value as a label: a scalar as ``str`` gives it, anything else (a list or an object a
    peer put where a string belongs, however deep) in short as JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return str(value)
    return _text(value)


def last_line(data: bytes) -> str:
    """The last non-blank line of a terminal's output, without unprintable characters."""
    text = data.decode("utf-8", "replace")
    for line in reversed(text.splitlines()):
        cleaned = "".join(ch for ch in line if ch.isprintable())
        if cleaned.strip():
            return cleaned.strip()
    return ""


def file_row(record: Dict[str, Any]) -> List[str]:
    """A row of the files table: the operation, the path, the lines asked for (``line`` and
    ``limit`` of a read), the bytes read or written, and ``ok`` or the error's message."""
    line, limit = record.get("line"), record.get("limit")
    lines = (
        "-"
        if line is None and limit is None
        else f"{line if line is not None else 1}+{limit if limit is not None else '*'}"
    )
    error = record.get("error")
    if error is None:
        result = "ok"
    else:
        message = error.get("message") if isinstance(error, dict) else None
        result = "error: " + _text(message if message is not None else error, 40)
    nbytes = record.get("bytes")
    return [
        _text(record.get("op"), 6),
        _text(record.get("path"), 48),
        lines,
        "-" if nbytes is None else str(nbytes),
        result,
    ]


def _exit(terminal: Dict[str, Any]) -> str:
    marks = "".join(f", {mark}" for mark in ("killed", "released") if terminal.get(mark) is True)
    return _exit_status(terminal) + marks


def _exit_status(terminal: Dict[str, Any]) -> str:
    status = terminal.get("exitStatus")
    if not isinstance(status, dict):
        return "running"
    code = status.get("exitCode")
    if isinstance(code, int):
        return f"exit {code}"
    signal = status.get("signal")
    if isinstance(signal, str):
        return signal
    return "exited"


def _output(terminal: Dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(terminal.get("output") or "")
    except (binascii.Error, ValueError):  # pragma: no cover - the store writes valid base64
        return b""


def _table(header: List[str], rows: List[List[str]], indent: str = "    ") -> List[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out = [indent + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for row in rows:
        out.append(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return out


def summary(result: Replay, state: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Counts over the final state: sessions, tool calls by status, permissions by outcome, ..."""
    state = state if state is not None else result.store.state()
    statuses: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    tool_calls = plans = terminals = permissions = files = 0
    entities: Counter[str] = Counter()
    for session in state["sessions"].values():
        for target, value in session.get("entities", {}).items():
            keyed = acp_fast.ENTITY_TARGETS.get(target) is not None
            entities[target] += len(value) if keyed and isinstance(value, dict) else 1
        tool_calls += len(session["toolCalls"])
        statuses.update(_label(tc.get("status")) for tc in session["toolCalls"].values())
        plans += len(session["plans"])
        terminals += len(session["terminals"])
        permissions += len(session["permissions"])
        files += len(session.get("files", ()))
        outcomes.update(_label(p.get("outcome")) for p in session["permissions"])
    kinds: Counter[str] = Counter()
    for counts in result.updates_by_kind.values():
        kinds.update(counts)
    return {
        "sessions": len(state["sessions"]),
        "toolCalls": tool_calls,
        "toolCallsByStatus": dict(statuses),
        "evicted": state["evicted"],
        "permissions": permissions,
        "permissionsByOutcome": dict(outcomes),
        "plans": plans,
        "terminals": terminals,
        "files": files,
        "closedSessions": state.get("closedSessions", 0),
        "entities": dict(entities),
        "updates": sum(kinds.values()),
        "updatesByKind": dict(kinds),
        "lines": result.lines,
        "frames": result.frames,
        "skipped": result.skipped,
        "errors": result.error_count,
        "errorsByKind": dict(result.errors_by_kind),
    }


def render(name: str, result: Replay, *, session_filter: Optional[str] = None) -> str:
    """The text report of ``acp-fast inspect``."""
    store = result.store
    state = store.state()
    lines: List[str] = []
    head = f"{name}: {result.format}"
    if result.header is not None:
        argv = result.header.get("argv")
        if isinstance(argv, list) and argv:
            head += " of `" + " ".join(_label(a) for a in argv) + "`"
    head += f", {_count(result.lines, 'line')}, {_count(result.frames, 'frame')}"
    version = store.protocol_version
    source = (
        "fixed" if state["protocolVersion"] is not None else ("negotiated" if store.negotiated_version else "default")
    )
    head += f", protocol v{version} ({source})"
    if result.format == "recording":
        head += ", agent exit status " + (str(result.exit_status) if result.exit_status is not None else "unknown")
    lines.append(head)
    if result.skipped:
        lines.append(f"skipped {result.skipped} frames the proxy did not forward")
    if result.error_count:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(result.errors_by_kind.items()))
        lines.append(f"errors: {result.error_count} ({kinds})")
        for err in result.errors:
            lines.append(f"  {name}:{err.line}:{err.column}: [{err.kind}] {err.message}")
        if result.error_count > len(result.errors):
            lines.append(f"  ... {result.error_count - len(result.errors)} more")
    else:
        lines.append("errors: none")
    if state["evicted"]:
        lines.append(f"evicted: {state['evicted']} finished tool calls (--max-tool-calls)")
    if state.get("closedSessions"):
        closed = _count(state["closedSessions"], "session")
        lines.append(f"closed: {closed} (session/close, session/delete), their state dropped")
    sessions = state["sessions"]
    if not sessions:
        lines.append("")
        lines.append("no session state (no tool calls, permission requests, plans or terminals)")
    for sid, session in sessions.items():
        if session_filter is not None and sid != session_filter:
            continue
        tcs, perms, plans, terms = session["toolCalls"], session["permissions"], session["plans"], session["terminals"]
        files = session.get("files", [])
        lines.append("")
        lines.append(
            f"session {sid}: {_count(len(tcs), 'tool call')}, {_count(len(perms), 'permission request')}, "
            f"{_count(len(plans), 'plan')}, {_count(len(terms), 'terminal')}"
            + (f", {_count(len(files), 'file request')}" if files else "")
            + (" (replaying)" if store.replaying(sid) else "")
        )
        dropped = truncation(session)
        if dropped:
            lines.append(f"  dropped by the bounds: {dropped}")
        if tcs:
            lines.append("  tool calls")
            rows = [
                [
                    _text(tcid, 32),
                    _text(tc.get("title"), 40),
                    _text(tc.get("kind"), 12),
                    _text(tc.get("status"), 12),
                    content_summary(tc.get("content")),
                ]
                for tcid, tc in tcs.items()
            ]
            lines += _table(["ID", "TITLE", "KIND", "STATUS", "CONTENT"], rows)
        if perms:
            lines.append("  permission requests")
            rows = [
                [
                    _text(p.get("id"), 16),
                    _text(p.get("toolCallId"), 32),
                    _text(p.get("outcome"), 12),
                    _text(p.get("optionId"), 24),
                    "yes" if p.get("approved") else "no",
                ]
                for p in perms
            ]
            lines += _table(["ID", "TOOL CALL", "OUTCOME", "OPTION", "APPROVED"], rows)
        for plan_id, plan in plans.items():
            entries = plan.get("entries")
            if isinstance(entries, list):
                lines.append(f"  plan {plan_id} ({_count(len(entries), 'entry', 'entries')})")
                for entry in entries:
                    if isinstance(entry, dict):
                        status = _text(entry.get("status"), 14)
                        priority = entry.get("priority")
                        suffix = f" ({priority})" if isinstance(priority, str) else ""
                        lines.append(f"    [{status}] {_text(entry.get('content'), 60)}{suffix}")
            else:
                lines.append(f"  plan {plan_id} ({_text(plan.get('type'), 16)})")
        if terms:
            lines.append("  terminals")
            rows = []
            for tid, term in terms.items():
                output = _output(term)
                rows.append(
                    [
                        _text(tid, 24),
                        _text(term.get("command"), 32),
                        _exit(term),
                        str(len(output)),
                        _text(last_line(output), 48),
                    ]
                )
            lines += _table(["ID", "COMMAND", "EXIT", "BYTES", "LAST LINE"], rows)
        if files:
            lines.append("  files")
            lines += _table(["OP", "PATH", "LINES", "BYTES", "RESULT"], [file_row(f) for f in files])
        entities = session.get("entities")
        if isinstance(entities, dict) and entities:
            lines.append("  entities (v2)")
            lines += _table(["TARGET", "COUNT", "LATEST"], [entity_row(t, v) for t, v in entities.items()])
        unknown = result.updates_by_kind.get(sid)
        if unknown:
            kept = len(session.get("updates", ()))
            counted = ", ".join(f"{kind} {n}" for kind, n in sorted(unknown.items()))
            lines.append(f"  unknown updates: {sum(unknown.values())} ({counted}), {kept} kept")
    # Ids, titles, commands and argv are the stream's: no control character reaches the terminal.
    return "\n".join(printable(line) for line in lines) + "\n"


#: A session's ``_truncated`` counts (DESIGN 7.8), in marker order, and what the report calls them.
_SESSION_DROPS = (
    ("droppedTerminals", "terminal"),
    ("droppedPlans", "plan"),
    ("droppedPermissions", "permission request"),
    ("droppedUpdates", "unknown update"),
    ("droppedEntities", "entity", "entities"),
)


def truncation(session: Dict[str, Any]) -> str:
    """What the store's bounds dropped from a session of ``state()``, ``""`` when nothing: its
    ``_truncated`` counts (terminals, plans, permission requests, unknown updates), then the
    content items its tool calls lost and the output bytes its terminals lost (their records'
    ``_truncated``), e.g. ``"3 plans, 2 content items (1 tool call)"``."""
    parts: List[str] = []
    marker = session.get("_truncated")
    if isinstance(marker, dict):
        for key, *nouns in _SESSION_DROPS:
            n = marker.get(key)
            if isinstance(n, int) and n:
                parts.append(_count(n, *nouns))
    for records, key, noun, owner in (
        (session.get("toolCalls"), "droppedItems", "content item", "tool call"),
        (session.get("terminals"), "droppedBytes", "output byte", "terminal"),
    ):
        total = cut = 0
        for record in records.values() if isinstance(records, dict) else ():
            n = record.get("_truncated", {}).get(key) if isinstance(record, dict) else None
            if isinstance(n, int) and n:
                total += n
                cut += 1
        if cut:
            parts.append(f"{_count(total, noun)} ({_count(cut, owner)})")
    return ", ".join(parts)


def _count(n: int, noun: str, plural: Optional[str] = None) -> str:
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def to_json(name: str, result: Replay) -> Dict[str, Any]:
    """The ``--json`` report. Its ``state`` is ``store.to_json()`` as is (the bytes of
    ``dumps(state())``): a checkpoint may nest deeper than ``dumps`` writes (docs/DESIGN.md 7.8)."""
    state = result.store.state()
    return {
        "file": name,
        "format": result.format,
        "protocolVersion": result.store.protocol_version,
        "negotiatedVersion": result.store.negotiated_version,
        "header": result.header,
        "exitStatus": result.exit_status,
        "summary": summary(result, state),
        "errors": [e.to_json() for e in result.errors],
        "state": orjson.Fragment(result.store.to_json()),
    }


def main(argv: Optional[List[str]] = None) -> int:
    """``acp-fast inspect``: the command line (``argv`` without the program name); the exit status."""
    parser = Parser(
        prog="acp-fast inspect",
        description=(
            "Replay an `acp-fast proxy` recording or an ACP NDJSON stream through the state engine "
            "(acp_fast.ToolCallStore) and show the final state: tool calls, permission requests, plans, terminals."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the recording or stream; - reads stdin")
    parser.add_argument("--json", action="store_true", help="print the store's state() and summary counts as JSON")
    parser.add_argument(
        "--protocol", type=int, choices=(1, 2), help="fix the protocol version (default: negotiated, else 1)"
    )
    parser.add_argument("--session", metavar="ID", help="show only this session")
    parser.add_argument("--forwarded-only", action="store_true", help="skip recorded frames the proxy did not forward")
    parser.add_argument(
        "--max-errors",
        type=bound(0),
        default=20,
        metavar="N",
        help="list at most N errors (all are counted; default 20; none: all)",
    )
    parser.add_argument(
        "--max-tool-calls",
        type=bound(1),
        metavar="N",
        help="bound the store (oldest finished tool calls are dropped; default none: all)",
    )
    parser.add_argument(
        "--max-updates",
        type=bound(0),
        default=DEFAULT_MAX_UPDATES,
        metavar="N",
        help=f"keep the updates no rule handles, the last N per session, counting those dropped (default {DEFAULT_MAX_UPDATES}; none: all; 0: none kept)",
    )
    parser.add_argument(
        "--max-entities",
        type=bound(0),
        default=DEFAULT_MAX_ENTITIES,
        metavar="N",
        help=f"keep the v2 entities (messages, state, usage, ...), the last N per target and session (default {DEFAULT_MAX_ENTITIES}; none: all; 0: not tracked)",
    )
    parser.add_argument(
        "--max-frame-bytes",
        type=integer(1, acp_fast.MAX_FRAME_BYTES),
        default=DEFAULT_MAX_FRAME_BYTES,
        metavar="N",
        help="longest frame (default 64 MiB)",
    )
    parser.add_argument(
        "--input",
        choices=("auto", "ndjson", "recording", "trace"),
        default="auto",
        help="what FILE holds (default auto)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_true", default=None, help="show progress on stderr")
    group.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        stream, size, name = open_input(args.file)
    except OSError as exc:
        return fail("acp-fast inspect", f"cannot read {args.file}: {exc.strerror or exc}")
    progress = Progress(f"inspect {name}", size, enabled=Progress.wanted(args.progress))
    try:
        result = replay_file(
            stream,
            protocol_version=args.protocol,
            max_tool_calls=args.max_tool_calls,
            max_updates=args.max_updates,
            max_entities=args.max_entities,
            max_frame_bytes=args.max_frame_bytes,
            forwarded_only=args.forwarded_only,
            input_format=args.input,
            max_errors=args.max_errors,
            progress=progress,
        )
    except OSError as exc:
        return fail("acp-fast inspect", f"cannot read {args.file}: {exc.strerror or exc}")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        try:
            out.reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # pragma: no cover
            pass
    if args.json:
        report = to_json(name, result)
        report["state"] = orjson.Fragment(result.store.to_json())  # its numbers as received
        out.write(acp_fast.dumps(report).decode("utf-8") + "\n")
    else:
        out.write(render(name, result, session_filter=args.session))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
