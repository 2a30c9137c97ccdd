"""Traces in the format of the official ACP conductor (`agent-client-protocol-conductor
--trace FILE.jsons`), which its trace viewer (`agent-client-protocol-trace-viewer FILE.jsons`)
draws as a sequence diagram: the one place for that format here. `acp-fast proxy --trace FILE`
writes one while it relays; `acp-fast export RECORDING --to FILE.jsons` turns a recording
into one (docs/CLI.md, "Traces").

A trace is NDJSON, one event per line, each one of three objects (members in this order):

* `{"type":"request","ts":T,"protocol":"acp","from":F,"to":D,"id":ID,"method":M,"session":S,"params":P}`
* `{"type":"response","ts":T,"from":F,"to":D,"id":ID,"is_error":B,"payload":P}`
* `{"type":"notification","ts":T,"protocol":"acp","from":F,"to":D,"method":M,"session":S,"params":P}`

`ts` is seconds since the trace began; `from` / `to` name the conductor's components:
`Client` (the editor), `Agent`, and `Proxy(0)` for acp-fast itself; `session` (the
`sessionId` of the params) is left out when the frame names none; `params` is `null` for a
frame without params; the `payload` of a response is its `result`, or its `error` object
when `is_error`. The id, params, result and error are the frame's own JSON text, byte for byte.

What the proxy did with a line shows in who it goes to: a line forwarded as it came goes from
its side to the other; a line the proxy kept from the other side (diverted, dropped, answered,
replaced, held by `--coalesce`) goes from its side to `Proxy(0)`; a frame the proxy wrote
itself (a middleware's, a merged `--coalesce` update) goes from `Proxy(0)` to the side it
was written to. A batch gives one event per message. The format has no place for lines that
are not JSON-RPC, oversized lines, a middleware's reasons or the agent's exit status: they are
left out (`TraceWriter.skipped` counts the lines); a recording keeps them all.

Mirror: the proxy's native relay builds the same events in the core (rust/record.rs `events`,
`event`, `route`: byte for byte those of `events`, `_event` and `route` here); the fallback's
proxy loop writes through `TraceWriter`.
"""

from __future__ import annotations

import re
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import acp_fast

from .recording import (
    FlushedWriter,
    ParsedRecord,
    Record,
    RecordingError,
    _dumps,
    _load,
    _seconds,
    iter_lines,
    read_chunks,
)

__all__ = ["CLIENT", "AGENT", "PROXY", "TraceWriter", "events", "from_recording", "is_trace", "parse_lines"]

#: The conductor's name of the editor's end.
CLIENT = "Client"
#: The conductor's name of the agent's end.
AGENT = "Agent"
#: The conductor's name of the first proxy between them: acp-fast in its traces.
PROXY = "Proxy(0)"
#: The component of each side of a recording.
COMPONENTS = {"editor": CLIENT, "agent": AGENT}


# Where the members of a compact frame (or event) are, read at once: the usual member order
# with no space, up to the last member, whose value runs to the closing brace (checked by reading
# it). Anything else is found member by member (`_find_member`: the backend's scanner).
_STRING = rb'"(?:[^"\\]|\\.)*"'
_ID = rb"(?:-?[0-9]+|" + _STRING + rb"|null)"
_FRAME = re.compile(
    rb'\{"jsonrpc":"2\.0"(?:,"id":(?P<id>' + _ID + rb"))?(?:,\"method\":(?P<method>" + _STRING + rb"))?"
    rb'(?:,"(?P<last>params|result|error)":)?'
)
_EVENT = re.compile(
    rb'\{"type":"(?:request|response|notification)","ts":[-+0-9.eE]+,(?:"protocol":' + _STRING + rb",)?"
    rb'"from":' + _STRING + rb',"to":' + _STRING + rb'(?:,"id":(?P<id>' + _ID + rb"))?"
    rb'(?:,"method":(?P<method>' + _STRING + rb"))?(?:,\"session\":" + _STRING + rb")?"
    rb'(?:,"is_error":(?:true|false))?,"(?P<last>params|payload)":'
)


