"""Newline framing of a byte stream (DESIGN 6): partial lines, CRLF, blank lines, the length
limit and resynchronisation after an oversized line; here too the limits, the check of a caller's
``max_frame_bytes`` and the ``frame_too_large`` error.

Mirror of ``rust/framing.rs`` (same names, in the same order, with a leading underscore where
the name is not public here) and of its binding ``rust/python/framing.rs``: this ``Framer`` is
the core framer and the Python class in one. Where the Rust framer hands each line to a callback,
this one batches: ``_feed`` cuts a whole feed with one ``bytes.split`` and returns its lines,
which the caller (``Framer.feed``, ``FrameDecoder.feed``, ``ToolCallStore.feed``) walks in its
own loop before it calls ``_buffer_tail``; ``_feed_exact`` (``keepends``) splits only when a
line may pass the limit or each line is asked for. A partial line is kept as a list of chunks so
feeding one byte at a time stays linear. Memory is bounded by ``max_frame_bytes``: an oversized
line is noticed as soon as more than that many bytes of it are buffered, and its bytes are
dropped (only counted) until the next newline. The chunks go with their line, and CPython gives
big blocks back to the OS when they are freed, so this has no counterpart of the Rust framer's
``reuse`` (a buffer over 8 MiB dropped and the allocator told to return its memory).

Threads (docs/API.md "Threads"): ``exclusive`` below wraps every public method and property of
``Framer``, ``FrameDecoder`` and ``ToolCallStore`` in a per-object lock, as the native classes
(``Exclusive`` in ``rust/python/mod.rs``): one object can be shared by threads, and a call from
inside one of its own methods in the same thread raises the same RuntimeError.
"""

from __future__ import annotations

import functools
import inspect
from threading import RLock
from typing import Any, Callable, Concatenate, Dict, List, Optional, ParamSpec, Protocol, Tuple, TypeVar, Union, cast

from ..errors import DecodeError as PyDecodeError
from .error import DecodeError, to_python
from .scanner import to_bytes

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "MAX_FRAME_BYTES",
    "check_bool",
    "check_max_frame_bytes",
    "too_large",
    "exclusive",
    "Framer",
]

#: Default ``max_frame_bytes``: 64 MiB.
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: The largest ``max_frame_bytes`` (offsets within a frame are 32-bit in the native core).
MAX_FRAME_BYTES = 2**32 - 2


def check_max_frame_bytes(value: Any) -> int:
    """A caller's ``max_frame_bytes``: an int (not a bool) from 1 to ``MAX_FRAME_BYTES``, or None
    for the default; else TypeError / ValueError saying why not."""
    if value is None:
        return DEFAULT_MAX_FRAME_BYTES
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"max_frame_bytes must be an int, found {type(value).__name__}")
        value = int(value)
    if not 1 <= value <= MAX_FRAME_BYTES:
        raise ValueError(f"max_frame_bytes must be between 1 and {MAX_FRAME_BYTES}, found {value}")
    checked: int = value
    return checked


def check_bool(value: Any) -> None:
    """A flag argument (``keepends=``, ``joined=``, ``changes=``) must be a bool: the native
    binding's argument conversion (PyO3's), word for word."""
    if type(value) is not bool:
        what = "'None'" if value is None else f"'{type(value).__name__}' object"
        raise TypeError(f"{what} is not an instance of 'bool'")


#: The first bytes of an oversized line kept until it is reported (``heads=True``): a frame
#: usually begins with its ``jsonrpc``, ``id`` and ``method`` members.
HEAD_BYTES = 4096


def too_large(limit: int, line: int) -> PyDecodeError:
    """The error of line ``line``, longer than ``limit`` bytes (DESIGN 6): its bytes are skipped
    up to the next newline."""
    err = DecodeError.json(
        "frame_too_large",
        f"expected a frame of at most {limit} bytes, found a longer line; skipped to the next newline",
        limit,
    )
    return to_python(err, None, line=line, raw=None)


