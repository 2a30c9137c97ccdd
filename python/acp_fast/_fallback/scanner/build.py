"""Building values: where orjson cannot (integers beyond 64 bits), after orjson refused a document
(the exact first error), and ``loads``.

Fallback only, on purpose: orjson builds the values here, and this completes it. Rust builds
while it validates, through a sink (``rust/scanner/mod.rs``; the sink that makes Python objects
is in ``rust/python/convert.rs``, ``loads`` and the input types in ``rust/python/frames.rs``).
"""

from __future__ import annotations

import json as _json
import re
from typing import Any, Callable, List, Optional, Tuple, Union

import orjson

from ..error import DecodeError, to_python
from .cursor import MAX_DEPTH
from .grammar import validate

_TOKEN = re.compile(
    rb'[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|(-?(?:0|[1-9][0-9]*)((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))'
    rb"|(true)|(false)|(null)|([\[\]{},:]))",
    re.S,
)

# Digits mapped to b"0", so that a run of 19 digits (a possible integer beyond 64 bits, which
# orjson silently turns into a float) is one substring search.
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_LONG_DIGIT_RUN = b"0" * 19


def build(
    data: bytes,
    numbers: Optional[Tuple[Callable[[str], Any], Callable[[str], Any]]] = None,
    strings: Optional[Callable[[bytes], Any]] = None,
) -> Any:
    """Build the Python value of a (valid) document without recursion: exact ints of any size,
    correctly rounded floats, last duplicate key wins (first position kept). ``numbers``: the
    functions that make a number of its text instead (a fraction or exponent, an integer), as
    ``json.loads``' ``parse_float`` / ``parse_int``; ``strings``: the one that makes a string
    value that has an escape of its JSON text (member names stay ``str``)."""
    token = _TOKEN.match
    pos = 0
    # Stack entries: [container, pending_key]; pending_key is used for objects only.
    stack: List[List[Any]] = []
    root: Any = None
    expect_key = False
    while True:
        m = token(data, pos)
        if m is None:
            break
        pos = m.end()
        s, num, frac, t, f, nl, punct = m.groups()
        if punct is not None:
            p = punct[0]
            if p == 0x5B:
                value: Any = []
            elif p == 0x7B:
                value = {}
            elif p == 0x5D or p == 0x7D:
                done = stack.pop()[0]
                if not stack:
                    root = done
                expect_key = False
                continue
            elif p == 0x2C:
                expect_key = type(stack[-1][0]) is dict
                continue
            else:  # ':'
                continue
        elif s is not None:
            if b"\\" not in s:
                value = s[1:-1].decode("utf-8")
            elif strings is not None and not expect_key:
                value = strings(s)
            else:
                value = orjson.loads(s)
        elif num is not None:
            if numbers is not None:
                value = numbers[0](num.decode("ascii")) if frac else numbers[1](num.decode("ascii"))
            else:
                value = float(num) if frac else int(num)
        elif t is not None:
            value = True
        elif f is not None:
            value = False
        else:
            value = None
        if expect_key:
            stack[-1][1] = value
            expect_key = False
            continue
        if stack:
            top = stack[-1]
            container = top[0]
            if type(container) is dict:
                container[top[1]] = value
            else:
                container.append(value)
        else:
            root = value
        if type(value) is dict:
            stack.append([value, None])
            expect_key = True
        elif type(value) is list:
            stack.append([value, None])
    return root


def _exact(data: bytes) -> Any:
    """Re-parse a document orjson accepted but may have rounded (integers beyond 64 bits)."""
    try:
        return _json.loads(data)
    except (RecursionError, ValueError):
        return build(data)


def parse_document(data: bytes, max_depth: int = MAX_DEPTH) -> Union[Any, DecodeError]:
    """Parse after orjson refused `data`: the first error (DESIGN 2.1), or the value when the
    grammar accepts what orjson refused (e.g. integers too large for a double, or a checkpoint
    nested deeper than ``MAX_DEPTH``, with its own ``max_depth``)."""
    err = validate(data, max_depth)
    if err is not None:
        return err
    return build(data)


def parse_exact(data: bytes) -> Union[Any, DecodeError]:
    """The value of `data`, or its error: orjson on the fast path, exact everywhere."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_document(data)
    if _LONG_DIGIT_RUN in data.translate(_DIGITS_TO_ZERO):
        return _exact(data)
    return value


def to_bytes(data: Any, func: str) -> Union[bytes, DecodeError]:
    """The UTF-8 bytes of an input (bytes, bytearray, memoryview or str). A str with unpaired
    surrogates gives the DecodeError of DESIGN 5 (position None); other types raise TypeError
    (`func` names the caller, kept for symmetry with the binding layer)."""
    t = type(data)
    if t is bytes:
        return data  # type: ignore[no-any-return]
    if t is str or isinstance(data, str):
        try:
            return str.__str__(data).encode("utf-8")
        except UnicodeEncodeError as e:
            cp = ord(data[e.start])
            return DecodeError(
                -32700,
                "invalid_utf8",
                f"expected a str encodable as UTF-8, found unpaired surrogate U+{cp:04X}",
                None,
            )
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    # Any other buffer of bytes (a memoryview, array('B'), ...), as the native binding takes it
    # (PyBuffer<u8>: items of format "B" or "c"); a buffer of other items is refused, not
    # reinterpreted byte by byte.
    try:
        view = memoryview(data)
    except TypeError:
        view = None
    if view is not None and view.format in _BYTE_FORMATS:
        return view.tobytes()
    raise TypeError(f"expected bytes, bytearray, memoryview or str, found {type(data).__name__}")


_BYTE_FORMATS = frozenset(("B", "c"))


def loads(data):  # type: ignore[no-untyped-def]  # signature = the native one
    """``acp_fast.loads``: one JSON value from bytes, bytearray, memoryview or str."""
    if type(data) is not bytes:
        data = to_bytes(data, "loads")
        if type(data) is DecodeError:
            raise to_python(data, None)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = parse_document(data)
        if type(value) is DecodeError:
            raise to_python(value, data) from None
        return value
    if _LONG_DIGIT_RUN in data.translate(_DIGITS_TO_ZERO):
        return _exact(data)
    return value
