"""JSON writing rules (DESIGN 4): orjson on the fast path, and the walk that finds the exact
EncodeError (kind, description, path) or writes what orjson refused but our rules allow
(integers beyond 64 bits, float / tuple / UUID subclasses).

Mirror of ``rust/encoder.rs``: ``MAX_DEPTH`` and ``render_path``, in its order. Differences on
purpose: its byte-level writers (``write_str``, ``write_units``, ``write_i64``, ``write_u64``,
``write_f64``) are orjson's here, and an error path is a list of str keys and int indices (rust:
``PathItem``). The walk after ``render_path`` mirrors the writer of ``rust/python/convert.rs``
(``surrogate_failure``, ``write_str_object``, ``write``, ``write_int``, ``write_float``,
``write_list``, ``write_dict``, then ``dumps``), with two helpers of its own: ``_default`` (orjson's
hook for ``Message``) and ``has_non_finite`` (orjson writes NaN and infinities as null).
"""

from __future__ import annotations

import enum
import math
import re
import uuid
from typing import Any, List, Union

import orjson

from .error import encode_error

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "render_path", "write", "has_non_finite", "dumps"]

#: Deepest nesting written (orjson's limit): a container 255 levels deep is refused.
MAX_DEPTH = 254
#: Longest int written, in decimal digits.
MAX_INT_DIGITS = 4300

_INT_LIMIT = 10**MAX_INT_DIGITS
_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
_orjson_dumps = orjson.dumps
_Fragment = orjson.Fragment

# Set by the package __init__ once message.py is imported (avoids an import cycle).
_message_type: Any = None


def render_path(path: List[Union[str, int]]) -> str:
    """``$``, ``.key`` for identifier-like keys, ``["key"]`` otherwise, ``[3]`` for indices."""
    parts = ["$"]
    for p in path:
        if isinstance(p, int):  # indices are ints, keys exact strs (others were refused)
            parts.append(f"[{p}]")
        elif _IDENT.match(p):
            parts.append(f".{p}")
        else:
            parts.append(f"[{_orjson_dumps(p).decode('utf-8')}]")
    return "".join(parts)


def _surrogate_failure(s: str, path: List[Union[str, int]]) -> Exception:
    m = _SURROGATE.search(s)
    cp = ord(m.group()) if m else 0xD800
    return encode_error(
        "invalid_str", f"expected a str encodable as UTF-8, found unpaired surrogate U+{cp:04X}", render_path(path)
    )


def _write_str_object(s: str, out: List[bytes], path: List[Union[str, int]]) -> None:
    try:
        out.append(_orjson_dumps(s))
    except TypeError:
        raise _surrogate_failure(s, path) from None


def write(obj: Any) -> bytes:
    """The walk: write ``obj`` by the rules of DESIGN 4, or raise the first EncodeError in
    document order (depth-first, keys before values, items in order)."""
    out: List[bytes] = []
    _write(obj, out, [], 0)
    return b"".join(out)


def _write(obj: Any, out: List[bytes], path: List[Union[str, int]], depth: int) -> None:
    t = type(obj)
    if t is str:
        _write_str_object(obj, out, path)
    elif t is dict:
        _write_dict(obj, out, path, depth)
    elif t is list or t is tuple:
        _write_list(obj, out, path, depth)
    elif t is bool:
        out.append(b"true" if obj else b"false")
    elif t is int:
        _write_int(obj, out, path)
    elif t is float:
        _write_float(obj, out, path)
    elif obj is None:
        out.append(b"null")
    elif t is _message_type:
        out.append(obj.raw)
    elif isinstance(obj, enum.Enum):
        _write(obj.value, out, path, depth)
    elif isinstance(obj, str):
        _write_str_object(str.__str__(obj), out, path)
    elif isinstance(obj, int):
        _write_int(obj, out, path)
    elif isinstance(obj, float):
        _write_float(obj, out, path)
    elif isinstance(obj, dict):
        _write_dict(obj, out, path, depth)
    elif isinstance(obj, list):
        _write_list(list.__iter__(obj), out, path, depth)
    elif isinstance(obj, tuple):
        _write_list(tuple.__iter__(obj), out, path, depth)
    elif isinstance(obj, uuid.UUID):
        out.append(b'"' + uuid.UUID.__str__(obj).encode("ascii") + b'"')
    else:
        raise encode_error(
            "unsupported_type",
            f"expected dict, list, tuple, str, int, float, bool or None, found {t.__name__}",
            render_path(path),
        )


