"""Error values of the fallback: a JSON-RPC code, a stable kind id, the description and the byte
offset. Line and column are derived from the offset only when an error is turned into the public
exception (never on the happy path).

Mirror of ``rust/error.rs``, definition for definition. The descriptions are fixed in
docs/DESIGN.md (sections 2.1, 3, 5, 6). Differences on purpose: the JSON type names are strings
here (rust: the ``JsonType`` enum and its ``name``); ``DecodeError.shifted`` moves the error of a
batch entry (rust: ``shifted`` in ``rust/message.rs``); ``to_python`` and ``encode_error`` build the
public exceptions, which the binding does in Rust (``rust/python/errors.rs``).
"""

from __future__ import annotations

from typing import Optional

from ..errors import DecodeError as PyDecodeError
from ..errors import EncodeError as PyEncodeError

__all__ = [
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "INVALID_PARAMS",
    "DecodeError",
    "line_column",
    "describe_found",
    "describe_value",
    "to_python",
    "encode_error",
]

#: JSON-RPC "Parse error": the frame is not valid JSON (or not a readable line).
PARSE_ERROR = -32700
#: JSON-RPC "Invalid Request": valid JSON, but not a valid JSON-RPC 2.0 message.
INVALID_REQUEST = -32600
#: JSON-RPC "Invalid params": a valid message whose params break a state-engine rule (DESIGN 7.7).
INVALID_PARAMS = -32602


class DecodeError:
    """Why a frame or document could not be decoded (the core value, not the exception)."""

    __slots__ = ("code", "kind", "description", "position")

    def __init__(self, code: int, kind: str, description: str, position: Optional[int]) -> None:
        self.code = code
        self.kind = kind
        self.description = description
        self.position = position

    @classmethod
    def json(cls, kind: str, description: str, position: int) -> DecodeError:
        return cls(PARSE_ERROR, kind, description, position)

    @classmethod
    def invalid(cls, kind: str, description: str, position: int) -> DecodeError:
        return cls(INVALID_REQUEST, kind, description, position)

    @classmethod
    def params(cls, kind: str, description: str, position: int) -> DecodeError:
        return cls(INVALID_PARAMS, kind, description, position)

    def shifted(self, offset: int) -> DecodeError:
        """Move the error's position by ``offset`` bytes (used for entries of a batch)."""
        if self.position is not None:
            self.position += offset
        return self

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"DecodeError({self.code}, {self.kind!r}, {self.description!r}, {self.position})"


def line_column(data: bytes, position: int) -> tuple[int, int]:
    """1-based line and byte column of ``position`` within ``data`` (DESIGN 2.2)."""
    end = min(position, len(data))
    line = 1 + data.count(b"\n", 0, end)
    line_start = data.rfind(b"\n", 0, end) + 1
    return line, position - line_start + 1


def describe_found(data: bytes, position: int) -> str:
    """``'x'`` for printable ASCII, ``U+XXXX`` otherwise, ``end of input`` past the end."""
    if position >= len(data):
        return "end of input"
    b = data[position]
    if 0x21 <= b <= 0x7E:
        return f"'{chr(b)}'"
    if b < 0x80:
        return f"U+{b:04X}"
    # The input was checked to be UTF-8 before the grammar runs, but stay total anyway.
    width = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
    try:
        ch = data[position : position + width].decode("utf-8")
        return f"U+{ord(ch[0]):04X}"
    except UnicodeDecodeError:
        return f"U+{b:04X}"


# JSON type names used in descriptions (rust: `JsonType` and `JsonType::name`).
OBJECT = "object"
ARRAY = "array"
STRING = "string"
NUMBER = "number"
BOOLEAN = "boolean"
NULL = "null"


def describe_value(data: bytes, ty: str, start: int, end: int) -> str:
    """``{value}`` of DESIGN 5: short literal text for strings and numbers, names otherwise."""
    if ty is OBJECT or ty is ARRAY or ty is NULL:
        return ty
    text = data[start:end]
    if ty is BOOLEAN:
        return text.decode("utf-8", "replace")
    if len(text) <= 32:
        return f"{ty} {text.decode('utf-8', 'replace')}"
    return ty


def to_python(
    err: DecodeError,
    doc: Optional[bytes],
    *,
    line: Optional[int] = None,
    raw: Optional[bytes] = None,
) -> PyDecodeError:
    """Build the public exception. With ``line`` (a FrameDecoder line), ``lineno`` is that line and
    ``colno = position + 1``; otherwise both come from ``doc`` (DESIGN 2.2)."""
    position = err.position
    if position is None:
        lineno = colno = None
    elif line is not None:
        lineno, colno = line, position + 1
    elif doc is not None:
        lineno, colno = line_column(doc, position)
    else:
        lineno, colno = 1, position + 1
    return PyDecodeError(
        err.description,
        code=err.code,
        kind=err.kind,
        position=position,
        lineno=lineno,
        colno=colno,
        line=line,
        raw=raw,
    )


def encode_error(kind: str, description: str, path: str) -> PyEncodeError:
    """The public exception for a value ``dumps`` cannot write (DESIGN 3)."""
    return PyEncodeError(description, path=path, kind=kind)
