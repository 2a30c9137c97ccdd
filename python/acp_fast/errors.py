"""The one exception hierarchy of acp-fast, shared by the Rust core and the fallback.

Both backends raise these very classes (the native module imports them), and both build their
messages through the constructors here, so the text of an error never depends on the backend.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Tuple

__all__ = ["AcpError", "DecodeError", "EncodeError"]


class AcpError(ValueError):
    """Base class of every error acp-fast raises for bad input."""


class DecodeError(AcpError, json.JSONDecodeError):
    """A frame or JSON document could not be decoded.

    ``code`` is the JSON-RPC error code to answer with (-32700 parse error, -32600 invalid
    request); ``kind`` is a stable snake_case id to match on; ``position`` is the byte offset of
    the problem within the frame (or document); ``line`` is the 1-based line number within the
    stream when the error came from a [`FrameDecoder`][acp_fast.FrameDecoder]; ``raw`` holds the offending line's
    bytes when they were kept. ``lineno``/``colno``/``pos``/``msg``/``doc`` keep code written for
    ``json.JSONDecodeError`` working (columns count bytes).
    """

    # json.JSONDecodeError declares these as int; here they are None when the error has no byte
    # position (a str with an unpaired surrogate, DESIGN 5), so the type is wider on purpose.
    pos: Optional[int]  # type: ignore[assignment]
    lineno: Optional[int]  # type: ignore[assignment]
    colno: Optional[int]  # type: ignore[assignment]

    def __init__(
        self,
        description: str,
        *,
        code: int = -32700,
        kind: str = "invalid_json",
        position: Optional[int] = None,
        lineno: Optional[int] = None,
        colno: Optional[int] = None,
        line: Optional[int] = None,
        raw: Optional[bytes] = None,
    ) -> None:
        message = description if lineno is None else f"{description} at line {lineno} column {colno}"
        ValueError.__init__(self, message)
        self.message: str = message
        """The whole message: the description, and the line and column when known (``str(error)``)."""
        self.msg = description
        self.doc = ""
        self.pos = position
        self.position: Optional[int] = position
        """The byte offset of the problem within the frame or document (None when unknown)."""
        self.lineno = lineno
        self.colno = colno
        self.code: int = code
        """The JSON-RPC error code to answer with: -32700 (parse error), -32600 (invalid request),
        -32602 (schema problems)."""
        self.kind: str = kind
        """A stable snake_case id to match on (``unexpected_character``, ``missing_jsonrpc``, ``frame_too_large``,
        ``schema``, ...)."""
        self.line: Optional[int] = line
        """The 1-based line number within the stream, when the error came from a
        [`FrameDecoder`][acp_fast.FrameDecoder] (or a [`Framer`][acp_fast.Framer])."""
        self.raw: Optional[bytes] = raw
        """The offending line's bytes, when they were kept."""

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"DecodeError({self.message!r}, code={self.code}, kind={self.kind!r}, position={self.position}, line={self.line})"

    def __reduce__(self) -> Any:
        return (
            _rebuild_decode_error,
            (self.msg, self.code, self.kind, self.position, self.lineno, self.colno, self.line, self.raw),
        )

    def _key(self) -> Tuple[Any, ...]:
        return (self.code, self.kind, self.message, self.position, self.line, self.raw)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _rebuild_decode_error(
    msg: str,
    code: int,
    kind: str,
    position: Optional[int],
    lineno: Optional[int],
    colno: Optional[int],
    line: Optional[int],
    raw: Optional[bytes],
) -> DecodeError:
    return DecodeError(msg, code=code, kind=kind, position=position, lineno=lineno, colno=colno, line=line, raw=raw)


class EncodeError(AcpError, TypeError):
    """A Python object cannot be written as JSON. ``path`` says where (``$.params.items[3]``)."""

    def __init__(self, description: str, *, path: str = "$", kind: str = "unsupported_type") -> None:
        message = f"{description} at {path}"
        ValueError.__init__(self, message)
        self.message: str = message
        """The description and where (``str(error)``)."""
        self.msg = description
        self.path: str = path
        """Where in the object the problem is, as a JSON path (``$.params.items[3]``)."""
        self.kind: str = kind
        """A stable snake_case id to match on (``unsupported_type``, ``non_finite_float``, ...)."""

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (_rebuild_encode_error, (self.msg, self.path, self.kind))


def _rebuild_encode_error(msg: str, path: str, kind: str) -> EncodeError:
    return EncodeError(msg, path=path, kind=kind)
