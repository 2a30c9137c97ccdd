"""Values: the UTF-8 check and the grammar of docs/DESIGN.md section 2 (BOM, value, array, object,
literal, nothing after the value).

Mirror of ``rust/scanner/grammar.rs``, which differs on purpose: there ``parse_value`` recurses
(with ``parse_item``, ``parse_array`` and ``parse_object``) and hands every value to a sink; here it
is one loop with an explicit stack (no recursion per nesting level, so a 10 MB input is scanned
in linear time), only validates, and jumps over runs of simple members with regular expressions.
``skip_value`` here reads input already known to be valid; Rust's validates what it skips.
``check_utf8`` and ``validate`` are in Rust's ``mod.rs``, with its ``parse_document`` (BOM, value,
end), which is inline in ``validate`` here: the fallback's ``parse_document`` is the build after
orjson refused (``build.py``).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..error import ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING, DecodeError
from .cursor import _WS, MAX_DEPTH, _Fail, _unexpected, finish
from .numbers import scan_number
from .strings import scan_key, scan_string

_BOM = b"\xef\xbb\xbf"

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


def check_utf8(data: bytes) -> Optional[DecodeError]:
    """The UTF-8 check of the whole input (first of all checks)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        at = e.start
        return DecodeError.json("invalid_utf8", f"invalid UTF-8 byte 0x{data[at]:02X}", at)
    return None


def validate(data: bytes, max_depth: int = MAX_DEPTH) -> Optional[DecodeError]:
    """Validate a whole document: UTF-8, BOM, grammar, nothing after the value. Returns the first
    error (DESIGN 2.1) or None. ``max_depth``: more than ``MAX_DEPTH`` for a checkpoint only (Rust
    sets ``Scanner::max_depth``)."""
    err = check_utf8(data)
    if err is not None:
        return err
    if data.startswith(_BOM):
        return DecodeError.json("bom", "unexpected UTF-8 byte order mark", 0)
    try:
        finish(data, parse_value(data, 0, max_depth))
    except _Fail as f:
        return f.err
    return None


#: The name the brief uses for `validate`.
find_error = validate


def parse_value(data: bytes, pos: int, max_depth: int = MAX_DEPTH) -> int:
    """The value at `pos` (after whitespace), left to right with an explicit stack instead of
    recursion; returns the offset after it and the whitespace that follows."""
    n = len(data)
    ws = _WS.match
    array_run = _ARRAY_RUN.match
    object_run = _OBJECT_RUN.match
    stack: List[int] = []  # 0x5B '[' or 0x7B '{'
    pos = ws(data, pos).end()  # type: ignore[union-attr]
    while True:
        # ---- a value starts at `pos` (whitespace skipped)
        if pos >= n:
            raise _Fail(_unexpected(data, pos, "a JSON value"))
        c = data[pos]
        if c == 0x7B:  # {
            if len(stack) >= max_depth:
                raise _Fail(DecodeError.json("depth_limit", f"nesting deeper than {max_depth} levels", pos))
            stack.append(c)
            pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and data[pos] == 0x7D:
                pos += 1
                stack.pop()
            elif pos < n and data[pos] == 0x22:
                pos = scan_key(data, pos)
                continue
            else:
                raise _Fail(_unexpected(data, pos, "a string key"))
        elif c == 0x5B:  # [
            if len(stack) >= max_depth:
                raise _Fail(DecodeError.json("depth_limit", f"nesting deeper than {max_depth} levels", pos))
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
                return pos
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
                pos = scan_key(data, pos)
                break
            if c == 0x7D:
                pos += 1
                stack.pop()
                continue
            raise _Fail(_unexpected(data, pos, "',' or '}'"))


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


def _literal(data: bytes, pos: int, word: bytes, what: str) -> int:
    for i, b in enumerate(word):
        if pos + i >= len(data) or data[pos + i] != b:
            raise _Fail(_unexpected(data, pos + i, what))
    return pos + len(word)