def bytes_of(data: Any) -> bytes:
    """The bytes of a ``feed`` argument (bytes, bytearray, memoryview or str), as
    ``rust/python/frames.rs`` ``source_of``: a str with unpaired surrogates raises the same
    DecodeError as ``decode(str)``, other types TypeError."""
    value = to_bytes(data, "feed")
    if isinstance(value, DecodeError):
        raise to_python(value, None)
    return value


class Exclusive(Protocol):
    """An object whose methods are ``exclusive``: its lock, and whether one of them is running."""

    _lock: Any
    _busy: bool


_S = TypeVar("_S", bound=Exclusive)
_P = ParamSpec("_P")
_R = TypeVar("_R")


#: The wrapper ``exclusive`` makes of a method: ``{params}`` are the method's own parameters and
#: ``{args}`` pass each one on as it came. Written out for each method (as ``dataclasses`` writes
#: ``__init__``): a generic ``(self, *args, **kwargs)`` wrapper cost twice as much per call.
_LOCKED = """
def locked({params}):
    lock = self._lock
    lock.acquire()
    if self._busy:
        lock.release()
        raise RuntimeError(REENTRANT)
    self._busy = True
    try:
        return method({args})
    finally:
        self._busy = False
        lock.release()
"""


class _Default:
    """A default value in the generated wrapper: written as the name it is bound to."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def exclusive(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """``method`` run under its object's lock, one call at a time. ``_lock`` is a
    ``threading.RLock`` (a thread waits for it with the GIL released); its owner can take it
    again, and then finds ``_busy`` set: a call from inside a method in the same thread (from a
    finalizer, a signal handler or a trace function) would wait for itself under a plain lock,
    and raises RuntimeError instead, with the native message (``reentrant`` in
    ``rust/python/mod.rs``). Explicit ``acquire`` / ``release``: a ``with`` block costs twice as
    much per call."""
    name = method.__qualname__.partition(".")[0]
    namespace: Dict[str, Any] = {
        "method": method,
        "REENTRANT": f"re-entrant call: this {name} is already running a method in this thread "
        "(the call came from a finalizer, signal handler or trace function inside it)",
    }
    params, args = [], []
    for i, p in enumerate(inspect.signature(method).parameters.values()):
        if p.default is not p.empty:
            namespace[f"default_{i}"] = p.default
            p = p.replace(default=_Default(f"default_{i}"))
        params.append(p.replace(annotation=p.empty))
        if p.kind is p.KEYWORD_ONLY:
            args.append(f"{p.name}={p.name}")
        elif p.kind is p.VAR_POSITIONAL:
            args.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            args.append(f"**{p.name}")
        else:
            args.append(p.name)
    assert params[0].name == "self", method
    signature = str(inspect.Signature(params))[1:-1]
    exec(_LOCKED.format(params=signature, args=", ".join(args)), namespace)
    return cast(Callable[Concatenate[_S, _P], _R], functools.wraps(method)(namespace["locked"]))


# Blank lines hold only these (after the line ending is dropped).
_BLANK = b" \t\r"
_BLANK_START = frozenset(_BLANK)

#: What ``Framer._feed`` returns for a feed that completes lines: the complete lines (without
#: their ``\n``; the held partial line joined to the first), the new partial line, the number of
#: the line before the first (``Framer.line`` already counts them all), whether some line may
#: pass the limit (else the per-line length check can be skipped) and whether some line may end
#: in ``\r``.
Split = Tuple[List[bytes], bytes, int, bool, bool]


class Framer:
    """Splits a byte stream into lines (what ``FrameDecoder`` does before it parses them).

    ``feed(data)`` returns the events of every line that ``data`` completes, in order;
    ``finish()`` those of a last line without a newline. By default an event is
    ``(line, data)`` for a complete non-blank line (its ``\\n`` / ``\\r\\n`` dropped), or the
    ``DecodeError`` (kind ``frame_too_large``) of a line longer than ``max_frame_bytes``, as soon
    as it passes the limit. With ``keepends=True`` every line comes back exactly as it was (line
    ending kept, blank lines too) and an oversized line as ``(line, n)``, ``n`` the bytes dropped
    with its line ending, once it has ended; ``joined=True`` (implies ``keepends``) gives the
    consecutive complete lines of one feed as one ``(first line, data)`` event.
    """

    __slots__ = (
        "_max",
        "_chunks",
        "_buffered",
        "_line",
        "_skipping",
        "_dropped",
        "_keepends",
        "_joined",
        "_heads",
        "_head",
        "_lock",
        "_busy",
    )

    # Typed by a comment so that the signature reads as the native one (tests/test_api.py).
    def __init__(self, *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, keepends=False, joined=False, heads=False):
        # type: (Optional[int], bool, bool, bool) -> None
        # The flags first: the native binding converts them before its body checks the limit.
        check_bool(keepends)
        check_bool(joined)
        check_bool(heads)
        self._max: int = check_max_frame_bytes(max_frame_bytes)
        # The current partial line, in chunks, and its length.
        self._chunks: List[bytes] = []
        self._buffered = 0
        # Lines completed so far.
        self._line = 0
        # Discarding the rest of an oversized line, and how many of its bytes so far.
        self._skipping = False
        self._dropped = 0
        self._keepends: bool = keepends or joined or heads
        self._joined: bool = joined
        self._heads: bool = heads
        # The first bytes of the oversized line being skipped (keepends).
        self._head = b""
        self._lock = RLock()
        self._busy = False

    @property
    @exclusive
    def max_frame_bytes(self) -> int:
        return self._max

    @property
    @exclusive
    def line(self) -> int:
        """Lines completed so far (blank and oversized lines included)."""
        return self._line

    @property
    @exclusive
    def buffered(self) -> int:
        """Bytes held for the current partial line."""
        return self._buffered

    def _at_line_start(self) -> bool:
        """Whether the next byte fed starts a line (no partial line held, none being skipped)."""
        return not self._buffered and not self._chunks and not self._skipping

    def _skip_lines(self, lines: int) -> None:
        """Count ``lines`` complete lines read by others (the ranges ``FrameColumns`` parses as
        separate pieces); only at the start of a line."""
        self._line += lines

    @staticmethod
    def _complete(limit: int, line: int, data: bytes) -> Union[bytes, PyDecodeError, None]:
        """A complete line (without its ``\\n``) as the default reading gives it: the line without
        a final ``\\r``, None for a blank line, or the error of a line over ``limit``."""
        if not data:
            return None
        if len(data) > limit:
            return too_large(limit, line)
        if data[-1] == 13:  # \r
            data = data[:-1]
            if not data:
                return None
        if data[0] in _BLANK_START and not data.strip(_BLANK):
            return None
        return data

    @exclusive
    def feed(self, /, data):  # type: ignore[no-untyped-def]  # signature = the native one
        """The events of every line that ``data`` completes, in order."""
        if type(data) is not bytes:
            data = bytes_of(data)
        out: List[Any] = []
        if self._keepends:
            self._feed_exact(data, out)
            return out
        split = self._feed(data, out)
        if split is None:
            return out
        lines, tail, line, _, _ = split
        limit = self._max
        complete = self._complete
        append = out.append
        for frame in lines:
            line += 1
            found = complete(limit, line, frame)
            if found is not None:
                append((line, found) if type(found) is bytes else found)
        if tail:
            self._buffer_tail(tail, out)
        return out

    def _feed(self, data: bytes, out: List[Any]) -> Optional[Split]:
        """The default reading of one feed (``Split``), for the caller to walk; None when ``data``
        completes no line (it is held, or skipped after an oversized line; ``out`` gets the error
        of a held line that passes the limit). The caller then holds the tail with
        ``_buffer_tail``, after the events of the lines."""
        if self._skipping:
            nl = data.find(b"\n")
            if nl < 0:
                self._dropped += len(data)
                return None
            self._skipping = False
            self._line += 1
            data = data[nl + 1 :]
        elif b"\n" not in data:
            self._buffer_tail(data, out)
            return None
        lines = data.split(b"\n")
        tail = lines.pop()
        check_size = len(data) + self._buffered > self._max
        has_cr = b"\r" in data
        if self._chunks:
            self._chunks.append(lines[0])
            lines[0] = b"".join(self._chunks)
            has_cr = has_cr or b"\r" in lines[0]
            self._chunks = []
            self._buffered = 0
        line = self._line
        self._line = line + len(lines)
        return lines, tail, line, check_size, has_cr

    def _feed_exact(self, data: bytes, out: List[Any]) -> None:
        """The exact reading of one feed (``keepends``): its events go to ``out``."""
        if self._skipping:
            nl = data.find(b"\n")
            if len(self._head) < HEAD_BYTES:
                self._head += data[: min(HEAD_BYTES - len(self._head), len(data) if nl < 0 else nl)]
            if nl < 0:
                self._dropped += len(data)
                return
            self._skipping = False
            self._line += 1
            out.append(self._too_large_event(self._line, self._dropped + nl + 1, self._head))
            self._head = b""
            data = data[nl + 1 :]
        end = data.rfind(b"\n") + 1
        if not end:
            self._buffer_tail(data, out)
            return
        block = data if end == len(data) else data[:end]
        if self._chunks:
            self._chunks.append(block)
            block = b"".join(self._chunks)
            self._chunks = []
            self._buffered = 0
        line = self._line
        limit = self._max
        if self._joined and len(block) - 1 <= limit:  # no line can pass the limit
            out.append((line + 1, block))
            self._line = line + block.count(b"\n")
        else:
            lines = block.split(b"\n")
            lines.pop()  # after the last newline
            run: List[bytes] = []  # joined: the lines of the current event
            for part in lines:
                line += 1
                if len(part) > limit:
                    if run:
                        out.append((line - len(run), b"\n".join(run) + b"\n"))
                        run = []
                    out.append(self._too_large_event(line, len(part) + 1, part[:HEAD_BYTES]))
                elif self._joined:
                    run.append(part)
                else:
                    out.append((line, part + b"\n"))
            if run:
                out.append((line + 1 - len(run), b"\n".join(run) + b"\n"))
            self._line = line
        if end < len(data):
            self._buffer_tail(data[end:], out)

    def _too_large_event(self, line: int, dropped: int, head: bytes) -> Tuple[Any, ...]:
        """The exact reading's event of an oversized line: ``(line, bytes dropped)``, with
        ``heads`` its first bytes too."""
        return (line, dropped, head) if self._heads else (line, dropped)

    def _buffer_tail(self, data: bytes, out: List[Any]) -> None:
        """Keep ``data`` as (the end of) the current partial line, within the limit."""
        if not data:
            return
        size = self._buffered + len(data)
        if size > self._max:
            self._dropped = size
            if self._keepends:
                self._head = b"".join(self._chunks)[:HEAD_BYTES]
                self._head += data[: HEAD_BYTES - len(self._head)]
            self._chunks = []
            self._buffered = 0
            self._skipping = True
            if not self._keepends:
                out.append(too_large(self._max, self._line + 1))
            return
        self._chunks.append(data)
        self._buffered = size

    @exclusive
    def finish(self, /):  # type: ignore[no-untyped-def]  # signature = the native one
        """The events of a last line without a newline (``[]`` if there is none, or it is
        blank in the default reading); resets the partial line. The framer may be fed again."""
        return self._end()

    def _end(self) -> List[Any]:
        if self._skipping:
            self._skipping = False
            self._line += 1
            head, self._head = self._head, b""
            return [self._too_large_event(self._line, self._dropped, head)] if self._keepends else []
        if not self._chunks:
            return []
        data = b"".join(self._chunks)
        self._chunks = []
        self._buffered = 0
        self._line += 1
        if self._keepends:
            return [(self._line, data)]
        found = self._complete(self._max, self._line, data)  # never over the limit: it was held
        return [] if found is None else [(self._line, found)]

    @exclusive
    def __repr__(self) -> str:
        return f"Framer(max_frame_bytes={self._max}, line={self._line}, buffered={self._buffered})"
