"""JSON writing rules (DESIGN 4): orjson on the fast path, and the walk that finds the exact
EncodeError (kind, description, path) or writes what orjson refused but our rules allow
(integers beyond 64 bits, float / tuple / UUID subclasses, nesting deeper than orjson's 254
levels).

Mirror of ``rust/encoder.rs``: ``MAX_DEPTH`` (the scanner's, as there) and ``render_path``, in its
order. Differences on purpose: its byte-level writers (``write_str``, ``write_units``,
``write_i64``, ``write_u64``, ``write_f64``) are orjson's here, an error path is a list of str keys
and int indices (rust: ``PathItem``), and its ``descend`` (stack growth for its recursion) has no
counterpart. The walk after ``render_path`` mirrors the writer of ``rust/python/convert.rs``
(``surrogate_failure``, ``write_str_object``, ``write``, ``write_int``, ``write_float``, then
``dumps``), except that here ``write`` is a loop with a stack of the open containers (it does the
work of Rust's ``write_list`` / ``write_dict``; Python's recursion limit would stop a recursive
walk before ``MAX_DEPTH``) and ``_write`` writes one value or hands back the items of a
container. Two helpers of its own: ``_default`` (orjson's hook for ``Message``) and
``has_non_finite`` (orjson writes NaN and infinities as null).
"""

from __future__ import annotations

import enum
import math
import re
import uuid
from typing import Any, Iterable, Iterator, List, Optional, Type, Union

import orjson

from .error import encode_error
from .scanner import MAX_DEPTH

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "render_path", "write", "has_non_finite", "dumps"]

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
_DICT_ITEMS: Type[Iterator[Any]] = type(iter({}.items()))
# What the iterator of an open container gives when it is done.
_END = object()

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


def _path(stack: List[List[Any]]) -> str:
    """The rendered path of the value being written: each open container's current item (a dict
    keeps its key in its entry; a list's index is its count of items begun less one)."""
    return render_path([top[3] if top[1] else top[2] - 1 for top in stack])


def _surrogate_failure(s: str, stack: List[List[Any]]) -> Exception:
    m = _SURROGATE.search(s)
    cp = ord(m.group()) if m else 0xD800
    return encode_error(
        "invalid_str", f"expected a str encodable as UTF-8, found unpaired surrogate U+{cp:04X}", _path(stack)
    )


def _write_str_object(s: str, out: List[bytes], stack: List[List[Any]]) -> None:
    try:
        out.append(_orjson_dumps(s))
    except TypeError:
        raise _surrogate_failure(s, stack) from None


def write(obj: Any, max_depth: int = MAX_DEPTH) -> bytes:
    """The walk: write ``obj`` by the rules of DESIGN 4, or raise the first EncodeError in
    document order (depth-first, keys before values, items in order). A loop over a stack of the
    open containers, not recursion, so that ``max_depth`` levels (more than ``MAX_DEPTH`` for a
    checkpoint only) are written on any thread whatever the recursion limit."""
    out: List[bytes] = []
    append = out.append
    write_one = _write
    dump = _orjson_dumps
    # The open containers, innermost last: [its items, is a dict, items begun so far, the key of
    # the current item (dicts)]. The path of an error is read from it (`_path`).
    stack: List[List[Any]] = []
    inner = write_one(obj, out, stack)
    if inner is None:
        return b"".join(out)
    while True:
        if inner is not None:
            if len(stack) >= max_depth:
                raise encode_error("depth_limit", f"nesting deeper than {max_depth} levels", _path(stack))
            if type(inner) is _DICT_ITEMS:
                append(b"{")
                stack.append([inner, True, 0, None])
            else:
                append(b"[")
                stack.append([inner, False, 0, None])
        # The items of the innermost open container, up to the next container among them (its
        # iterator takes up where it stopped when the inner one is done). Exact str, dict and list
        # items are taken here, the rest by `_write`: a call less per item (as fast as the
        # recursive walk was).
        top = stack[-1]
        n = top[2]
        inner = None
        if top[1]:
            for k, v in top[0]:
                if type(k) is not str:
                    del stack[-1]  # the path of the dict itself
                    raise encode_error("non_str_key", f"expected str dict keys, found {type(k).__name__}", _path(stack))
                if n:
                    append(b",")
                n += 1
                try:
                    append(dump(k))
                except TypeError:
                    del stack[-1]
                    raise _surrogate_failure(k, stack) from None
                append(b":")
                top[3] = k
                t = type(v)
                if t is str:
                    try:
                        append(dump(v))
                        continue
                    except TypeError:
                        raise _surrogate_failure(v, stack) from None
                top[2] = n
                if t is dict:
                    inner = iter(dict.items(v))
                    break
                if t is list:
                    inner = iter(v)
                    break
                inner = write_one(v, out, stack)
                if inner is not None:
                    break
            else:
                append(b"}")
        else:
            for v in top[0]:
                if n:
                    append(b",")
                n += 1
                top[2] = n
                t = type(v)
                if t is str:
                    try:
                        append(dump(v))
                        continue
                    except TypeError:
                        raise _surrogate_failure(v, stack) from None
                if t is dict:
                    inner = iter(dict.items(v))
                    break
                if t is list:
                    inner = iter(v)
                    break
                inner = write_one(v, out, stack)
                if inner is not None:
                    break
            else:
                append(b"]")
        if inner is None:
            stack.pop()
            if not stack:
                return b"".join(out)


