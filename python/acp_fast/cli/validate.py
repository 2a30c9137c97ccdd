"""``acp-fast validate FILE|-``: check every line of an ACP stream or of a proxy recording.

Each line goes through the codec ([`acp_fast.FrameDecoder`][acp_fast.FrameDecoder] / [`acp_fast.decode`][acp_fast.decode]), so
JSON and JSON-RPC problems carry the codec's own code, message and byte position. Valid messages
are then checked by an [`acp_fast.SchemaValidator`][acp_fast.SchemaValidator] conversation of the protocol version in
force (``--protocol``, else learned from the ``initialize`` response, else 1; an ``initialize``
request by the version it asks for): the official JSON schema shipped in the package (compiled
into the Rust core; the pure-Python backend needs jsonschema-rs or jsonschema), plus the protocol
rules the schema cannot express (v2 custom values begin with ``_``; a tool call's first report
SHOULD have a title, a warning; a response answers a request that was made). These are the checks
of ``--strict-schema`` and ``strict=True`` elsewhere; ``--schema`` is accepted and changes nothing.

What remains written here, because the schema cannot say it: who may send a method (a
recording's direction against the schema's ``x-side``, see ``acp_fast.cli._shapes``), one
message per line in v2 and no batch mixing calls and responses, no v1 session update in v2
(the v2 schema accepts any name there, as a custom or future update), terminal output that is
base64 text (the schema names the encoding, ``contentEncoding``, without asserting it), request ids not reused while
pending, the version an ``initialize`` request asks for and the one its response gives (the
schema validator is renewed when it changes), and which request each response answers (for the
context of its problems and the list of unanswered requests). In a recording the conversation is
the one the other side received: a request a middleware replaced gives way to its ``injected``
replacement, one the proxy ``answered`` is not pending, and a response that was not delivered
answers nothing (it is checked on its own).

Every problem is printed as ``FILE:LINE:COLUMN: [kind] message`` (``[kind] warning: message``
for a warning), where LINE and COLUMN are those of the file read (for a recording: the
recording's line, and the column inside it of the embedded frame's byte; for a problem of the
schema validator, of the value its path names). Kinds: ``json`` (-32700), ``jsonrpc`` (-32600),
``schema`` (the official schema), ``acp`` (the rules of one message the schema cannot express),
``protocol`` (the conversation: responses, directions, versions, tool call titles),
``recording`` (malformed recording records). Exit status: 0 when nothing is wrong (warnings
allowed), 1 when something is, 2 for usage errors.

``Validator`` is usable from Python too:

    v = Validator(protocol_version=1)
    v.feed_ndjson([data])        # or v.run(path)
    v.finish()
    v.problems, v.ok
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import acp_fast

from ..recording import DELIVERED, RecordingError, parse_lines, record_limit
from ..trace import parse_lines as trace_lines
from ._shapes import protocol
from ._streams import Progress, open_input, read_chunks, sniff, string_offset
from ._usage import Parser, bound, fail, integer

DEFAULT_MAX_FRAME_BYTES = acp_fast.DEFAULT_MAX_FRAME_BYTES
KINDS = ("json", "jsonrpc", "acp", "schema", "protocol", "recording")


def locate(raw: bytes, path: Sequence[Union[str, int]]) -> int:
    """Byte offset of the value at ``path`` in the valid JSON text ``raw``, found by the backend's
    scanner. When a member on the way is missing, the offset of the object that lacks it (its
    ``{``); for a duplicated key, the last one (its value is the one that counts). A path that
    cannot be followed stops at the deepest value found."""
    i = len(raw) - len(raw.lstrip(b" \t\r\n"))
    for part in path:
        c = raw[i : i + 1]
        if isinstance(part, str) and c == b"{":
            found = acp_fast._find_member(raw, i, part)
            if found is None:
                return i
            i = found[1]
        elif isinstance(part, int) and c == b"[":
            items = acp_fast._array_items(raw, i) if part >= 0 else []
            if not 0 <= part < len(items):
                return i
            i = items[part][1]
        else:
            return i
    return i


class Problem(NamedTuple):
    """One problem: where (1-based line and byte column of the file read), what kind, what."""

    line: int
    column: int
    kind: str
    message: str
    code: Optional[int] = None
    severity: str = "error"  # or "warning": reported, but the input is still valid

    def format(self, name: str) -> str:
        warning = "warning: " if self.severity == "warning" else ""
        return f"{name}:{self.line}:{self.column}: [{self.kind}] {warning}{self.message}"

    def to_json(self) -> Dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }


def _id_text(value: Any) -> str:
    return acp_fast.dumps(value).decode("utf-8", "replace")


class Validator:
    """Checks a stream message by message; collects ``Problem``s and counts.

    ``on_problem`` (optional) is called with each problem as it is found (the CLI prints them);
    at most ``keep`` problems are kept in [`problems`][acp_fast.problems] (``None``: all), all are counted.
    """

    def __init__(
        self,
        *,
        protocol_version: Optional[int] = None,
        schema: bool = False,
        unstable: bool = False,
        draft: Optional[str] = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        keep: Optional[int] = None,
        on_problem: Any = None,
    ):
        if protocol_version not in (None, 1, 2):
            raise ValueError(f"expected protocol_version to be 1, 2 or None, found {protocol_version!r}")
        self.fixed_version = protocol_version
        self.negotiated_version: Optional[int] = None
        # The version an `initialize` request asked for, and its sender, until the answer: what
        # that sender speaks meanwhile (requests pipelined behind `initialize`).
        self._asked: Optional[Tuple[int, Optional[str]]] = None
        self.unstable = unstable
        self.draft = draft
        self.max_frame_bytes = max_frame_bytes
        self.keep = keep
        self.on_problem = on_problem
        # The checks of every message (ImportError: the pure-Python backend without an engine).
        self._checker = acp_fast.SchemaValidator(protocol_version=self.version, unstable=unstable, draft=draft)
        self._checker_version = self.version
        self.schema = True  # always: ``schema`` is accepted for compatibility (``--schema``)
        self.problems: List[Problem] = []
        self.by_kind: Counter[str] = Counter()
        self.problem_count = 0  # errors and warnings
        self.warning_count = 0
        self.format = "ndjson"
        self.lines = 0
        self.frames = 0  # lines holding a frame (a message or a batch)
        self.messages = 0  # valid JSON-RPC messages (batch entries counted one by one)
        self.batches = 0
        self.by_direction: Counter[str] = Counter()
        self.responses = 0  # responses and error replies, and how many answered a request seen
        self.paired = 0
        self.unpaired = 0  # responses reported as answering no request (unexpected-response)
        self.recording: Dict[str, Any] = {}
        # pending requests: (sender or None, id key) -> (method, line, sender)
        self._pending: Dict[Tuple[Optional[str], Tuple[str, Any]], Tuple[str, int, Optional[str]]] = {}
        # the same requests as (message, sender), told again to a new schema validator
        self._pending_messages: Dict[Tuple[Optional[str], Tuple[str, Any]], Tuple[Any, Optional[str]]] = {}

    # -- results -----------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The protocol version in force: ``--protocol``, else negotiated, else 1."""
        return self.fixed_version or self.negotiated_version or 1

    @property
    def ok(self) -> bool:
        """No problem of severity ``error`` (warnings are reported, but do not fail the input)."""
        return self.problem_count == self.warning_count

    def hint(self, name: str) -> Optional[str]:
        """A line that explains the problems, or None: a stream none of whose responses answers a
        request it holds looks like one direction of a conversation (an agent's output alone)."""
        if self.format == "recording" or not self.unpaired or self.paired:
            return None
        return (
            f"hint: none of the {_plural(self.responses, 'response')} in {name} answers a request it holds: "
            "it looks like one direction of a conversation (one side's output alone); validate a "
            "recording of both directions instead (acp-fast proxy --record FILE)"
        )

    def unanswered(self) -> List[Dict[str, Any]]:
        """Requests still without a response (not a problem: a stream may stop mid-conversation)."""
        return [
            {"id": key[1][1], "method": method, "line": line, "from": sender}
            for key, (method, line, sender) in self._pending.items()
        ]

    def report(
        self, line: int, column: int, kind: str, message: str, code: Optional[int] = None, severity: str = "error"
    ) -> None:
        problem = Problem(line, max(1, column), kind, message, code, severity)
        self.problem_count += 1
        if severity == "warning":
            self.warning_count += 1
        self.by_kind[kind] += 1
        if self.keep is None or len(self.problems) < self.keep:
            self.problems.append(problem)
        if self.on_problem is not None:
            self.on_problem(problem)

    # -- whole inputs ------------------------------------------------------------------------

    def run(self, chunks: Iterable[bytes], *, input_format: str = "auto") -> None:
        """Validate a whole input given as byte chunks (``input_format``: auto, ndjson, recording, trace)."""
        kind, chunks = sniff(chunks)
        if input_format != "auto":
            kind = input_format
        if kind == "recording":
            self.feed_recording(chunks)
        elif kind == "trace":
            self.feed_recording(chunks, trace=True)
        else:
            self.feed_ndjson(chunks)
        self.finish()

    def feed_ndjson(self, chunks: Iterable[bytes]) -> None:
        """A plain stream: one frame per line, through a [`acp_fast.FrameDecoder`][acp_fast.FrameDecoder]."""
        self.format = "ndjson"
        decoder = acp_fast.FrameDecoder(max_frame_bytes=self.max_frame_bytes)
        for chunk in chunks:
            for item in decoder.feed(chunk):
                self._frame(item, item.line or 0, 0, None)
        for item in decoder.finish():
            self._frame(item, item.line or 0, 0, None)
        self.lines = decoder.line

    def feed_recording(self, chunks: Iterable[bytes], trace: bool = False) -> None:
        """A proxy recording: validate the records and the frames embedded in them (``trace``: a
        trace, read as the records of a recording by ``acp_fast.trace.parse_lines``)."""
        self.format = "trace" if trace else "recording"
        rec = self.recording
        rec.update(
            header=None, footer=None, forwarded=0, not_forwarded=Counter(), crlf=0, too_large=0, withheld=0, no_eol=0
        )
        footer_line = None
        parse = trace_lines if trace else parse_lines
        for number, record in parse(chunks, record_limit(self.max_frame_bytes)):
            self.lines = number
            if record is None:
                self.report(
                    number, 1, "recording", f"expected {'an event' if trace else 'a record'}, found a blank line"
                )
                continue
            if isinstance(record, RecordingError):
                self.report(number, record.column, "recording", record.message)
                continue
            if record.kind == "header":
                rec["header"] = {k: record.value.get(k) for k in ("t", "argv", "version")}
                continue
            if footer_line is not None:
                self.report(number, 1, "recording", f"expected no record after the exit footer (line {footer_line})")
            if record.kind == "footer":
                footer_line = number
                rec["footer"] = {"status": record.value.get("status"), "line": number}
                continue
            self._record(record)

    def finish(self) -> None:
        """End of input (nothing to check yet: unanswered requests are listed, not problems)."""

    # -- records -----------------------------------------------------------------------------

    def _record(self, record: Any) -> None:
        rec = self.recording
        value = record.value
        self.by_direction[record.direction] += 1
        if record.forwarded:
            rec["forwarded"] += 1
        else:
            rec["not_forwarded"][record.action] += 1
        if value.get("crlf"):
            rec["crlf"] += 1
        if value.get("eol") is False:
            rec["no_eol"] += 1
        line = record.line
        sender = record.direction
        if "withheld" in value:  # kept out of the recording by a middleware, on purpose: nothing to check
            rec["withheld"] += 1
            return
        if record.payload is None:
            rec["too_large"] += 1
            self.report(
                line,
                1,
                "json",
                f"expected a frame within the proxy's limit, found a line of {value['too_large']} bytes (not recorded)",
                -32700,
            )
            return
        if record.payload == "frame":
            try:
                frame = acp_fast.decode(record.data)
            except acp_fast.DecodeError as exc:
                self._decode_error(exc, line, record.offset)
                return
            self._frame(frame, line, record.offset, sender, record.action)
            return
        # a line that was not JSON: the codec says why
        try:
            frame = acp_fast.decode(record.data)
        except acp_fast.DecodeError as exc:
            position = exc.position or 0
            if record.payload == "text":
                column = record.offset + string_offset(record.raw, position) + 1
                where = ""
            else:
                column = record.offset + 1
                where = f" (byte {position} of the recorded line)"
            code = exc.code
            self.report(line, column, "json" if code == -32700 else "jsonrpc", exc.msg + where, code)
            return
        self.report(
            line,
            record.offset + 1,
            "recording",
            f'expected "frame" for a line that is valid JSON, found "{record.payload}"',
        )
        self._frame(frame, line, None, sender, record.action)

    # -- frames ------------------------------------------------------------------------------

    def _decode_error(self, exc: Any, line: int, base: int) -> None:
        kind = "json" if exc.code == -32700 else "jsonrpc"
        self.report(line, base + (exc.position or 0) + 1, kind, exc.msg, exc.code)

    def _frame(
        self, item: Any, line: int, base: Optional[int], sender: Optional[str], action: Optional[str] = None
    ) -> None:
        """A decoder result: Message, Batch or DecodeError. ``base``: offset of the frame in the
        file's line (None when columns cannot be mapped: they are then 1); ``action``: the
        recording's (None: forwarded as it came, or not a recording)."""
        if isinstance(item, acp_fast.DecodeError):
            self._decode_error(item, line, base or 0)
            return
        self.frames += 1
        if isinstance(item, list):
            self._batch(item, line, base, sender, action)
            return
        self.messages += 1
        self._message(item, line, base, sender, action)

    def _batch(self, batch: Any, line: int, base: Optional[int], sender: Optional[str], action: Optional[str]) -> None:
        self.batches += 1
        column = (base or 0) + 1
        if self.version >= 2:
            self.report(
                line,
                column,
                "acp",
                "expected one message per line, found a batch array (batches exist in protocol v1 only)",
            )
        raw = bytes(batch.raw) if getattr(batch, "raw", None) is not None else b""
        calls = responses = 0
        pos = 1
        for entry in batch:
            if isinstance(entry, acp_fast.DecodeError):
                self._decode_error(entry, line, base or 0)
                continue
            self.messages += 1
            offset = raw.find(entry.raw, pos) if raw else -1
            if offset >= 0:
                pos = offset + len(entry.raw)
            if entry.kind in ("request", "notification"):
                calls += 1
            else:
                responses += 1
            self._message(entry, line, None if base is None or offset < 0 else base + offset, sender, action)
        if calls and responses:
            self.report(line, column, "acp", "expected a batch of calls or a batch of responses, found both")

    def _message(
        self, msg: Any, line: int, base: Optional[int], sender: Optional[str], action: Optional[str] = None
    ) -> None:
        """One message (alone or in a batch): the schema validator's verdict, the direction of a
        recording's calls, the pairing of responses with requests, the negotiated version.

        The conversation follows what the other side received (a recording's ``action``): a
        request a middleware replaced (its replacements follow as ``injected`` records) or that
        the proxy answered itself is not pending; a response that did not reach the other side
        (dropped, replaced, diverted) answers nothing and is checked on its own. A request that
        was dropped stays pending: its sender still waits, and a middleware may answer it."""

        def column(path: Tuple[Any, ...]) -> int:
            if base is None:
                return 1
            return base + locate(msg.raw, path) + 1

        kind = msg.kind
        if kind in ("request", "notification"):
            method = msg.method
            version = self._sender_version(sender)
            if method == "initialize" and self.fixed_version is None:
                version = _asked_version(msg)  # checked by the version it asks for (spec digest §9)
                self._asked = (version, sender)
            self._direction(method, version, sender, line, column)
            problems = self._validator(version).validate(msg, sender=sender)
            if problems:
                self._report_all(problems, method, f"{method}", version, line, column)
            if method == "session/update" and version >= 2 and msg.update_kind in _UPDATE_RULE_KINDS:
                self._update_rules(msg, line, column)
            if kind == "request" and action not in _NOT_PENDING:
                self._register(msg, method, line, column, sender)
            return
        found = self._find(msg.id, sender)
        if msg.id is not None or kind != "error":  # an error reply with id null answers no request
            self.responses += 1
            self.paired += found is not None
        if action not in DELIVERED:
            self._undelivered_response(msg, found, line, column, sender)
            return
        method = request_line = None
        version = self.version
        if found is not None:
            method, request_line, _ = self._pending[found]
            if method == "initialize" and kind == "response":
                answered = _answered_version(msg)
                if answered is not None:
                    self._negotiate(answered, line, column(("result", "protocolVersion")))
                    version = self.version
        problems = self._validator(version).validate(msg, sender=sender)
        if found is not None:
            del self._pending[found]
            del self._pending_messages[found]
        if problems:
            self._report_all(problems, None, _answering(msg, method, request_line), version, line, column)

    def _undelivered_response(self, msg: Any, found: Any, line: int, column: Any, sender: Optional[str]) -> None:
        """A recording's response that did not reach the other side: checked by a schema
        validator of its own (told the request it answers, when that is pending), so that the
        conversation's pending requests stay as the other side knows them."""
        version = self.version
        checker = acp_fast.SchemaValidator(protocol_version=version, unstable=self.unstable, draft=self.draft)
        method = request_line = None
        if found is not None:
            method, request_line, _ = self._pending[found]
            request, request_sender = self._pending_messages[found]
            checker.validate(request, sender=request_sender)
        problems = [p for p in checker.validate(msg, sender=sender) if p.rule != "unexpected-response"]
        if problems:
            self._report_all(problems, None, _answering(msg, method, request_line), version, line, column)

    def _sender_version(self, sender: Optional[str]) -> int:
        """The version ``sender`` has in force: once it asked for one in ``initialize`` and until
        the answer, that one (a client may send ``session/new`` before the answer arrives); else
        ``version``."""
        asked = self._asked
        if asked is not None and self.negotiated_version is None and (asked[1] is None or asked[1] == sender):
            return asked[0]
        return self.version

    def _validator(self, version: int) -> Any:
        """The schema validator of ``version``; on a change of version, a new one that knows the
        requests still pending (their problems were reported already)."""
        if version != self._checker_version:
            checker = acp_fast.SchemaValidator(protocol_version=version, unstable=self.unstable, draft=self.draft)
            for request, sender in self._pending_messages.values():
                checker.validate(request, sender=sender)
            self._checker = checker
            self._checker_version = version
        return self._checker

    def _report_all(
        self, problems: List[Any], method: Optional[str], what: str, version: int, line: int, column: Any
    ) -> None:
        """Report the schema validator's problems of one message (``what`` prefixes those inside
        its params, result or error). A warning at a value the schema already finds wrong (a
        v1 tool call without its required title) is not repeated."""
        errors = {p.location for p in problems if p.severity == "error"}
        for p in problems:
            location = p.location
            if p.severity != "error" and location in errors:
                continue
            rule = p.rule
            message = p.message
            code: Optional[int] = -32602
            if rule == "schema":
                kind = "schema"
                if location == ("method",):
                    code = -32601
                    if method is not None:
                        message += self._method_hint(method, version)
                elif location == ("id",):
                    code = -32600
            elif rule == "custom-value-prefix":
                kind = "acp"
            else:  # unexpected-response, tool-call-title: the conversation
                kind = "protocol"
                code = None
                self.unpaired += rule == "unexpected-response"
            if what and location[:1] in (("params",), ("result",), ("error",)):
                message = f"{what}: {message}"
            self.report(line, column(location), kind, message, code, p.severity)

    def _update_rules(self, msg: Any, line: int, column: Any) -> None:
        """The v2 session updates the schema accepts (an open enumeration: "custom or future"
        values) but the protocol does not: the v1 updates that v2 replaced; and terminal output
        that is not base64 text (the schema names the encoding, ``contentEncoding``, without
        asserting it; the state engine decodes it)."""
        params = msg.params
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict):
            return
        kind = update.get("sessionUpdate")
        replaced = _V1_UPDATES.get(kind) if isinstance(kind, str) else None
        if replaced is not None:
            message = (
                f'session/update: expected "params.update.sessionUpdate" to be a protocol v2 session update, '
                f'found string "{kind}" (a protocol v1 update; {replaced})'
            )
            self.report(line, column(("params", "update", "sessionUpdate")), "acp", message, -32602)
            return
        if kind == "terminal_output_chunk":
            path: Tuple[Any, ...] = ("params", "update", "data")
            value = update.get("data")
        elif kind == "terminal_update" and isinstance(update.get("output"), dict):
            path = ("params", "update", "output", "data")
            value = update["output"].get("data")
        else:
            return
        if not isinstance(value, str) or _is_base64(value):  # not a string: the schema's to report
            return
        text = acp_fast.dumps(value).decode("utf-8", "replace")
        found = f"string {text}" if len(text.encode("utf-8", "replace")) <= 32 else "string"
        where = ".".join(str(part) for part in path)
        message = f'session/update: expected "{where}" to be base64 text, found {found}'
        self.report(line, column(path), "acp", message, -32602)

    def _method_hint(self, method: str, version: int) -> str:
        """Why a method is unknown, when the method tables know better."""
        other = 3 - version
        if protocol(other, self.unstable).get(method) is not None:
            return f" (a protocol v{other} method)"
        if not self.unstable and protocol(version, True).get(method) is not None:
            return " (unstable; pass --unstable to accept it)"
        return ""

    def _direction(self, method: str, version: int, sender: Optional[str], line: int, column: Any) -> None:
        """A recording's call sent by the side the schema says sends it (``x-side``)."""
        if sender is None or method.startswith("_"):
            return
        info = protocol(version, self.unstable).get(method)
        if info is not None and info.sender is not None and info.sender != _ROLE[sender]:
            self.report(
                line,
                column(("method",)),
                "protocol",
                f'expected "{method}" to be sent by the {_SIDE[info.sender]}, found it from the {_SIDE[_ROLE[sender]]}',
            )

    def _register(self, msg: Any, method: str, line: int, column: Any, sender: Optional[str]) -> None:
        key = (sender, _id_key(msg.id))
        previous = self._pending.get(key)
        if previous is not None:
            self.report(
                line,
                column(("id",)),
                "protocol",
                f"expected a request id not already pending, found id {_id_text(msg.id)} "
                f'(still pending: "{previous[0]}" from line {previous[1]})',
            )
            del self._pending[key]
            del self._pending_messages[key]
        self._pending[key] = (method, line, sender)
        self._pending_messages[key] = (msg, sender)

    def _find(self, request_id: Any, sender: Optional[str]) -> Optional[Tuple[Optional[str], Tuple[str, Any]]]:
        """The pending request a response with ``request_id`` from ``sender`` answers."""
        key_id = _id_key(request_id)
        if sender is not None:
            requester = "agent" if sender == "editor" else "editor"
            return (requester, key_id) if (requester, key_id) in self._pending else None
        if (None, key_id) in self._pending:
            return (None, key_id)
        return None

    def _negotiate(self, answered: int, line: int, col: int) -> None:
        learned = 1 if answered <= 1 else 2
        if self.fixed_version is not None and learned != self.fixed_version:
            self.report(
                line,
                col,
                "protocol",
                f"expected protocol version {self.fixed_version} (--protocol), found {answered} in the initialize response",
            )
            return
        self.negotiated_version = learned