def _spans(text: bytes, pattern: re.Pattern[bytes], keys: Tuple[str, ...]) -> Dict[str, Tuple[int, int]]:
    """The spans of `keys` (those present) among the members of the JSON object `text` (valid)."""
    m = pattern.match(text)
    if m is not None and m.group("last") is not None:
        end = len(text.rstrip()) - 1
        start = m.end()
        try:
            acp_fast.loads(text[start:end])  # one value up to the closing brace: the last member's
        except acp_fast.DecodeError:
            pass
        else:
            found: Dict[str, Tuple[int, int]] = {}
            for k in ("id", "method"):
                if k in keys and m.group(k) is not None:
                    found[k] = m.span(k)
            while text[start] in b" \t\r\n":  # the value's own span, as the scanner gives it
                start += 1
            while text[end - 1] in b" \t\r\n":
                end -= 1
            found[m.group("last").decode()] = (start, end)
            return found
    first = text.index(b"{")
    spans = {}
    for key in keys:
        member = acp_fast._find_member(text, first, key)
        if member is not None:
            spans[key] = (member[1], member[2])
    return spans


def _event(message: Any, ts: bytes, sender: str, receiver: str) -> Optional[bytes]:
    """The event of one decoded message (None: not a request, notification or response)."""
    raw: bytes = message.raw
    kind = message.kind
    if kind not in ("response", "error", "request", "notification"):
        return None
    at = _spans(raw, _FRAME, ("id", "method", "params", "result", "error"))

    def member(key: str, default: bytes) -> bytes:
        span = at.get(key)
        return default if span is None else raw[span[0] : span[1]]

    route = b',"from":"' + sender.encode() + b'","to":"' + receiver.encode() + b'"'
    if kind == "response" or kind == "error":
        error = kind == "error"
        payload = member("error" if error else "result", b"null")
        return (
            b'{"type":"response","ts":' + ts + route + b',"id":' + member("id", b"null") + b',"is_error":'
            + (b"true" if error else b"false") + b',"payload":' + payload + b"}\n"
        )  # fmt: skip
    parts = [b'{"type":"', kind.encode(), b'","ts":', ts, b',"protocol":"acp"', route]
    if kind == "request":
        parts += [b',"id":', member("id", b"null")]
    parts += [b',"method":', member("method", b'""')]
    session = message.session_id
    if isinstance(session, str):
        parts += [b',"session":', acp_fast.dumps(session)]
    parts += [b',"params":', member("params", b"null"), b"}\n"]
    return b"".join(parts)


def events(frame: bytes, ts: float, sender: str, receiver: str, backend: Any = None) -> List[bytes]:
    """The trace events (lines) of one frame (a JSON-RPC message or batch, valid JSON) sent by
    component `sender` to `receiver` at `ts` seconds; none for a line that is not JSON-RPC.
    `backend`: the module that reads the frame (None: `acp_fast`'s)."""
    backend = acp_fast if backend is None else backend
    try:
        decoded = backend.decode(frame)
    except acp_fast.DecodeError:
        return []
    stamp = b"%.6f" % ts
    out = []
    for message in decoded if isinstance(decoded, (list, acp_fast.Batch)) else (decoded,):
        event = None if isinstance(message, acp_fast.DecodeError) else _event(message, stamp, sender, receiver)
        if event is not None:
            out.append(event)
    return out


def route(side: str, action: Optional[str]) -> Tuple[str, str]:
    """(from, to) of a line of `side` that the proxy handled as `action` (a recording's)."""
    other = COMPONENTS["agent" if side == "editor" else "editor"]
    if action is None:
        return COMPONENTS[side], other
    if action == "injected":
        return PROXY, other
    return COMPONENTS[side], PROXY