def _write(obj: Any, out: List[bytes], stack: List[List[Any]]) -> Optional[Iterator[Any]]:
    """Write a scalar; for a container, return an iterator over its items (a dict's over
    ``dict.items``, so that subclasses' overrides are not called) for ``write`` to open."""
    while True:
        t = type(obj)
        if t is str:
            _write_str_object(obj, out, stack)
        elif t is dict:
            return iter(dict.items(obj))
        elif t is list or t is tuple:
            items: Iterator[Any] = iter(obj)
            return items
        elif t is bool:
            out.append(b"true" if obj else b"false")
        elif t is int:
            _write_int(obj, out, stack)
        elif t is float:
            _write_float(obj, out, stack)
        elif obj is None:
            out.append(b"null")
        elif t is _message_type:
            out.append(obj.raw)
        elif isinstance(obj, enum.Enum):
            obj = obj.value
            continue
        elif isinstance(obj, str):
            _write_str_object(str.__str__(obj), out, stack)
        elif isinstance(obj, int):
            _write_int(obj, out, stack)
        elif isinstance(obj, float):
            _write_float(obj, out, stack)
        elif isinstance(obj, dict):
            return iter(dict.items(obj))
        elif isinstance(obj, list):
            return list.__iter__(obj)
        elif isinstance(obj, tuple):
            return tuple.__iter__(obj)
        elif t is _Fragment:
            out.append(_orjson_dumps(obj))
        elif isinstance(obj, uuid.UUID):
            out.append(b'"' + uuid.UUID.__str__(obj).encode("ascii") + b'"')
        else:
            raise encode_error(
                "unsupported_type",
                f"expected dict, list, tuple, str, int, float, bool or None, found {t.__name__}",
                _path(stack),
            )
        return None


def _write_int(v: int, out: List[bytes], stack: List[List[Any]]) -> None:
    v = int(v)
    if _I64_MIN <= v <= _U64_MAX:
        out.append(_orjson_dumps(v))
        return
    if -_INT_LIMIT < v < _INT_LIMIT:
        out.append(int.__repr__(v).encode("ascii"))
        return
    raise encode_error(
        "int_too_large", f"expected an int of at most {MAX_INT_DIGITS} digits, found a larger one", _path(stack)
    )


def _write_float(v: float, out: List[bytes], stack: List[List[Any]]) -> None:
    v = float(v)
    if not math.isfinite(v):
        raise encode_error("non_finite_float", f"expected a finite float, found {float.__repr__(v)}", _path(stack))
    out.append(_orjson_dumps(v))


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
        items: Iterable[Any] = dict.values(obj)
    elif isinstance(obj, list):
        items = list.__iter__(obj)
    elif isinstance(obj, tuple):
        items = tuple.__iter__(obj)
    else:
        return False
    # A loop, not any() over a generator: that would take C stack per level (orjson took the value,
    # so it nests at most 254 levels, but maybe on a small thread stack).
    for v in items:  # noqa: SIM110 - as above
        if has_non_finite(v):
            return True
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
