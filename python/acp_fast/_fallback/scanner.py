"""The JSON grammar (RFC 8259, strict): validation, skipping, locating values and unescaping.

The fallback parses with orjson on the happy path. This module is the grammar of DESIGN 2 in
Python: it runs on the error path only (to report the exact first error that orjson refused), to
locate members of a frame that is already known to be valid (positions of -32600 errors, entry
spans of a batch), and to build values that orjson cannot (integers beyond 64 bits).

Everything is iterative (no recursion per nesting level) and skips string bodies, digit runs and
whitespace with compiled regular expressions, so a 10 MB input is scanned in linear time.

Mirror of ``rust/scanner.rs``.
"""

from __future__ import annotations

import json as _json
import re
from typing import Any, List, Optional, Tuple, Union

import orjson

from .error import ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING, DecodeError, describe_found, to_python

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "check_utf8",
    "validate",
    "find_error",
    "skip_ws",
    "skip_value",
    "find_member",
    "array_items",
    "string_text",
    "build",
    "parse_document",
    "loads",
]

#: Deepest nesting of arrays/objects accepted (orjson's limit).
MAX_DEPTH = 1024
#: Longest integer lexeme accepted, in digits (CPython's default int/str conversion limit).
MAX_INT_DIGITS = 4300

ESCAPE_HELP = r"""an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX)"""

_BOM = b"\xef\xbb\xbf"
_WS = re.compile(rb"[ \t\n\r]*")
_STR_BODY = re.compile(rb'[^"\\\x00-\x1f]*')
_DIGITS = re.compile(rb"[0-9]*")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = frozenset(b'"\\/bfnrt')

