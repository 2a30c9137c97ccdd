"""The state engine's whole per-frame loop, once: bytes in (through the store's framer), an
ordered list of outcomes out. Each frame is parsed, checked by the strict schema check when there
is one (``schema/stream.py``) and applied to the store (``ToolCallStore._dispatch``, Rust's
``Store::apply``); a batch's entries are checked and applied one by one, each outcome in entry
order, their errors at frame positions. ``ToolCallStore.apply`` / ``feed`` / ``finish`` call the
functions here; the proxy's Python loop goes through ``feed``.

Mirror of ``rust/engine.rs``, function for function: ``feed``, ``finish``, ``line_frame``,
``frame``, ``message``, ``apply_parsed``. Differences on purpose: the outcomes are the Python
objects themselves (Rust gives ``Item``s that its binding turns into objects); a frame is parsed
with orjson first (``feed`` inlines the common case: one message whose update has a rule), and
the scanner's exact reading only for what orjson refuses or reads inexactly; ``entries`` (a
decoded ``Batch`` given to ``apply``) is Rust's binding's loop over ``message``.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, cast

import orjson

from ..errors import DecodeError as PyDecodeError
from .encoder import dumps
from .error import DecodeError, to_python
from .framing import _BLANK, _BLANK_START, too_large
from .message import Message, decode_frame, decode_value, message_or_none, one_frame
from .scanner import array_items, parse_exact, skip_ws
from .state.read import BAD_SID, Bad, exactly, recheck, state_error
from .state.records import Change

__all__ = ["feed", "finish", "line_frame", "frame", "message", "entries", "apply_parsed"]

_orjson_loads = orjson.loads
_orjson_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
# `dumps` takes any JSON value (typed here for the calls below).
_dumps: Callable[[Any], bytes] = dumps


def feed(store: Any, data: bytes, source: Any, changes: bool) -> List[Any]:
    """``ToolCallStore.feed`` after its argument checks: the lines of the store's ``Framer`` (one
    split of the whole feed, as ``FrameDecoder.feed`` takes them), each frame's outcomes in order
    (only the DecodeErrors with ``changes`` false). The common case, one message, is applied here
    directly (``_dispatch``'s session/update branch inlined: most frames)."""
    framer = store._framer
    out: List[Any] = []
    split = framer._feed(data, out)
    if split is None:
        return out
    parts, tail, line = split[0], split[1], split[2]
    limit = framer.max_frame_bytes
    blank_start = _BLANK_START
    append = out.append
    loads = _orjson_loads
    message_of = message_or_none
    dispatch = store._dispatch
    updates = store._updates
    unknown = store._unknown
    dumps_ = _orjson_dumps
    strict = store._strict
    for frame_ in parts:
        line += 1
        if not frame_:
            continue
        if len(frame_) > limit:
            append(too_large(limit, line))
            continue
        if frame_[-1] == 13:  # \r
            frame_ = frame_[:-1]
            if not frame_:
                continue
        if frame_[0] in blank_start and not frame_.strip(_BLANK):
            continue
        try:
            value = loads(frame_)
        except _JSONDecodeError:
            line_frame(store, decode_frame(frame_, line), out, changes, source)
            updates = store._updates
            continue
        if type(value) is dict:
            m: Any = message_of(frame_, value, line)
            if m is not None:
                if strict is not None:
                    refused = strict.check(frame_, False, source, line)
                    if refused is not None:
                        append(refused)
                        continue
                try:
                    if m._method == "session/update" and m._kind == "notification":
                        # `_dispatch`'s start, inlined: a new frame (evict.py)
                        store._tick += 1
                        update_fn = updates.get(m._update_kind, unknown)
                        if update_fn is None:
                            continue
                        sid = m._session_id
                        if sid is None:
                            raise BAD_SID
                        # read.exactly, inlined
                        try:
                            dumped = dumps_(value)
                        except TypeError:
                            dumped = None
                        if dumped != frame_:
                            value = recheck(frame_, value, dumped)
                        change = update_fn(store, sid, value["params"]["update"])
                    else:
                        change = dispatch(value, m, source, frame_)
                        updates = store._updates  # a response may change the version in force
                except Bad as bad:
                    err = state_error(bad, frame_, skip_ws(frame_, 0))
                    append(to_python(err, frame_, line=line, raw=frame_))
                    continue
                if change is not None and changes:
                    append(change)
                continue
        elif type(value) is list and value:
            collect(apply_parsed(store, frame_, value, None, source, line), out, changes)
            updates = store._updates
            continue
        append(decode_value(frame_, value, line))
    if tail:
        framer._buffer_tail(tail, out)
    return out


def finish(store: Any, source: Any, changes: bool) -> List[Any]:
    """End of input: the outcomes of a last line that has no newline."""
    out: List[Any] = []
    for line, data in store._framer._end():
        line_frame(store, decode_frame(data, line), out, changes, source)
    return out


def line_frame(store: Any, decoded: Any, out: List[Any], changes: bool, source: Any) -> None:
    """Add to ``out`` the outcomes of one line of a stream that orjson refused, as the scanner
    decoded it (``decoded``: its Message, Batch or DecodeError)."""
    t = type(decoded)
    if t is PyDecodeError:
        out.append(decoded)
        return
    if t is Message:
        collect([message(store, decoded, source, False, decoded._line)], out, changes)
        return
    data = decoded.raw
    collect(apply_parsed(store, data, parse_exact(data), decoded, source, decoded.line), out, changes)


def collect(result: Any, out: List[Any], changes: bool) -> None:
    """Add the outcomes ``result`` (a list, or the DecodeError of a frame refused as a whole) to
    ``out``: every DecodeError, and the Changes when ``changes``."""
    if type(result) is PyDecodeError:
        out.append(result)
        return
    for r in result:
        if r is not None and (changes or type(r) is not Change):
            out.append(r)


def frame(store: Any, data: Any, source: Any) -> Any:
    """``ToolCallStore.apply`` of one frame given as bytes, str, a dict or a list (not a stream's
    line: errors carry no line): a Change or None, a list for a batch; raises the DecodeError of a
    frame refused as a whole."""
    if isinstance(data, (list, dict)):
        data = _dumps(data)
    data = one_frame(data, "apply")
    try:
        value = _orjson_loads(data)
    except _JSONDecodeError:
        result = decode_frame(data, None)
        if type(result) is PyDecodeError:
            raise result from None
        if type(result) is Message:
            return message(store, result, source, True, None)
        return _batch_results(apply_parsed(store, data, parse_exact(data), result, source, None))
    if type(value) is dict:
        m = message_or_none(data, value, None)
        if m is not None:
            if store._strict is not None:
                refused = store._strict.check(data, False, source, None)
                if refused is not None:
                    raise refused
            try:
                return store._dispatch(value, m, source, data)
            except Bad as bad:
                raise to_python(state_error(bad, data, skip_ws(data, 0)), data, raw=data) from None
    elif type(value) is list and value:
        return _batch_results(apply_parsed(store, data, value, None, source, None))
    raise cast(PyDecodeError, decode_value(data, value, None))  # an error here


def message(store: Any, m: Any, source: Any, raise_errors: bool, line: Optional[int]) -> Any:
    """One message already decoded (its raw re-parsed exactly): checked and applied. Its Change or
    None, or its DecodeError (raised when ``raise_errors``; ``line``: the stream line, or None)."""
    raw = m._raw
    if store._strict is not None:
        refused = store._strict.check(raw, False, source, line)
        if refused is not None:
            if raise_errors:
                raise refused
            return refused
    try:
        return store._dispatch(parse_exact(raw), m, source, raw)
    except Bad as bad:
        err = to_python(state_error(bad, raw, skip_ws(raw, 0)), raw, line=line, raw=raw)
        if raise_errors:
            raise err from None
        return err


def entries(store: Any, items: List[Any], source: Any) -> List[Any]:
    """A Batch (or list) of Messages and DecodeErrors given to ``apply``: one result per entry,
    each Message applied on its own (error positions within the entry)."""
    out = []
    for entry in items:
        if type(entry) is Message:
            out.append(message(store, entry, source, False, None))
        elif isinstance(entry, PyDecodeError):
            out.append(entry)
        else:
            raise TypeError(
                f"expected the entries of a decoded batch (Message or DecodeError), found {type(entry).__name__}"
            )
    return out


def apply_parsed(store: Any, data: bytes, value: Any, batch: Any, source: Any, line: Optional[int]) -> Any:
    """Check and apply the entries of a batch frame whose parsed value is ``value`` (``batch``:
    its decoded Batch when known). The list of results, or the frame's DecodeError (with
    ``strict_schema``: also when the schema check refuses the frame as a whole; an entry it
    refuses is reported in place of that entry's result)."""
    if batch is None:
        batch = decode_value(data, value, line)
        if type(batch) is PyDecodeError:
            return batch
    if store._v2:
        return no_batches(data, line)
    refused = None
    if store._strict is not None:
        refused = store._strict.check(data, True, source, line)
        if type(refused) is PyDecodeError:
            return refused
    value = exactly(data, value)
    out: List[Any] = []
    items = None
    dispatch = store._dispatch
    for i, entry in enumerate(batch):
        if type(entry) is not Message:
            out.append(entry)
            continue
        if refused is not None and refused[i] is not None:
            out.append(refused[i])
            continue
        try:
            out.append(dispatch(value[i], entry, source, None))
        except Bad as bad:
            # Offsets in the whole frame; raw = the entry's bytes (as -32600 entry errors).
            if items is None:
                items = array_items(data, skip_ws(data, 0))
            _, start, end = items[i]
            out.append(to_python(state_error(bad, data, start), data, line=line, raw=data[start:end]))
    return out


def no_batches(data: bytes, line: Optional[int]) -> Any:
    """A batch under protocol v2, which has none: one error for the frame (-32600, at its ``[``),
    as the official SDKs answer it; nothing of it is checked or applied."""
    description = "expected one message, found a batch (protocol v2 has no batches)"
    error = DecodeError.invalid("batch_in_v2", description, skip_ws(data, 0))
    return to_python(error, data, line=line, raw=data)


def _batch_results(result: Any) -> List[Any]:
    """``apply``'s answer for a batch frame: the results of its entries, or its DecodeError raised
    (the frame refused as a whole)."""
    if type(result) is PyDecodeError:
        raise result
    return cast(List[Any], result)
