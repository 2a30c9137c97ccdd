"""Recordings of ACP traffic, as written by ``acp-fast proxy --record FILE``.

A recording is NDJSON, one record per line (docs/CLI.md, "Recording format"):

* a header: ``{"acp-fast-recording":1,"t":<unix seconds>,"argv":[...],"version":"..."}``;
* one record per line seen on either side, in the order the proxy read them:
  ``{"t":<unix seconds>,"from":"editor"|"agent",<payload>,<flags>}``, where the payload is
  ``"frame":<the line, embedded verbatim>`` (the line is valid JSON), ``"text":"..."`` (valid
  UTF-8 but not JSON) or ``"base64":"..."`` (not UTF-8), and the flags, present only when not
  the default, are ``"crlf":true`` (the line ended in ``\\r\\n``), ``"eol":false`` (a last line
  without a newline), ``"action":"diverted"|"dropped"|"answered"`` (not forwarded) and
  ``"too_large":<bytes>`` (a line over the frame limit: no payload, never forwarded);
* a footer: ``{"t":<unix seconds>,"event":"exit","status":<int>}``.

Because a valid frame is embedded byte for byte, :func:`extract` gives back exactly the bytes
one side sent (``"too_large"`` lines excepted: they are not kept).
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import IO, Any, Dict, Iterator, List, Optional, Sequence, Union

import orjson

from .cli._streams import DIRECTIONS, RecordError, parse_header, parse_record

__all__ = ["FORMAT_VERSION", "Record", "RecordingError", "RecordWriter", "read", "extract", "is_recording"]

FORMAT_VERSION = 1
_HEADER_KEY = b'{"acp-fast-recording":'

SIDES = DIRECTIONS  # who sent a line: "editor" or "agent"


class RecordingError(ValueError):
    """A recording that does not follow the format; says which line and what was expected."""


@dataclass(frozen=True)
class Record:
    """One line seen by the proxy. ``data`` is the line's bytes without its line ending (empty
    for a ``too_large`` record)."""

    t: float
    side: str  # "editor" or "agent"
    data: bytes
    is_json: bool
    crlf: bool = False
    eol: bool = True
    action: Optional[str] = None  # None (forwarded), "diverted", "dropped" or "answered"
    too_large: Optional[int] = None
    line: int = 0  # the record's line number in the recording

    @property
    def source(self) -> str:
        """The state engine's ``source`` for this record: ``"client"`` or ``"agent"``."""
        return "client" if self.side == "editor" else "agent"

    @property
    def wire(self) -> bytes:
        """The bytes as they were on the wire (line ending included)."""
        if self.too_large is not None:
            return b""
        end = (b"\r\n" if self.crlf else b"\n") if self.eol else b""
        return self.data + end


class RecordWriter:
    """Writes a recording. Not thread-safe by itself: the proxy serialises calls."""

    def __init__(self, out: IO[bytes], argv: Sequence[str], version: str) -> None:
        self._out = out
        header = {"acp-fast-recording": FORMAT_VERSION, "t": round(time.time(), 6), "argv": list(argv), "version": version}
        out.write(orjson.dumps(header) + b"\n")

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
    ) -> None:
        """Record one line (``data`` without its line ending). ``is_json``: the line is one valid
        JSON document, so it can be embedded verbatim."""
        parts = [b'{"t":', b"%.6f" % t, b',"from":"', side.encode(), b'",']
        if is_json:
            parts += [b'"frame":', data]
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                parts += [b'"base64":"', base64.b64encode(data), b'"']
            else:
                parts += [b'"text":', orjson.dumps(text)]
        if crlf:
            parts.append(b',"crlf":true')
        if not eol:
            parts.append(b',"eol":false')
        if action is not None:
            parts += [b',"action":"', action.encode(), b'"']
        parts.append(b"}\n")
        self._out.write(b"".join(parts))

    def too_large(self, side: str, length: int, t: float) -> None:
        self._out.write(b'{"t":%.6f,"from":"%s","too_large":%d}\n' % (t, side.encode(), length))

    def exit(self, status: int) -> None:
        self._out.write(orjson.dumps({"t": round(time.time(), 6), "event": "exit", "status": status}) + b"\n")

    def flush(self) -> None:
        self._out.flush()


def is_recording(data: bytes) -> bool:
    """Whether ``data`` (the start of a file is enough) is a recording rather than a plain stream."""
    return data.lstrip(b" \t\r\n").startswith(_HEADER_KEY)


def read(data: Union[bytes, IO[bytes]]) -> Iterator[Union[Record, Dict[str, Any]]]:
    """The records of a recording, in order: a ``Record`` per line seen, and the header and
    footer as dicts. Raises :class:`RecordingError` naming the line and column of a malformed
    record (the checks are those of ``acp-fast validate``, which reports every such line)."""
    lines = data.splitlines() if isinstance(data, (bytes, bytearray)) else (line.rstrip(b"\r\n") for line in data)
    number = 0
    for raw in lines:
        number += 1
        if number > 1 and not raw.strip():
            continue
        try:
            r = parse_header(raw, number) if number == 1 else parse_record(raw, number)
        except RecordError as e:
            raise RecordingError(f"line {number} column {e.column}: {e.message}") from None
        if r.kind != "line":
            yield r.value
            continue
        v = r.value
        flags = dict(crlf=v.get("crlf", False), eol=v.get("eol", True), action=v.get("action"), line=number)
        if r.payload is None:
            yield Record(float(v["t"]), r.direction, b"", False, too_large=v["too_large"], **flags)  # type: ignore[arg-type]
        else:
            yield Record(float(v["t"]), r.direction, r.data, r.payload == "frame", **flags)  # type: ignore[arg-type]


def extract(data: Union[bytes, IO[bytes]], side: str) -> bytes:
    """The bytes ``side`` (``"editor"`` or ``"agent"``) sent, as they were on the wire."""
    if side not in SIDES:
        raise ValueError(f"side must be 'editor' or 'agent', found {side!r}")
    out: List[bytes] = []
    for record in read(data):
        if isinstance(record, Record) and record.side == side:
            out.append(record.wire)
    return b"".join(out)
