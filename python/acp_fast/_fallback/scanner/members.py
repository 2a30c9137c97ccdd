"""Members and items of a JSON value already known to be valid: where ``message.py`` finds the
fields of a frame for an error's position and the entries of a batch, and ``state.py`` the members
it reads.

Fallback only, on purpose: Rust locates members while it parses (``scan_members`` in
``rust/message.rs``, ``find_member`` in ``rust/state.rs``); here orjson parses, and these walk
the text afterwards.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from .cursor import _WS
from .grammar import _SKIP_STRING, skip_value
from .strings import string_text


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
    items: List[Tuple[str, int, int]] = []
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
