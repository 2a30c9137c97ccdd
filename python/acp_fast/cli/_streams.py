"""Reading NDJSON streams and ``acp-fast proxy`` recordings (private; used by ``validate`` and
``inspect``).

* ``open_input`` / ``read_chunks`` / ``sniff`` — a regular file or stdin as byte
  chunks, and whether it holds a recording (it starts with the header
  ``{"acp-fast-recording":1,...}``) or a plain stream.
* ``string_offset`` — where a byte of a recorded text line is in its JSON string token.
* ``Progress`` — a progress line on stderr.

The recording format, and its reader (lines, records), live in [`acp_fast.recording`][acp_fast.recording].
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any, BinaryIO, Iterable, Iterator, List, Optional, Sized, TextIO, Tuple, TypeVar

from .._inputs import open_file
from ..recording import MAGIC
from ..trace import STARTS, is_trace

_Read = TypeVar("_Read", bound=Sized)

__all__ = ["CHUNK_BYTES", "Progress", "chunks_of", "open_input", "read_chunks", "sniff", "string_offset"]

CHUNK_BYTES = 1 << 20

# ---------------------------------------------------------------------------------------------
# Input


def open_input(path: str) -> Tuple[BinaryIO, Optional[int], str]:
    """(binary stream, size in bytes when known, display name). ``-`` is stdin (whatever it is);
    a path must name a regular file (``acp_fast._inputs.open_file``: a FIFO, a device, a socket
    or a directory is refused with an OSError saying what it is, without blocking). Raises
    OSError."""
    if path == "-":
        return sys.stdin.buffer, None, "<stdin>"
    stream = open_file(path)
    return stream, os.fstat(stream.fileno()).st_size, path


def read_chunks(stream: Any, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Chunks of a binary stream until EOF (``read1`` when the stream has it: pipes stream out)."""
    read = getattr(stream, "read1", None) or stream.read
    while True:
        chunk = read(size)
        if not chunk:
            return
        yield bytes(chunk)


def chunks_of(data: Any) -> Iterator[bytes]:
    """A bytes-like value as chunks."""
    data = bytes(data)
    for start in range(0, len(data), CHUNK_BYTES):
        yield data[start : start + CHUNK_BYTES]


#: Bytes enough to tell a recording, a trace and a plain stream apart.
_HEAD_BYTES = max(len(MAGIC), *map(len, STARTS)) + 3


def sniff(chunks: Iterable[bytes]) -> Tuple[str, Iterator[bytes]]:
    """``("recording" | "trace" | "ndjson", the same chunks)``: a recording starts with its
    header, a trace (``acp_fast.trace``) with an event."""
    it = iter(chunks)
    head = b""
    pieces: List[bytes] = []
    for chunk in it:
        pieces.append(chunk)
        head += chunk[: 64 - len(head)] if len(head) < 64 else b""
        if len(head) >= _HEAD_BYTES or b"\n" in chunk:
            break
    kind = "recording" if head.startswith(MAGIC) else "trace" if is_trace(head) else "ndjson"

    def replay() -> Iterator[bytes]:
        yield from pieces
        yield from it

    return kind, replay()


# ---------------------------------------------------------------------------------------------
# Text records


_PIECE = re.compile(rb'\\u([dD][89abAB][0-9a-fA-F]{2})\\u[0-9a-fA-F]{4}|\\u([0-9a-fA-F]{4})|\\.|[^\\"]+')


def string_offset(token: bytes, index: int) -> int:
    """Offset in a JSON string token (with its quotes) of byte ``index`` of the decoded UTF-8 text."""
    pos = 1
    done = 0
    while pos < len(token) - 1 and done < index:
        m = _PIECE.match(token, pos)
        if m is None:
            break
        piece = m.group()
        if piece[:1] != b"\\":
            if done + len(piece) > index:
                return pos + (index - done)
            done += len(piece)
        elif m.group(1) is not None:
            done += 4
        elif m.group(2) is not None:
            done += len(chr(int(m.group(2), 16)).encode("utf-8", "surrogatepass"))
        else:
            done += 1
        pos = m.end()
    return pos


# ---------------------------------------------------------------------------------------------
# Progress


class Progress:
    """A one-line progress display on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str, total: Optional[int], *, enabled: bool, stream: Optional[TextIO] = None):
        self.label = label
        self.total = total
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._last = 0.0
        self._width = 0
        self._start = time.monotonic()

    @staticmethod
    def wanted(flag: Optional[bool], stream: Optional[TextIO] = None) -> bool:
        """``--progress`` / ``--no-progress`` when given, else: is stderr a terminal?"""
        if flag is not None:
            return flag
        stream = stream if stream is not None else sys.stderr
        try:
            return bool(stream.isatty())
        except (AttributeError, ValueError):
            return False

    def wrap(self, chunks: Iterable[_Read]) -> Iterator[_Read]:
        """``chunks`` handed on, each counted by its ``len`` (bytes, or a range of them) once done."""
        for chunk in chunks:
            yield chunk
            self.advance(len(chunk))

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        mib = self.done / (1 << 20)
        if self.total:
            fraction = min(1.0, self.done / self.total)
            bar = "#" * int(fraction * 24)
            text = f"{self.label} [{bar:<24}] {fraction * 100:5.1f}% {mib:.1f}/{self.total / (1 << 20):.1f} MiB"
        else:
            text = f"{self.label} {mib:.1f} MiB"
        text += f" {now - self._start:.1f}s"
        self._width = max(self._width, len(text))
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