class TraceWriter(FlushedWriter):
    """Writes a trace, with the calls of `acp_fast.recording.RecordWriter` (the proxy
    gives every line to both). `start`: the time (`time.time()`) `ts` counts from.
    `flush_every` as for a recording (events reach the file within that many seconds)."""

    def __init__(self, out: IO[bytes], start: float, *, flush_every: Optional[float] = None) -> None:
        self.start = start
        #: Lines that give no event (not JSON-RPC, withheld, oversized).
        self.skipped = 0
        super().__init__(out, flush_every, "acp-fast trace flush")

    def line(
        self,
        side: str,
        data: bytes,
        is_json: bool,
        t: float,
        *,
        crlf: bool = False,
        eol: bool = True,
        action: Optional[str] = None,
        reason: Optional[str] = None,
        withheld: bool = False,
    ) -> None:
        """One line of `side` (without its line ending), as `RecordWriter.line`."""
        del crlf, eol, reason  # the format has no place for them
        found = events(data, max(t - self.start, 0.0), *route(side, action)) if is_json and not withheld else []
        if not found:
            self.skipped += 1
            return
        self._write(b"".join(found))

    def write_events(self, data: bytes, skipped: int) -> None:
        """Events built elsewhere (the proxy's native relay, rust/record.rs), and the number of
        lines that gave none."""
        self.skipped += skipped
        self.write_lines(data)

    def too_large(self, side: str, length: int, t: float) -> None:
        """An oversized line: no event."""
        self.skipped += 1

    def exit(self, status: int) -> None:
        """The agent's exit: no event."""


def from_recording(
    chunks: Iterable[bytes], out: IO[bytes], start: Optional[float] = None
) -> Dict[str, Union[int, float]]:
    """Write the trace of a recording (its bytes, in pieces) to `out`: `ts` counts from
    `start` (None: the recording's own start, its header's `t`). Returns the counts of
    `records` read, `events` written and `skipped` lines (no event), and the `start`
    used. Raises RecordingError, with its line, on a recording that does not follow the format."""
    writer: Optional[TraceWriter] = None
    records = 0
    written = 0
    for item in read_chunks(chunks):
        if not isinstance(item, Record):
            if writer is None and "acp-fast-recording" in item:
                writer = TraceWriter(out, float(item["t"]) if start is None else start)
            continue
        assert writer is not None  # read_chunks checks the header first
        records += 1
        found = (
            events(item.data, max(item.t - writer.start, 0.0), *route(item.side, item.action)) if item.is_json else []
        )
        if not found:
            writer.skipped += 1
            continue
        out.write(b"".join(found))
        written += len(found)
    return {
        "records": records,
        "events": written,
        "skipped": 0 if writer is None else writer.skipped,
        "start": 0.0 if writer is None else writer.start,
    }


# ---------------------------------------------------------------------------------------------
# Reading: a trace as the records of a recording (`acp-fast validate` and `inspect`)

#: The conductor's `initialize` of a proxy in its chain (its releases' name, its newer sources'):
#: read as the `initialize` it stands for.
PROXY_INITIALIZE = ("proxy/initialize", "_proxy/initialize")
#: How a trace starts: its first event (the conductor writes `type` first).
STARTS = (b'{"type":"request"', b'{"type":"response"', b'{"type":"notification"')


def is_trace(head: bytes) -> bool:
    """Whether `head` (the start of a file is enough) is a trace rather than a recording or a
    plain stream."""
    return head.lstrip(b"\xef\xbb\xbf").startswith(STARTS)


def side_of(sender: str, receiver: str) -> Optional[Tuple[str, Optional[str]]]:
    """The recording's (side, action) of an event from `sender` to `receiver`: the trace is read
    as seen by the two ends, `Client` (the editor) and `Agent`. What an end sends is its side's
    (`replaced` when it goes to a proxy, which sends something else on); what a proxy sends to
    an end is `injected` on behalf of the other end; between two proxies: None (not read)."""
    ends = {CLIENT: "editor", AGENT: "agent"}
    if sender in ends:
        return ends[sender], None if receiver == (AGENT if sender == CLIENT else CLIENT) else "replaced"
    if receiver in ends:
        return ("agent" if receiver == CLIENT else "editor"), "injected"
    return None


