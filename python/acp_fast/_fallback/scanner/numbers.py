"""Numbers: scanning a lexeme, with the range limits of docs/DESIGN.md section 2.

Mirror of ``rust/scanner/numbers.rs``. Rust's ``scan_number`` and ``number_at`` are one function
here, and its ``parse_f64``, ``parse_i64`` and ``parse_u64`` have no counterpart on purpose: Python's
own ``int`` and ``float`` convert a lexeme.
"""

from __future__ import annotations

import re

from ..error import DecodeError
from .cursor import _Fail, _unexpected

#: Longest integer lexeme accepted, in digits (CPython's default int/str conversion limit).
MAX_INT_DIGITS = 4300

_DIGITS = re.compile(rb"[0-9]*")
_INF = float("inf")


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