# Fast skipping of runs of simple members on the error path: `, value` (arrays) or
# `, "key": value` (objects) where each value is a string without surrogate escapes, a number
# that cannot be out of range (no exponent, at most 300 integer digits), or a literal. Text these
# match is valid and needs no further check, so the scanner jumps over it in one call.
_SAFE_STR = rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))[^"\\\x00-\x1f]*)*"'
_SAFE_SCALAR = rb"(?:" + _SAFE_STR + rb"|-?(?:0|[1-9][0-9]{0,299})(?:\.[0-9]+)?(?![0-9.eE])|true|false|null)"
# At most 32 members per call: an unbounded `(...)*` keeps backtracking state per repetition in
# `re` and gets superlinear on millions of members.
_ARRAY_RUN = re.compile(rb"(?:[ \t\n\r]*,[ \t\n\r]*" + _SAFE_SCALAR + rb"){0,32}")
_OBJECT_RUN = re.compile(
    rb"(?:[ \t\n\r]*,[ \t\n\r]*" + _SAFE_STR + rb"[ \t\n\r]*:[ \t\n\r]*" + _SAFE_SCALAR + rb"){0,32}"
)

# For input that is already known to be valid JSON.
_SKIP_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SKIP_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# Everything up to the next bracket outside strings; group 1 is the bracket.
_NEXT_BRACKET = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*([\[\]{}])', re.S)
_TOKEN = re.compile(
    rb'[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|(-?(?:0|[1-9][0-9]*)((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))'
    rb"|(true)|(false)|(null)|([\[\]{},:]))",
    re.S,
)

# Digits mapped to b"0", so that a run of 19 digits (a possible integer beyond 64 bits, which
# orjson silently turns into a float) is one substring search.
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_LONG_DIGIT_RUN = b"0" * 19


class _Fail(Exception):
    """Carries the first error out of the iterative scanner."""

    def __init__(self, err: DecodeError) -> None:
        self.err = err


def _unexpected(data: bytes, pos: int, what: str) -> DecodeError:
    if pos >= len(data):
        return DecodeError.json("eof", f"expected {what}, found end of input", len(data))
    return DecodeError.json("unexpected_character", f"expected {what}, found {describe_found(data, pos)}", pos)


def check_utf8(data: bytes) -> Optional[DecodeError]:
    """The UTF-8 check of the whole input (first of all checks)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        at = e.start
        return DecodeError.json("invalid_utf8", f"invalid UTF-8 byte 0x{data[at]:02X}", at)
    return None


def validate(data: bytes) -> Optional[DecodeError]:
    """Validate a whole document: UTF-8, BOM, grammar, nothing after the value. Returns the first
    error (DESIGN 2.1) or None."""
    err = check_utf8(data)
    if err is not None:
        return err
    if data.startswith(_BOM):
        return DecodeError.json("bom", "unexpected UTF-8 byte order mark", 0)
    try:
        _scan_document(data)
    except _Fail as f:
        return f.err
    return None


#: The name the brief uses for `validate`.
find_error = validate


def skip_ws(data: bytes, pos: int) -> int:
    return _WS.match(data, pos).end()  # type: ignore[union-attr]


def _scan_document(data: bytes) -> None:
    """The grammar, left to right, with an explicit stack instead of recursion."""
    n = len(data)
    ws = _WS.match
    array_run = _ARRAY_RUN.match
    object_run = _OBJECT_RUN.match
    stack: List[int] = []  # 0x5B '[' or 0x7B '{'
    pos = ws(data, 0).end()  # type: ignore[union-attr]
    while True:
        # ---- a value starts at `pos` (whitespace skipped)
        if pos >= n:
            raise _Fail(_unexpected(data, pos, "a JSON value"))
        c = data[pos]
        if c == 0x7B:  # {
            if len(stack) >= MAX_DEPTH:
                raise _Fail(DecodeError.json("depth_limit", f"nesting deeper than {MAX_DEPTH} levels", pos))
            stack.append(c)
            pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and data[pos] == 0x7D:
                pos += 1
                stack.pop()
            elif pos < n and data[pos] == 0x22:
                pos = _scan_key(data, pos)
                continue
            else:
                raise _Fail(_unexpected(data, pos, "a string key"))
        elif c == 0x5B:  # [
            if len(stack) >= MAX_DEPTH:
                raise _Fail(DecodeError.json("depth_limit", f"nesting deeper than {MAX_DEPTH} levels", pos))
            stack.append(c)
            pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and data[pos] == 0x5D:
                pos += 1
                stack.pop()
            else:
                continue
        elif c == 0x22:
            pos = scan_string(data, pos)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            pos = scan_number(data, pos)
        elif c == 0x74:
            pos = _literal(data, pos, b"true", "'true'")
        elif c == 0x66:
            pos = _literal(data, pos, b"false", "'false'")
        elif c == 0x6E:
            pos = _literal(data, pos, b"null", "'null'")
        else:
            raise _Fail(_unexpected(data, pos, "a JSON value"))
        # ---- after a complete value: close containers until the next value is due
        while True:
            if stack:
                run = array_run if stack[-1] == 0x5B else object_run
                while True:
                    end = run(data, pos).end()  # type: ignore[union-attr]
                    if end == pos:
                        break
                    pos = end
            pos = ws(data, pos).end()  # type: ignore[union-attr]
            if not stack:
                if pos < n:
                    raise _Fail(_unexpected(data, pos, "end of input"))
                return
            c = data[pos] if pos < n else -1
            if stack[-1] == 0x5B:
                if c == 0x2C:
                    pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
                    break
                if c == 0x5D:
                    pos += 1
                    stack.pop()
                    continue
                raise _Fail(_unexpected(data, pos, "',' or ']'"))
            if c == 0x2C:
                pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
                if pos >= n or data[pos] != 0x22:
                    raise _Fail(_unexpected(data, pos, "a string key"))
                pos = _scan_key(data, pos)
                break
            if c == 0x7D:
                pos += 1
                stack.pop()
                continue
            raise _Fail(_unexpected(data, pos, "',' or '}'"))


def _scan_key(data: bytes, pos: int) -> int:
    """A key string at `pos`, then `:`; returns the offset of the value (whitespace skipped)."""
    pos = scan_string(data, pos)
    pos = _WS.match(data, pos).end()  # type: ignore[union-attr]
    if pos >= len(data) or data[pos] != 0x3A:
        raise _Fail(_unexpected(data, pos, "':'"))
    return _WS.match(data, pos + 1).end()  # type: ignore[union-attr]


def _literal(data: bytes, pos: int, word: bytes, what: str) -> int:
    for i, b in enumerate(word):
        if pos + i >= len(data) or data[pos + i] != b:
            raise _Fail(_unexpected(data, pos + i, what))
    return pos + len(word)


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
            raise _Fail(
                DecodeError.json(
                    "control_character",
                    f"expected an escaped control character in a string, found {describe_found(data, i)}",
                    i,
                )
            )


def _read_hex4(data: bytes, at: int) -> Optional[int]:
    """4 hex digits at `at`, or None if any is missing / not hex (no error)."""
    d = data[at : at + 4]
    if len(d) != 4 or not all(b in _HEX for b in d):
        return None
    return int(d, 16)


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


def _check_escape(data: bytes, at: int) -> int:
    """Validate the escape whose backslash is at `at`; return the offset after it."""
    if at + 1 >= len(data):
        raise _Fail(_unexpected(data, at + 1, ESCAPE_HELP))
    c = data[at + 1]
    if c in _SIMPLE_ESCAPES:
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
        DecodeError.json("invalid_escape", f"expected {ESCAPE_HELP}, found {describe_found(data, at + 1)}", at + 1)
    )


def _lone_high_surrogate(data: bytes, at: int, next_is_escape: bool) -> DecodeError:
    written = data[at : at + 6].decode("ascii")
    nxt = at + 6
    found = data[nxt : nxt + 6].decode("ascii") if next_is_escape else describe_found(data, nxt)
    return DecodeError.json("lone_surrogate", f"expected a low surrogate escape after {written}, found {found}", at)


def scan_number(data: bytes, pos: int) -> int:
    """Scan a number at `pos` (its first byte is `-` or a digit); return the offset after it."""
    n = len(data)
    digits = _DIGITS.match
    i = pos
    if data[i] == 0x2D:
        i += 1
    int_start = i
    c = data[i] if i < n else -1
    if c == 0x30:
        i += 1
    elif 0x31 <= c <= 0x39:
        i = digits(data, i + 1).end()  # type: ignore[union-attr]
    else:
        raise _Fail(_unexpected(data, i, "a digit"))
    int_digits = i - int_start
    is_int = True
    has_exp = False
    if i < n and data[i] == 0x2E:
        is_int = False
        i += 1
        if i >= n or not 0x30 <= data[i] <= 0x39:
            raise _Fail(_unexpected(data, i, "a digit"))
        i = digits(data, i).end()  # type: ignore[union-attr]
    if i < n and data[i] in (0x65, 0x45):
        is_int = False
        has_exp = True
        i += 1
        if i < n and data[i] in (0x2B, 0x2D):
            i += 1
        if i >= n or not 0x30 <= data[i] <= 0x39:
            raise _Fail(_unexpected(data, i, "a digit"))
        i = digits(data, i).end()  # type: ignore[union-attr]
    if is_int:
        out_of_range = int_digits > MAX_INT_DIGITS
    elif has_exp or int_digits > 300:
        # Only these lexemes can overflow a double.
        out_of_range = float(data[pos:i]) in (_INF, -_INF)
    else:
        out_of_range = False
    if out_of_range:
        raise _Fail(DecodeError.json("number_out_of_range", "number out of range", pos))
    return i


_INF = float("inf")


# ---------------------------------------------------------------------------------------------
# Walking input that is already known to be valid JSON.


def skip_value(data: bytes, pos: int) -> Tuple[str, int]:
    """Type and end offset of the (valid) value starting exactly at `pos`."""
    c = data[pos]
    if c == 0x22:
        return STRING, _SKIP_STRING.match(data, pos).end()  # type: ignore[union-attr]
    if c == 0x7B or c == 0x5B:
        depth = 1
        i = pos + 1
        nxt = _NEXT_BRACKET.match
        while depth:
            m = nxt(data, i)
            i = m.end()  # type: ignore[union-attr]
            if data[i - 1] in (0x5B, 0x7B):
                depth += 1
            else:
                depth -= 1
        return (OBJECT if c == 0x7B else ARRAY), i
    if c == 0x74:
        return BOOLEAN, pos + 4
    if c == 0x66:
        return BOOLEAN, pos + 5
    if c == 0x6E:
        return NULL, pos + 4
    return NUMBER, _SKIP_NUMBER.match(data, pos).end()  # type: ignore[union-attr]


def string_text(literal: bytes) -> str:
    """The text of a (valid) string literal, quotes included in `literal`."""
    if b"\\" not in literal:
        return literal[1:-1].decode("utf-8")
    return orjson.loads(literal)  # type: ignore[no-any-return]


def find_member(data: bytes, obj_start: int, key: str) -> Optional[Tuple[str, int, int]]:
    """Type and span of the value of member `key` of the (valid) object whose `{` is at
    `obj_start`; the last occurrence wins (as in the built dict). None when absent."""
    ws = _WS.match
    key_bytes = key.encode("utf-8")
    found = None
    i = ws(data, obj_start + 1).end()  # type: ignore[union-attr]
    if data[i] == 0x7D:
        return None
    while True:
        kend = _SKIP_STRING.match(data, i).end()  # type: ignore[union-attr]
        literal = data[i:kend]
        i = ws(data, kend).end()  # type: ignore[union-attr]
        i = ws(data, i + 1).end()  # type: ignore[union-attr]  # after ':'
        ty, vend = skip_value(data, i)
        if literal[1:-1] == key_bytes or (b"\\" in literal and string_text(literal) == key):
            found = (ty, i, vend)
        i = ws(data, vend).end()  # type: ignore[union-attr]
        if data[i] == 0x7D:
            return found
        i = ws(data, i + 1).end()  # type: ignore[union-attr]  # after ','


def array_items(data: bytes, arr_start: int) -> List[Tuple[str, int, int]]:
    """Type and span of every element of the (valid) array whose `[` is at `arr_start`."""
    ws = _WS.match
    items = []
    i = ws(data, arr_start + 1).end()  # type: ignore[union-attr]
    if data[i] == 0x5D:
        return items
    while True:
        ty, end = skip_value(data, i)
        items.append((ty, i, end))
        i = ws(data, end).end()  # type: ignore[union-attr]
        if data[i] == 0x5D:
            return items
        i = ws(data, i + 1).end()  # type: ignore[union-attr]


def build(data: bytes) -> Any:
    """Build the Python value of a (valid) document without recursion: exact ints of any size,
    correctly rounded floats, last duplicate key wins (first position kept)."""
    token = _TOKEN.match
    pos = 0
    # Stack entries: [container, pending_key]; pending_key is used for objects only.
    stack: List[list] = []
    root: Any = None
    key: Any = None
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
            else:
                value = orjson.loads(s)
        elif num is not None:
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


def parse_document(data: bytes) -> Union[Any, DecodeError]:
    """Parse after orjson refused `data`: the first error (DESIGN 2.1), or the value when the
    grammar accepts what orjson refused (e.g. integers too large for a double)."""
    err = validate(data)
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
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, bytearray, memoryview or str, found {type(data).__name__}")


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
