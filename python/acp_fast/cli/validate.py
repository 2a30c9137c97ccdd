"""``acp-fast validate FILE|-``: check every line of an ACP stream or of a proxy recording.

Each line goes through the codec (:class:`acp_fast.FrameDecoder` / :func:`acp_fast.decode`), so
JSON and JSON-RPC problems carry the codec's own code, message and byte position. Valid messages
are then checked as ACP messages of the protocol version in force (``--protocol``, else learned
from the ``initialize`` response, else 1): known methods, who may send them, their params and
results (see :mod:`acp_fast.cli._shapes`), the pairing of responses with requests; with ``--schema``,
also against the official JSON schema shipped in the package.

Every problem is printed as ``FILE:LINE:COLUMN: [kind] message``, where LINE and COLUMN are those
of the file read (for a recording: the recording's line, and the column inside it of the embedded
frame's byte). Kinds: ``json`` (-32700), ``jsonrpc`` (-32600), ``acp`` (message shape),
``schema`` (official schema), ``protocol`` (the conversation: responses, directions, versions),
``recording`` (malformed recording records). Exit status: 0 when nothing is wrong, 1 when
something is, 2 for usage errors.

``Validator`` is usable from Python too::

    v = Validator(protocol_version=1)
    v.feed_ndjson([data])        # or v.run(path)
    v.finish()
    v.problems, v.ok
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import acp_fast

from ..recording import RecordingError, parse_lines, record_limit
from . import _shapes
from ._streams import Progress, open_input, read_chunks, sniff, string_offset
from ._usage import Parser, integer

DEFAULT_MAX_FRAME_BYTES = acp_fast.DEFAULT_MAX_FRAME_BYTES
KINDS = ("json", "jsonrpc", "acp", "schema", "protocol", "recording")
_MISSING = object()


class Problem(NamedTuple):
    """One problem: where (1-based line and byte column of the file read), what kind, what."""

    line: int
    column: int
    kind: str
    message: str
    code: Optional[int] = None

    def format(self, name: str) -> str:
        return f"{name}:{self.line}:{self.column}: [{self.kind}] {self.message}"

    def to_json(self) -> Dict[str, Any]:
        return {"line": self.line, "column": self.column, "kind": self.kind, "code": self.code, "message": self.message}


def _id_text(value: Any) -> str:
    return acp_fast.dumps(value).decode("utf-8", "replace")


class Validator:
    """Checks a stream message by message; collects :class:`Problem`s and counts.

    ``on_problem`` (optional) is called with each problem as it is found (the CLI prints them);
    at most ``keep`` problems are kept in :attr:`problems` (``None``: all), all are counted.
    """

    def __init__(
        self,
        *,
        protocol_version: Optional[int] = None,
        schema: bool = False,
        unstable: bool = False,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        keep: Optional[int] = None,
        on_problem: Any = None,
    ):
        if protocol_version not in (None, 1, 2):
            raise ValueError(f"expected protocol_version to be 1, 2 or None, found {protocol_version!r}")
        self.fixed_version = protocol_version
        self.negotiated_version: Optional[int] = None
        self.unstable = unstable
        self.max_frame_bytes = max_frame_bytes
        self.keep = keep
        self.on_problem = on_problem
        self._schemas: Dict[int, _shapes.SchemaChecker] = {}
        if schema:
            for version in (1, 2):
                self._schemas[version] = _shapes.SchemaChecker(version, unstable)
        self.schema = schema
        self.problems: List[Problem] = []
        self.by_kind: Counter[str] = Counter()
        self.problem_count = 0
        self.format = "ndjson"
        self.lines = 0
        self.frames = 0  # lines holding a frame (a message or a batch)
        self.messages = 0  # valid JSON-RPC messages (batch entries counted one by one)
        self.batches = 0
        self.by_direction: Counter[str] = Counter()
        self.recording: Dict[str, Any] = {}
        # pending requests: (sender or None, id key) -> (method, line, sender)
        self._pending: Dict[Tuple[Optional[str], Tuple[str, Any]], Tuple[str, int, Optional[str]]] = {}

    # -- results -----------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The protocol version in force: ``--protocol``, else negotiated, else 1."""
        return self.fixed_version or self.negotiated_version or 1

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    def unanswered(self) -> List[Dict[str, Any]]:
        """Requests still without a response (not a problem: a stream may stop mid-conversation)."""
        return [
            {"id": key[1][1], "method": method, "line": line, "from": sender}
            for key, (method, line, sender) in self._pending.items()
        ]

    def report(self, line: int, column: int, kind: str, message: str, code: Optional[int] = None) -> None:
        problem = Problem(line, max(1, column), kind, message, code)
        self.problem_count += 1
        self.by_kind[kind] += 1
        if self.keep is None or len(self.problems) < self.keep:
            self.problems.append(problem)
        if self.on_problem is not None:
            self.on_problem(problem)

    # -- whole inputs ------------------------------------------------------------------------

    def run(self, chunks: Iterable[bytes], *, input_format: str = "auto") -> None:
        """Validate a whole input given as byte chunks (``input_format``: auto, ndjson, recording)."""
        kind, chunks = sniff(chunks)
        if input_format != "auto":
            kind = input_format
        if kind == "recording":
            self.feed_recording(chunks)
        else:
            self.feed_ndjson(chunks)
        self.finish()

    def feed_ndjson(self, chunks: Iterable[bytes]) -> None:
        """A plain stream: one frame per line, through a :class:`acp_fast.FrameDecoder`."""
        self.format = "ndjson"
        decoder = acp_fast.FrameDecoder(max_frame_bytes=self.max_frame_bytes)
        for chunk in chunks:
            for item in decoder.feed(chunk):
                self._frame(item, item.line or 0, 0, None)
        for item in decoder.finish():
            self._frame(item, item.line or 0, 0, None)
        self.lines = decoder.line

    def feed_recording(self, chunks: Iterable[bytes]) -> None:
        """A proxy recording: validate the records and the frames embedded in them."""
        self.format = "recording"
        rec = self.recording
        rec.update(header=None, footer=None, forwarded=0, not_forwarded=Counter(), crlf=0, too_large=0, no_eol=0)
        footer_line = None
        for number, record in parse_lines(chunks, record_limit(self.max_frame_bytes)):
            self.lines = number
            if record is None:
                self.report(number, 1, "recording", "expected a record, found a blank line")
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
            self._frame(frame, line, record.offset, sender)
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
        self._frame(frame, line, None, sender)

    # -- frames ------------------------------------------------------------------------------

    def _decode_error(self, exc: Any, line: int, base: int) -> None:
        kind = "json" if exc.code == -32700 else "jsonrpc"
        self.report(line, base + (exc.position or 0) + 1, kind, exc.msg, exc.code)

    def _frame(self, item: Any, line: int, base: Optional[int], sender: Optional[str]) -> None:
        """A decoder result: Message, Batch or DecodeError. ``base``: offset of the frame in the
        file's line (None when columns cannot be mapped: they are then 1)."""
        if isinstance(item, acp_fast.DecodeError):
            self._decode_error(item, line, base or 0)
            return
        self.frames += 1
        if isinstance(item, list):
            self._batch(item, line, base, sender)
            return
        self.messages += 1
        self._message(item, line, base, sender)

    def _batch(self, batch: Any, line: int, base: Optional[int], sender: Optional[str]) -> None:
        self.batches += 1
        column = (base or 0) + 1
        if self.version == 1:
            self.report(
                line,
                column,
                "acp",
                "expected one message per line, found a batch array (batches exist in protocol v2 only)",
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
            self._message(entry, line, None if base is None or offset < 0 else base + offset, sender)
        if calls and responses:
            self.report(line, column, "acp", "expected a batch of calls or a batch of responses, found both")

    def _message(self, msg: Any, line: int, base: Optional[int], sender: Optional[str]) -> None:
        raw = msg.raw
        document = msg.to_dict()

        def column(path: Tuple[Any, ...]) -> int:
            if base is None:
                return 1
            return base + _shapes.locate(raw, path) + 1

        if msg.kind in ("request", "notification"):
            self._call(msg, document, line, column, sender)
        else:
            self._response(msg, document, line, column, sender)

    def _call(self, msg: Any, document: Dict[str, Any], line: int, column: Any, sender: Optional[str]) -> None:
        method = msg.method
        version = self.version
        is_request = msg.kind == "request"
        if method.startswith("_"):  # extension method: anything goes
            if is_request:
                self._register(msg, method, line, column, sender)
            return
        proto = _shapes.protocol(version, self.unstable)
        info = proto.get(method)
        if info is None:
            self._unknown_method(method, version, line, column(("method",)))
            if is_request:
                self._register(msg, method, line, column, sender)
            return
        if info.kind != msg.kind:
            if info.kind == "notification":
                text = f'expected "{method}" to be a notification (without "id"), found a request'
            else:
                text = f'expected "{method}" to be a request (with an "id"), found a notification'
            self.report(line, column(("method",)), "acp", text, -32600)
        if sender is not None and info.sender is not None and info.sender != _ROLE[sender]:
            self.report(
                line,
                column(("method",)),
                "protocol",
                f'expected "{method}" to be sent by the {_SIDE[info.sender]}, found it from the {_SIDE[_ROLE[sender]]}',
            )
        params = document.get("params", _MISSING)
        spec = info.params
        shape_version = version
        if method == "initialize":  # checked by the version it asks for (spec digest §9)
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            shape_version = 2 if isinstance(asked, int) and not isinstance(asked, bool) and asked >= 2 else 1
            spec = _shapes.protocol(shape_version, self.unstable).initialize_shapes()[0]
        seen = self._check(spec, params, ("params",), method, line, column)
        if self.schema and info.params_def and params is not _MISSING:
            for issue in self._schemas[shape_version].check(msg.raw, "params"):
                if issue.path not in seen:
                    self.report(line, column(issue.path), "schema", f"{method}: {issue.message}", -32602)
        if is_request:
            self._register(msg, method, line, column, sender)

    def _unknown_method(self, method: str, version: int, line: int, col: int) -> None:
        other = 3 - version
        if _shapes.protocol(other, self.unstable).get(method) is not None:
            text = f'expected a protocol v{version} method, found "{method}" (a protocol v{other} method)'
        elif not self.unstable and _shapes.protocol(version, True).get(method) is not None:
            text = f'expected a stable protocol v{version} method, found "{method}" (unstable; pass --unstable to accept it)'
        else:
            text = f'expected a protocol v{version} method or an extension method starting with "_", found "{method}"'
        self.report(line, col, "acp", text, -32601)

    def _check(
        self, spec: Any, value: Any, path: Tuple[Any, ...], what: str, line: int, column: Any
    ) -> Set[Tuple[Any, ...]]:
        """Report the shape issues of ``value``; returns their paths (the schema check skips
        what is already reported)."""
        if spec is None:
            return set()
        if value is _MISSING:
            if isinstance(spec, (_shapes.Obj, _shapes.Tagged)):
                self.report(
                    line, column(()), "acp", f'{what}: expected "{path[0]}" to be an object, found none', -32602
                )
            return {path}
        issues = _shapes.check(spec, value, path)
        for issue in issues:
            self.report(line, column(issue.path), "acp", f"{what}: {issue.message}", -32602)
        return {issue.path for issue in issues}

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
        self._pending[key] = (method, line, sender)

    def _response(self, msg: Any, document: Dict[str, Any], line: int, column: Any, sender: Optional[str]) -> None:
        key_id = _id_key(msg.id)
        found = None
        if sender is not None:
            requester = "agent" if sender == "editor" else "editor"
            if (requester, key_id) in self._pending:
                found = (requester, key_id)
        else:
            for key in reversed(list(self._pending)):  # the latest request with that id
                if key[1] == key_id:
                    found = key
                    break
        if found is None:
            self.report(
                line,
                column(("id",)),
                "protocol",
                f"expected a response to a pending request, found one for id {_id_text(msg.id)} (no such request)",
            )
            return
        method, request_line, _ = self._pending.pop(found)
        what = f"result of {method} (request on line {request_line})"
        if msg.kind == "error":
            if self.schema:
                for issue in self._schemas[self.version].check(msg.raw, "error"):
                    self.report(line, column(issue.path), "schema", f"error response to {method}: {issue.message}")
            return
        if method.startswith("_"):
            return
        result = document.get("result")
        version = self.version
        info = _shapes.protocol(version, self.unstable).get(method)
        if method == "initialize":
            answered = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(answered, int) and not isinstance(answered, bool):
                version = 1 if answered <= 1 else 2
                info = _shapes.protocol(version, self.unstable).get("initialize")
                self._negotiate(answered, line, column(("result", "protocolVersion")))
        if info is None or info.kind != "request":
            return
        seen = self._check(info.result, result, ("result",), what, line, column)
        if self.schema and info.result_def:
            for issue in self._schemas[version].check(msg.raw, "result", method):
                if issue.path not in seen:
                    self.report(line, column(issue.path), "schema", f"{what}: {issue.message}", -32602)

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
            "JSON-RPC 2.0, ACP message shapes (v1 or v2) and, with --schema, the official ACP schema."
        ),
        epilog="Problems are printed as FILE:LINE:COLUMN: [kind] message. Exit status: 0 valid, 1 problems, 2 usage.",
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
        help="also validate against the official ACP JSON schema (the pure-Python backend needs jsonschema-rs or jsonschema)",
    )
    parser.add_argument(
        "--unstable", action="store_true", help="accept the unstable ACP surface (and use the unstable schema)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output: text (default) or json")
    parser.add_argument(
        "--input",
        choices=("auto", "ndjson", "recording"),
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
        type=integer(0),
        default=200,
        metavar="N",
        help="print at most N problems (all are counted; 0: no limit; default 200)",
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
    if v.schema:
        head += ", schema checked"
    if v.ok:
        return head + ": no problems"
    kinds = ", ".join(f"{kind} {v.by_kind[kind]}" for kind in KINDS if v.by_kind[kind])
    noun = "problem" if v.problem_count == 1 else "problems"
    return head + f": {v.problem_count} {noun} ({kinds})"


def recording_line(v: Validator) -> Optional[str]:
    if v.format != "recording":
        return None
    rec = v.recording
    parts = [f"{v.by_direction['editor']} lines from the editor", f"{v.by_direction['agent']} from the agent"]
    dropped = sum(rec["not_forwarded"].values())
    if dropped:
        detail = ", ".join(f"{n} {action}" for action, n in sorted(rec["not_forwarded"].items()))
        parts.append(f"{dropped} not forwarded ({detail})")
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
        "problemsByKind": {kind: v.by_kind[kind] for kind in KINDS if v.by_kind[kind]},
        "problems": [p.to_json() for p in v.problems],
        "truncated": len(v.problems) < v.problem_count,
        "unanswered": v.unanswered(),
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
            "exitStatus": rec["footer"]["status"] if rec.get("footer") else None,
        }
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help, 2 for usage errors
        return int(exc.code or 0)
    limit = args.max_problems or None
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        try:
            out.reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # pragma: no cover
            pass
    try:
        stream, size, name = open_input(args.file)
    except OSError as exc:
        print(f"acp-fast validate: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
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
            max_frame_bytes=args.max_frame_bytes,
            keep=limit,
            on_problem=show,
        )
    except _shapes.SchemaUnavailable as exc:
        print(f"acp-fast validate: {exc}", file=sys.stderr)
        return 2
    try:
        validator.run(progress.wrap(read_chunks(stream)), input_format=args.input)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        progress.close()
        return 130
    except OSError as exc:
        progress.close()
        print(f"acp-fast validate: cannot read {name}: {exc.strerror or exc}", file=sys.stderr)
        return 2
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
    return 0 if validator.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
