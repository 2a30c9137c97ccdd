"""The cursor: offsets into the input, whitespace, the end of the document, and the error for an
unexpected byte.

Mirror of ``rust/scanner/cursor.rs``. There is no cursor object here, on purpose: the functions
take ``(data, pos)`` and return the next offset, and the first error leaves in a ``_Fail``
exception where Rust returns ``Result``. Rust's ``peek``, ``expect``, ``enter``/``leave`` and
``peek_type`` have no counterpart (the grammar loop in ``grammar.py`` does their work inline), nor
has its index of special bytes (regular expressions skip string bodies here).
"""

from __future__ import annotations

import re

from ..error import DecodeError, describe_found

#: Deepest nesting of arrays/objects accepted (orjson's limit).
MAX_DEPTH = 1024

_WS = re.compile(rb"[ \t\n\r]*")


class _Fail(Exception):
    """Carries the first error out of the iterative scanner."""

    def __init__(self, err: DecodeError) -> None:
        self.err = err


def _unexpected(data: bytes, pos: int, what: str) -> DecodeError:
    if pos >= len(data):
        return DecodeError.json("eof", f"expected {what}, found end of input", len(data))
    return DecodeError.json("unexpected_character", f"expected {what}, found {describe_found(data, pos)}", pos)


def finish(data: bytes, pos: int) -> None:
    """After the value: only whitespace may follow."""
    pos = _WS.match(data, pos).end()  # type: ignore[union-attr]  # `[ \t\n\r]*` always matches
    if pos < len(data):
        raise _Fail(_unexpected(data, pos, "end of input"))


def skip_ws(data: bytes, pos: int) -> int:
    return _WS.match(data, pos).end()  # type: ignore[union-attr]
