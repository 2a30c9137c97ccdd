"""Byte offsets of values inside a frame, for ``acp-fast validate`` (private): :func:`locate` and
the helpers it walks with (:func:`skip_value`, :func:`members`).
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Sequence, Tuple, Union

_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"[^,}\] \t\r\n]*")
_SPECIAL = re.compile(rb'["{}\[\]]')


def _skip_ws(raw: bytes, i: int) -> int:
    """The offset of the first byte from ``i`` that is not whitespace."""
    m = _WS.match(raw, i)
    assert m is not None  # `[ \t\r\n]*` matches everywhere (the empty run)
    return m.end()


def skip_value(raw: bytes, i: int) -> int:
    """The offset just after the JSON value starting at ``i`` (``raw`` is valid JSON)."""
    c = raw[i : i + 1]
    if c == b'"':
        m = _STRING.match(raw, i)
        return m.end() if m else len(raw)
    if c in (b"{", b"["):
        depth = 0
        pos = i
        while True:
            m = _SPECIAL.search(raw, pos)
            if m is None:
                return len(raw)
            ch = raw[m.start() : m.start() + 1]
            if ch == b'"':
                s = _STRING.match(raw, m.start())
                pos = s.end() if s else len(raw)
            elif ch in (b"{", b"["):
                depth += 1
                pos = m.end()
            else:
                depth -= 1
                pos = m.end()
                if depth == 0:
                    return pos
    m = _SCALAR.match(raw, i)
    return m.end() if m else i


def members(raw: bytes, i: int) -> Iterable[Tuple[str, int, int]]:
    """(key, value start, value end) of each member of the object starting at ``i``."""
    j = _skip_ws(raw, i + 1)
    while j < len(raw) and raw[j : j + 1] != b"}":
        m = _STRING.match(raw, j)
        if m is None:
            return
        try:
            key = json.loads(m.group())
        except ValueError:
            return
        j = _skip_ws(raw, m.end()) + 1  # the ':'
        start = _skip_ws(raw, j)
        end = skip_value(raw, start)
        yield key, start, end
        j = _skip_ws(raw, end)
        if raw[j : j + 1] == b",":
            j = _skip_ws(raw, j + 1)


def locate(raw: bytes, path: Sequence[Union[str, int]]) -> int:
    """Byte offset of the value at ``path`` in the JSON text ``raw``.

    When a member on the way is missing, the offset of the object that lacks it (its ``{``); for
    a duplicated key, the last one (its value is the one that counts). Never raises: a path that
    cannot be followed stops at the deepest value found.
    """
    try:
        i = _skip_ws(raw, 0)
        for part in path:
            c = raw[i : i + 1]
            if isinstance(part, str) and c == b"{":
                found = None
                for key, start, _end in members(raw, i):
                    if key == part:
                        found = start
                if found is None:
                    return i
                i = found
            elif isinstance(part, int) and c == b"[":
                j = _skip_ws(raw, i + 1)
                index = 0
                while j < len(raw) and raw[j : j + 1] != b"]" and index < part:
                    j = _skip_ws(raw, skip_value(raw, j))
                    if raw[j : j + 1] == b",":
                        j = _skip_ws(raw, j + 1)
                    index += 1
                if index != part or raw[j : j + 1] == b"]":
                    return i
                i = j
            else:
                return i
        return i
    except (IndexError, TypeError, ValueError):  # pragma: no cover - defensive, raw is valid JSON
        return 0
