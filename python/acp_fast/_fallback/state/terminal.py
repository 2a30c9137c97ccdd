"""Terminals (v2 agent-owned, applied whatever the version): ``terminal_update`` (upsert with v2
rules) and ``terminal_output_chunk`` (append bytes), DESIGN 7.4. Keyed by (session, terminalId),
a namespace apart from tool calls.

Mirror of ``rust/state/terminal.rs``. Differences on purpose: here a terminal keeps its fields (but
the output bytes) in a dict of parsed values, patched from orjson's dict; Rust classifies the
update's members into the terminal's slots.
"""

from __future__ import annotations

from typing import Any, Dict

from .entity import merge_meta
from .evict import touch_terminal, trim_output
from .read import Bad, U, base64_decode, text
from .records import Change, Store, Terminal

__all__ = ["terminal_chunk", "terminal_update"]

# terminal_update members that are not stored as fields (`outputMeta` derives from `output._meta`;
# `_truncated` is the marker of the output bound, DESIGN 7.8).
_NOT_FIELDS = frozenset(("sessionUpdate", "terminalId", "output", "outputMeta", "_truncated"))


def terminal_update(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """``terminal_update``: omitted = unchanged, null = unset (``output: null`` empties the bytes
    and unsets ``outputMeta``), a value replaces; ``output.data`` (base64) replaces all bytes and
    ``output._meta`` becomes ``outputMeta``."""
    tid = text(update.get("terminalId"))
    if type(tid) is not str:
        raise Bad("invalid_terminal_id", U + ("terminalId",), "a string")
    output = update.get("output")
    data = None
    if output is not None:
        if type(output) is not dict:
            raise Bad("invalid_output", U + ("output",), "an object or null")
        data = base64_decode(text(output.get("data")))
        if data is None:
            raise Bad("invalid_base64", U + ("output", "data"), "base64 text")
    es = update.get("exitStatus")
    if es is not None and type(es) is not dict:
        raise Bad("invalid_exit_status", U + ("exitStatus",), "an object or null")
    s = store._session(sid)
    terms = s.terminals
    term = terms.get(tid)
    created = term is None
    if term is None:
        term = terms[tid] = Terminal()
    f = term.fields
    skip = _NOT_FIELDS
    for k, v in update.items():
        if k in skip:
            if k == "output":
                if v is None:
                    term.set_output(b"")
                    f.pop("outputMeta", None)
                else:
                    term.set_output(data or b"")  # data: the bytes of output.data
                    trim_output(term, store._max_terminal_bytes)
                    meta = v.get("_meta")
                    if meta is None:
                        f.pop("outputMeta", None)
                    else:
                        f["outputMeta"] = meta
        elif v is None:
            if k in f:
                del f[k]
        elif k == "_meta" and type(v) is dict:
            # `_meta` objects patch the stored one by top-level key (v2)
            old = f.get("_meta")
            f["_meta"] = merge_meta(old if type(old) is dict else None, v)
        else:
            f[k] = v
    if store._max_terminals is not None and (created or (not term.queued and "exitStatus" in f)):
        touch_terminal(store, s, tid, term, created)
    return Change(sid, "terminal", tid, "created" if created else "updated", None)


def terminal_chunk(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """``terminal_output_chunk``: the base64 ``data`` decoded and appended (the chunk's other
    members are not stored); the output then keeps its last ``max_terminal_bytes`` bytes."""
    tid = text(update.get("terminalId"))
    if type(tid) is not str:
        raise Bad("invalid_terminal_id", U + ("terminalId",), "a string")
    data = base64_decode(text(update.get("data")))
    if data is None:
        raise Bad("invalid_base64", U + ("data",), "base64 text")
    s = store._session(sid)
    terms = s.terminals
    term = terms.get(tid)
    action = "appended"
    if term is None:
        term = terms[tid] = Terminal()
        action = "created"
    term.output += data
    limit = store._max_terminal_bytes
    if limit is not None and len(term.output) - term.start > limit:
        trim_output(term, limit)
    if action == "created" and store._max_terminals is not None:
        touch_terminal(store, s, tid, term, True)
    return Change(sid, "terminal", tid, action, None)