#: Actions of a recording's requests that are not pending on the other side: a middleware put
#: others in their place, or the proxy answered them itself.
_NOT_PENDING = ("replaced", "answered")


def _answering(msg: Any, method: Optional[str], request_line: Optional[int]) -> str:
    """What a response's problems inside its result or error are about."""
    if method is None:
        return ""
    answer = "result of" if msg.kind == "response" else "error response to"
    return f"{answer} {method} (request on line {request_line})"


#: The protocol v1 session updates that v2 replaced, and by what.
_V1_UPDATES = {
    "tool_call": "v2 creates tool calls with tool_call_update",
    "plan": "v2 uses plan_update",
    "current_mode_update": "v2 uses config options",
}
#: The v2 session updates ``_update_rules`` looks at.
_UPDATE_RULE_KINDS = frozenset(["tool_call", "plan", "current_mode_update", "terminal_output_chunk", "terminal_update"])
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")


def _is_base64(text: str) -> bool:
    """RFC 4648 base64 text, standard alphabet, padded (as the state engine reads it)."""
    return len(text) % 4 == 0 and _BASE64.match(text) is not None


def _asked_version(msg: Any) -> int:
    """The protocol version an ``initialize`` request asks for (1 when it names none)."""
    params = msg.params
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return 2 if isinstance(asked, int) and not isinstance(asked, bool) and asked >= 2 else 1


