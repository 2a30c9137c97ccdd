"""Strings: scanning one, checking its escapes, and the text of a string literal.

Mirror of ``rust/scanner/strings.rs``, which differs on purpose: there the end of a string is found
through the index of special bytes, and unescaping is Rust's own (``unescape_into``,
``unescape_raw``, ``write_utf8``, ``string_equals``); here a regular expression skips string bodies and orjson
unescapes (``string_text``).
"""

from __future__ import annotations

import re
from typing import Optional

import orjson

from ..error import DecodeError, describe_found
from .cursor import _WS, _Fail, _unexpected

_ESCAPE_HELP = r"""an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX)"""

#: The escape codes that need no further check: ``" \ / b f n r t``.
_SIMPLE_ESCAPE = frozenset(b'"\\/bfnrt')
#: Hex digits (rust: ``hex_value``).
_HEX = frozenset(b"0123456789abcdefABCDEF")
_STR_BODY = re.compile(rb'[^"\\\x00-\x1f]*')


def _read_hex4(data: bytes, at: int) -> Optional[int]:
    """4 hex digits at `at`, or None if any is missing / not hex (no error)."""
    d = data[at : at + 4]
    if len(d) != 4 or not all(b in _HEX for b in d):
        return None
    return int(d, 16)


def scan_key(data: bytes, pos: int) -> int:
    """A key string at `pos`, then `:`; returns the offset of the value (whitespace skipped)."""
    pos = scan_string(data, pos)
    pos = _WS.match(data, pos).end()  # type: ignore[union-attr]
    if pos >= len(data) or data[pos] != 0x3A:
        raise _Fail(_unexpected(data, pos, "':'"))
    return _WS.match(data, pos + 1).end()  # type: ignore[union-attr]


def scan_string(data: bytes, pos: int) -> int:
    """Scan a string whose opening quote is at `pos`; return the offset after the closing quote."""
    n = len(data)
    body = _STR_BODY.match
    i = pos + 1
    while True:
        i = body(data, i).end()  # type: ignore[union-attr]
        if i >= n:
            raise _Fail(_unexpected(data, i, "'\"' to close the string"))
        b = data[i]
        if b == 0x22:
            return i + 1
        if b == 0x5C:
            i = _check_escape(data, i)
        else:
            raise _Fail(_control_character(data, i))


def _check_escape(data: bytes, at: int) -> int:
    """Validate the escape whose backslash is at `at`; return the offset after it."""
    if at + 1 >= len(data):
        raise _Fail(_unexpected(data, at + 1, _ESCAPE_HELP))
    c = data[at + 1]
    if c in _SIMPLE_ESCAPE:
        return at + 2
    if c == 0x75:  # u
        unit = _hex4_checked(data, at + 2)
        if 0xD800 <= unit <= 0xDBFF:
            nxt = at + 6
            low = _read_hex4(data, nxt + 2) if data[nxt : nxt + 2] == b"\\u" else None
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                return nxt + 6
            raise _Fail(_lone_high_surrogate(data, at, low is not None))
        if 0xDC00 <= unit <= 0xDFFF:
            written = data[at : at + 6].decode("ascii")
            raise _Fail(DecodeError.json("lone_surrogate", f"unexpected low surrogate escape {written}", at))
        return at + 6
    raise _Fail(
        DecodeError.json("invalid_escape", f"expected {_ESCAPE_HELP}, found {describe_found(data, at + 1)}", at + 1)
    )


def _hex4_checked(data: bytes, at: int) -> int:
    for i in range(at, at + 4):
        if i >= len(data):
            raise _Fail(_unexpected(data, i, "4 hex digits after \\u"))
        if data[i] not in _HEX:
            raise _Fail(
                DecodeError.json(
                    "invalid_unicode_escape",
                    f"expected 4 hex digits after \\u, found {describe_found(data, i)}",
                    i,
                )
            )
    return int(data[at : at + 4], 16)


def _control_character(data: bytes, at: int) -> DecodeError:
    return DecodeError.json(
        "control_character",
        f"expected an escaped control character in a string, found {describe_found(data, at)}",
        at,
    )


def _lone_high_surrogate(data: bytes, at: int, next_is_escape: bool) -> DecodeError:
    written = data[at : at + 6].decode("ascii")
    nxt = at + 6
    found = data[nxt : nxt + 6].decode("ascii") if next_is_escape else describe_found(data, nxt)
    return DecodeError.json("lone_surrogate", f"expected a low surrogate escape after {written}, found {found}", at)


def string_text(literal: bytes) -> str:
    """The text of a (valid) string literal, quotes included in `literal`."""
    if b"\\" not in literal:
        return literal[1:-1].decode("utf-8")
    return orjson.loads(literal)  # type: ignore[no-any-return]