def _write_int(v: int, out: List[bytes], path: List[Union[str, int]]) -> None:
    v = int(v)
    if _I64_MIN <= v <= _U64_MAX:
        out.append(_orjson_dumps(v))
        return
    if -_INT_LIMIT < v < _INT_LIMIT:
        out.append(int.__repr__(v).encode("ascii"))
        return
    raise encode_error(
        "int_too_large", f"expected an int of at most {MAX_INT_DIGITS} digits, found a larger one", render_path(path)
    )


def _write_float(v: float, out: List[bytes], path: List[Union[str, int]]) -> None:
    v = float(v)
    if not math.isfinite(v):
        raise encode_error("non_finite_float", f"expected a finite float, found {float.__repr__(v)}", render_path(path))
    out.append(_orjson_dumps(v))


def _enter(depth: int, path: List[Union[str, int]]) -> int:
    depth += 1
    if depth > MAX_DEPTH:
        raise encode_error("depth_limit", f"nesting deeper than {MAX_DEPTH} levels", render_path(path))
    return depth


def _write_list(items: Any, out: List[bytes], path: List[Union[str, int]], depth: int) -> None:
    depth = _enter(depth, path)
    out.append(b"[")
    for i, v in enumerate(items):
        if i:
            out.append(b",")
        path.append(i)
        _write(v, out, path, depth)
        path.pop()
    out.append(b"]")


def _write_dict(d: Any, out: List[bytes], path: List[Union[str, int]], depth: int) -> None:
    depth = _enter(depth, path)
    out.append(b"{")
    first = True
    for k, v in dict.items(d):
        if type(k) is not str:
            raise encode_error("non_str_key", f"expected str dict keys, found {type(k).__name__}", render_path(path))
        if not first:
            out.append(b",")
        first = False
        _write_str_object(k, out, path)
        out.append(b":")
        path.append(k)
        _write(v, out, path, depth)
        path.pop()
    out.append(b"}")


def _default(obj: Any) -> Any:
    if type(obj) is _message_type:
        return _Fragment(obj.raw)
    raise TypeError


def has_non_finite(obj: Any) -> bool:
    """Does an object orjson accepted hold a NaN / infinite float (written as null)?"""
    t = type(obj)
    if t is dict:
        for v in obj.values():  # noqa: SIM110 - a loop: no generator for the common types
            if has_non_finite(v):
                return True
        return False
    if t is list or t is tuple:
        for v in obj:  # noqa: SIM110 - as above
            if has_non_finite(v):
                return True
        return False
    if t is float:
        return not math.isfinite(obj)
    if t is str or t is int or t is bool or obj is None or t is _message_type:
        return False
    if isinstance(obj, enum.Enum):
        return has_non_finite(obj.value)
    if isinstance(obj, float):
        return not math.isfinite(obj)
    if isinstance(obj, dict):
        return any(has_non_finite(v) for v in dict.values(obj))
    if isinstance(obj, list):
        return any(has_non_finite(v) for v in list.__iter__(obj))
    if isinstance(obj, tuple):
        return any(has_non_finite(v) for v in tuple.__iter__(obj))
    return False


def dumps(obj):  # type: (Any) -> bytes  # a comment, so that the signature reads as the native one
    """``acp_fast.dumps``: compact UTF-8 JSON, byte-identical to orjson where both accept."""
    try:
        out = _orjson_dumps(obj, default=_default, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        return write(obj)
    if b"null" in out and has_non_finite(obj):
        # orjson wrote NaN / Infinity as null: the walk raises at the first bad value.
        return write(obj)
    return out