def _answered_version(msg: Any) -> Optional[int]:
    """The protocol version of an ``initialize`` response, when it names one."""
    result = msg.result
    answered = result.get("protocolVersion") if isinstance(result, dict) else None
    return answered if isinstance(answered, int) and not isinstance(answered, bool) else None


_ROLE = {"editor": "client", "agent": "agent"}
_SIDE = {"client": "client (editor)", "agent": "agent"}


def _id_key(value: Any) -> Tuple[str, Any]:
    """Ids are equal when they are the same JSON value: ``1`` and ``"1"`` differ."""
    return (type(value).__name__, value)


# ---------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="acp-fast validate",
        description=(
            "Check every line of an ACP NDJSON stream or of an `acp-fast proxy` recording: JSON, "
            "JSON-RPC 2.0, the official ACP schema (v1 or v2) and the protocol rules it cannot express."
        ),
        epilog=(
            "Problems are printed as FILE:LINE:COLUMN: [kind] message ([kind] warning: message for a warning). "
            "Exit status: 0 valid (warnings allowed), 1 problems, 2 usage."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the stream or recording to check; - reads stdin")
    parser.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        help="protocol version to check against (default: learned from the initialize response, else 1)",
    )
    parser.add_argument(
        "--schema",
        action="store_true",
        help="accepted for compatibility, changes nothing: the official schema is always checked "
        "(the pure-Python backend needs jsonschema-rs or jsonschema)",
    )
    parser.add_argument(
        "--unstable", action="store_true", help="accept the unstable ACP surface (and use the unstable schema)"
    )
    parser.add_argument(
        "--draft",
        choices=acp_fast.SCHEMA_DRAFTS,
        default=None,
        help="the ACP v2 draft to check v2 against (default: latest; alpha.5 is the draft of the Python SDK 1.0.0rc3)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output: text (default) or json")
    parser.add_argument(
        "--input",
        choices=("auto", "ndjson", "recording", "trace"),
        default="auto",
        help="what FILE holds (default: auto, a recording starts with its header line)",
    )
    parser.add_argument(
        "--max-frame-bytes",
        type=integer(1, acp_fast.MAX_FRAME_BYTES),
        default=DEFAULT_MAX_FRAME_BYTES,
        metavar="N",
        help="longest line accepted as a frame (default 64 MiB)",
    )
    parser.add_argument(
        "--max-problems",
        type=bound(0, zero_was_none="acp-fast validate: --max-problems"),
        default=200,
        metavar="N",
        help="print at most N problems (all are counted; default 200; none: all)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="show progress on stderr"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    return parser


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_line(name: str, v: Validator) -> str:
    parts = [_plural(v.lines, "line"), _plural(v.frames, "frame")]
    if v.batches:
        parts.append(f"{v.batches} batch" + ("" if v.batches == 1 else "es"))
    head = f"{name}: {v.format}, " + ", ".join(parts) + f", protocol v{v.version}"
    if v.fixed_version is None:
        head += " (negotiated)" if v.negotiated_version else " (default)"
    if v.problem_count == 0:
        return head + ": no problems"
    kinds = ", ".join(f"{kind} {v.by_kind[kind]}" for kind in KINDS if v.by_kind[kind])
    if v.warning_count:
        kinds += "; " + _plural(v.warning_count, "warning")
    noun = "problem" if v.problem_count == 1 else "problems"
    return head + f": {v.problem_count} {noun} ({kinds})"


def recording_line(v: Validator) -> Optional[str]:
    if v.format == "trace":
        return f"trace: {v.by_direction['editor']} messages from the editor, {v.by_direction['agent']} from the agent"
    if v.format != "recording":
        return None
    rec = v.recording
    parts = [f"{v.by_direction['editor']} lines from the editor", f"{v.by_direction['agent']} from the agent"]
    dropped = sum(rec["not_forwarded"].values())
    if dropped:
        detail = ", ".join(f"{n} {action}" for action, n in sorted(rec["not_forwarded"].items()))
        parts.append(f"{dropped} not forwarded ({detail})")
    if rec["withheld"]:
        parts.append(f"{rec['withheld']} withheld (recorded without their bytes)")
    if rec["crlf"]:
        parts.append(f"{rec['crlf']} with CRLF")
    footer = rec.get("footer")
    parts.append(f"agent exit status {footer['status']}" if footer else "no exit footer")
    return "recording: " + ", ".join(parts)


def to_json(name: str, v: Validator) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "file": name,
        "format": v.format,
        "ok": v.ok,
        "lines": v.lines,
        "frames": v.frames,
        "messages": v.messages,
        "batches": v.batches,
        "protocolVersion": v.version,
        "negotiatedVersion": v.negotiated_version,
        "schema": v.schema,
        "problemCount": v.problem_count,
        "warningCount": v.warning_count,
        "problemsByKind": {kind: v.by_kind[kind] for kind in KINDS if v.by_kind[kind]},
        "problems": [p.to_json() for p in v.problems],
        "truncated": len(v.problems) < v.problem_count,
        "unanswered": v.unanswered(),
        "hint": v.hint(name),
    }
    if v.format == "recording":
        rec = v.recording
        out["recording"] = {
            "header": rec.get("header"),
            "fromEditor": v.by_direction["editor"],
            "fromAgent": v.by_direction["agent"],
            "notForwarded": dict(rec["not_forwarded"]),
            "crlf": rec["crlf"],
            "tooLarge": rec["too_large"],
            "withheld": rec["withheld"],
            "exitStatus": rec["footer"]["status"] if rec.get("footer") else None,
        }
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help, 2 for usage errors
        return int(exc.code or 0)
    limit = args.max_problems
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        try:
            out.reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # pragma: no cover
            pass
    try:
        stream, size, name = open_input(args.file)
    except OSError as exc:
        return fail("acp-fast validate", f"cannot read {args.file}: {exc.strerror or exc}")
    printed = [0]

    def show(problem: Problem) -> None:
        if args.format == "text" and not args.quiet and (limit is None or printed[0] < limit):
            progress.close()
            out.write(problem.format(name) + "\n")
            printed[0] += 1

    progress = Progress(f"validate {name}", size, enabled=Progress.wanted(args.progress))
    try:
        validator = Validator(
            protocol_version=args.protocol,
            schema=args.schema,
            unstable=args.unstable,
            draft=args.draft,
            max_frame_bytes=args.max_frame_bytes,
            keep=limit,
            on_problem=show,
        )
    except ImportError as exc:  # the pure-Python backend without jsonschema-rs or jsonschema
        return fail("acp-fast validate", str(exc))
    try:
        validator.run(progress.wrap(read_chunks(stream)), input_format=args.input)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        progress.close()
        return 130
    except OSError as exc:
        progress.close()
        return fail("acp-fast validate", f"cannot read {name}: {exc.strerror or exc}")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    progress.close()
    if args.format == "json":
        out.write(acp_fast.dumps(to_json(name, validator)).decode("utf-8") + "\n")
    else:
        if not args.quiet and limit is not None and validator.problem_count > printed[0]:
            out.write(f"... {validator.problem_count - printed[0]} more problems not shown (--max-problems)\n")
        rec = recording_line(validator)
        if rec:
            out.write(rec + "\n")
        out.write(summary_line(name, validator) + "\n")
        hint = validator.hint(name)
        if hint:
            out.write(hint + "\n")
    return 0 if validator.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