_EVENT_MEMBERS = {
    "request": ("id", "method", "params"),
    "notification": ("method", "params"),
    "response": ("id", "payload"),
}


def parse_record(line: bytes, number: int) -> Optional[ParsedRecord]:
    """One event as a recording's record (`acp_fast.recording.ParsedRecord`, payload `frame`):
    the JSON-RPC frame it stands for, rebuilt around the event's own JSON text of the id, method,
    params and payload, and placed in the line so that a position in the params (or payload) is
    the right column of the event's line. None for an event between two proxies. Raises
    `RecordingError` (its `column` set) for a line that is not an event."""
    if line.endswith(b"\r"):
        line = line[:-1]
    value = _load(line)
    kind = value.get("type")
    if kind not in _EVENT_MEMBERS:
        found = _dumps(kind).decode() if "type" in value else "none"
        raise RecordingError(f'expected "type" to be "request", "response" or "notification", found {found}')
    if not _seconds(value.get("ts")) or value["ts"] < 0:
        raise RecordingError('expected "ts" to be a number of seconds (0 or more)')
    sender, receiver = value.get("from"), value.get("to")
    if not isinstance(sender, str) or not isinstance(receiver, str) or sender == receiver:
        raise RecordingError('expected "from" and "to" to name two components')
    missing = [k for k in _EVENT_MEMBERS[kind] if k not in value]
    if kind == "response" and not isinstance(value.get("is_error"), bool):
        missing.append("is_error (true or false)")
    if missing:
        raise RecordingError(f"expected a {kind} event to have {', '.join(missing)}")
    if kind != "response" and not isinstance(value["method"], str):
        raise RecordingError('expected "method" to be a string')
    where = side_of(sender, receiver)
    if where is None:
        return None
    side, action = where
    at = _spans(line, _EVENT, ("id", "method", "params", "payload"))

    def span(key: str) -> Tuple[int, int]:
        return at[key]  # the member is there: the line was read

    if kind == "response":
        ident, body = span("id"), span("payload")
        head = b'{"jsonrpc":"2.0","id":' + line[ident[0] : ident[1]]
        head += b',"error":' if value["is_error"] else b',"result":'
    else:
        method = span("method")
        head = b'{"jsonrpc":"2.0"'
        if kind == "request":
            ident = span("id")
            head += b',"id":' + line[ident[0] : ident[1]]
        head += b',"method":'
        token = line[method[0] : method[1]]
        if value["method"] in PROXY_INITIALIZE:  # the conductor's initialize of a proxy: the client's
            token = b'"initialize"'
        if value["params"] is None:  # a frame without params: placed by its method
            body = method
        else:
            head += token + b',"params":'
            body = span("params")
    frame = head + line[body[0] : body[1]] + b"}"
    record = {"t": value["ts"], "from": side, **({"action": action} if action else {})}
    return ParsedRecord(number, "line", record, side, "frame", frame, max(body[0] - len(head), 0), line)


def parse_lines(
    chunks: Iterable[bytes], max_bytes: int
) -> Iterator[Tuple[int, Union[ParsedRecord, RecordingError, None]]]:
    """`acp_fast.recording.parse_lines` for a trace: each line's number and its record (none
    for an event between two proxies), the `RecordingError` saying why it is not an event, or
    None for a blank line."""
    for line in iter_lines(chunks, max_bytes):
        number = line.number
        if line.data is None:
            yield (
                number,
                RecordingError(f"expected an event of at most {max_bytes} bytes, found {line.length}", 1, number),
            )
        elif not line.data.strip(b" \t\r"):
            yield number, None
        else:
            try:
                record = parse_record(line.data.lstrip(b"\xef\xbb\xbf") if number == 1 else line.data, number)
            except RecordingError as exc:
                exc.line = number
                yield number, exc
            else:
                if record is not None:
                    yield number, record
