"""The bounds (DESIGN 7.8). ``LIMITS`` are the bounds inside a session, each applied where its
list grows: ``trim_front`` (unknown updates), ``set_content`` and ``content_chunk`` (a tool call's
content), ``trim_output`` (a terminal's output, from a UTF-8 character boundary),
``trim_permissions`` (a session's permission records; ``drop_permission``), ``touch_terminal``
and ``trim_terminals`` (a session's terminals), and ``plan.py`` for plans; each counts what it
drops.

Terminals: after a frame creates a terminal and its session holds more than ``max_terminals``, the
oldest (first created) terminal of the session that has exited (an ``exitStatus`` is set) is
dropped, else the oldest one; never the one the frame touched. As for tool calls below, each
terminal gets a creation number in its session and the exited ones are queued in a min-heap when a
frame leaves them exited (an entry whose terminal no longer is exited is dropped when it reaches
the top, and queued again when it is); the oldest one is the first key of the session's
OrderedDict (O(1)). Cost: O(1) per frame while no terminal of the session has exited, O(log n) per
terminal that exits and per drop of an exited one (n: its exited terminals, at most the bound). The
heap holds at most one entry per terminal retained: a terminal is dropped as the oldest only when
no other is queued.

Permission records: one list in request order across sessions (``store._permissions``, holes where
records were dropped, closed once they outnumber the records). Each session keeps a min-heap of the
indices of its resolved records (``Session.resolved``, pushed when a request is resolved): the
bound pops the oldest resolved one, O(log n) per record dropped whatever the number of pending
ones; closing the holes renumbers the records and refills the heaps (O(1) amortised). Plans: the
session's OrderedDict, the oldest first (O(1)).

The rest of this file is the ``max_tool_calls`` bound: after a frame creates a tool call and more than N are retained, the oldest (first created,
across sessions) tool call whose status is finished is dropped, else the oldest one; never the one
the frame touched.

The structure is the same in both backends. Each tool call gets a creation number, ``seq``, when it
is created. ``order`` holds (session, id) of each tool call in creation order, None once evicted:
the entry of ``seq`` is ``order[seq - order_base]``, and ``order_head`` is the first entry that may
still be live (all before it are None), so the oldest tool call is found by moving it forward.
``finished`` is a min-heap of the creation numbers of the tool calls found finished when a frame
touched them; an entry whose tool call was evicted, or is no longer finished (it is queued again
when it is), is dropped when it reaches the top. The evicted entries before ``order_head`` are cut
off once they are half of ``order`` (``order_base`` moves on); when the entries after it (holes
left by tool calls evicted out of creation order) or those of the heap outnumber the tool calls,
``compact`` renumbers the live tool calls 0, 1, 2, ... (same order). Memory follows the tool calls
retained.

Cost per frame, amortised: O(1) while no retained tool call is finished (the victim is at
``order_head``), whatever the number of unfinished ones; O(log n) for each tool call that finishes
and each eviction of a finished one (n: finished tool calls queued, at most the bound). O(1) for
any order of finishing would need an integer priority queue over creation numbers (a bitmap
hierarchy, say); not done.

Mirror of ``rust/state/evict.rs``. Differences on purpose: a tool call's content is deleted from the
front of its list here (``set_content``; a terminal's output keeps a start offset, as in Rust),
where Rust moves a start offset (``trim_content``); a record here is a plain dict, so the
store keeps each one's creation number and queued flag in ``_created`` ((session, id) -> [seq,
queued]); Rust keeps the number in the record (``ToolCall::seq``) and the flag in its ``order``
entry. Rust's ``Limits`` struct is ``LIMITS`` here, the store's attributes named there.
"""

from __future__ import annotations

from collections import OrderedDict
from heapq import heappop, heappush
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from .records import BYTES, Session, Store, Terminal, finished, held_len

__all__ = [
    "DEFAULT_MAX_CONTENT_ITEMS",
    "DEFAULT_MAX_PERMISSIONS",
    "DEFAULT_MAX_PLANS",
    "DEFAULT_MAX_TERMINAL_BYTES",
    "DEFAULT_MAX_TERMINALS",
    "DEFAULT_MAX_UPDATES",
    "DEFAULT_MAX_ENTITIES",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "DEFAULT_MAX_SESSIONS",
    "LIMITS",
    "activity_order",
    "order_sessions",
    "touch_session",
    "touch_session_id",
    "close_permission_holes",
    "compact",
    "drop_permission",
    "evict",
    "number_terminals",
    "push_permission",
    "set_content",
    "trim_content",
    "touch",
    "touch_terminal",
    "trim_front",
    "trim_output",
    "trim_order",
    "trim_permissions",
]

DEFAULT_MAX_TERMINAL_BYTES = 1 << 20
DEFAULT_MAX_CONTENT_ITEMS = 1000
DEFAULT_MAX_PLANS = 100
DEFAULT_MAX_PERMISSIONS = 1000
DEFAULT_MAX_UPDATES = 1000
DEFAULT_MAX_TERMINALS = 1000
DEFAULT_MAX_ENTITIES = 1000
DEFAULT_MAX_FILES = 1000
#: The default of ``max_tool_calls`` (and ``acp-fast proxy``'s): the tool calls kept across
#: sessions. Rust: ``DEFAULT_MAX_TOOL_CALLS``.
DEFAULT_MAX_TOOL_CALLS = 1000
#: The default of ``max_content_bytes``: the bytes of a tool call's content (its items' JSON text).
DEFAULT_MAX_CONTENT_BYTES = 1 << 20
#: The default of ``max_sessions`` (and ``acp-fast proxy``'s): the sessions kept in the store.
#: Rust: ``DEFAULT_MAX_SESSIONS``.
DEFAULT_MAX_SESSIONS = 1000

#: The bounds inside sessions (Rust: ``Limits``), in checkpoint order (DESIGN 7.8): (checkpoint
#: member, store attribute, smallest value: 1 for a count of records, 0 of items; default). A
#: checkpoint writes only those that are not the default.
LIMITS: Tuple[Tuple[str, str, int, Optional[int]], ...] = (
    ("maxTerminalBytes", "_max_terminal_bytes", 0, DEFAULT_MAX_TERMINAL_BYTES),
    ("maxContentItems", "_max_content_items", 0, DEFAULT_MAX_CONTENT_ITEMS),
    ("maxPlans", "_max_plans", 1, DEFAULT_MAX_PLANS),
    ("maxPermissions", "_max_permissions", 1, DEFAULT_MAX_PERMISSIONS),
    ("maxUpdates", "_max_updates", 0, DEFAULT_MAX_UPDATES),
    ("maxTerminals", "_max_terminals", 1, DEFAULT_MAX_TERMINALS),
    ("maxEntities", "_max_entities", 0, DEFAULT_MAX_ENTITIES),
    ("maxFiles", "_max_files", 0, DEFAULT_MAX_FILES),
    ("maxContentBytes", "_max_content_bytes", 0, DEFAULT_MAX_CONTENT_BYTES),
    ("maxSessions", "_max_sessions", 1, DEFAULT_MAX_SESSIONS),
)


def trim_front(items: Deque[Any], limit: Optional[int]) -> int:
    """Drop the oldest items of ``items`` while it holds more than ``limit``; how many were dropped."""
    dropped = 0
    if limit is not None:
        while len(items) > limit:
            items.popleft()
            dropped += 1
    return dropped


def set_content(f: Dict[str, Any], content: List[Any], limit: Optional[int], max_bytes: Optional[int]) -> None:
    """A tool call's ``content`` was set by an update (the list ``content``, already in ``f``): keep
    its last ``limit`` items, then within ``max_bytes`` (``trim_content``), its count of dropped
    items (``f["_truncated"]``) starting again. Rust: ``tool_call.rs``'s ``patch``."""
    f.pop("_truncated", None)
    if limit is not None and len(content) > limit:
        f["_truncated"] = len(content) - limit
        del content[: len(content) - limit]
    if max_bytes is not None:
        f[BYTES] = sum(held_len(item) for item in content)
        trim_content(f, content, None, max_bytes)


def trim_content(f: Dict[str, Any], content: List[Any], limit: Optional[int], max_bytes: Optional[int]) -> None:
    """Keep the last ``limit`` content items of a tool call (``f``, its list ``content``), and with
    ``max_bytes`` (``f[BYTES]`` counting the new items) drop the oldest items while their bytes
    pass it, never the newest one (an item larger than the bound is kept whole); counting those
    dropped in ``f["_truncated"]``."""
    total = f.get(BYTES, 0)
    dropped = 0
    while True:
        kept = len(content) - dropped
        if not ((limit is not None and kept > limit) or (max_bytes is not None and total > max_bytes and kept > 1)):
            break
        if max_bytes is not None:
            total -= held_len(content[dropped])
        dropped += 1
    if dropped:
        del content[:dropped]
        f["_truncated"] = f.get("_truncated", 0) + dropped
    if max_bytes is not None:
        f[BYTES] = total


def trim_output(term: Terminal, limit: Optional[int]) -> None:
    """Keep the last ``limit`` bytes of a terminal's output, from a UTF-8 character boundary (what
    ACP's ``outputByteLimit`` asks of a client): the cut moves past at most 3 continuation bytes
    (``0b10xxxxxx``), so the kept output may be up to 3 bytes shorter. The bytes dropped are
    counted; the buffer is shifted only once the dropped part outgrows the kept one."""
    if limit is None:
        return
    out = term.output
    start = term.start
    size = len(out) - start
    if size <= limit:
        return
    cut = size - limit
    skipped = 0
    while skipped < 3 and cut < size and out[start + cut] & 0xC0 == 0x80:
        cut += 1
        skipped += 1
    start += cut
    term.dropped += cut
    if start >= len(out) - start:
        del out[:start]
        start = 0
    term.start = start


def _trim_terminals(s: Session, limit: Optional[int], keep: int) -> None:
    """While ``s`` holds more terminals than ``limit``: drop its oldest exited one, else its
    oldest one (never ``keep``, the creation number of the terminal just created: it is the
    newest), counted in ``droppedTerminals``. Rust: ``trim_terminals``."""
    if limit is None:
        return
    terms = s.terminals
    while len(terms) > limit:
        tid = _oldest_exited(s, keep) if s.exited else None
        if tid is None:
            # The bound is at least 1: with more than one terminal, the oldest is not the new one.
            tid = next(iter(terms))
        del terms[tid]
        s.dropped_terminals += 1


def pop_oldest(heap: List[Any], judge: Callable[[Any], int]) -> Any:
    """Pop ``heap`` (a min-heap of queued records whose entries go stale lazily) until ``judge``
    names a victim (its entry, or None); an entry judged ``KEEP`` goes back on the heap. The
    tool-call and terminal bounds share it."""
    held = None
    victim = None
    while heap:
        entry = heappop(heap)
        seen = judge(entry)
        if seen == KEEP:
            held = entry
        elif seen == VICTIM:
            victim = entry
            break
    if held is not None:
        heappush(heap, held)
    return victim


def _oldest_exited(s: Session, keep: int) -> Optional[str]:
    """The id of the oldest exited terminal of ``s`` but ``keep``, taken off its heap (dropping
    stale entries: a terminal dropped, or no longer exited)."""
    terms = s.terminals

    def judge(entry: Tuple[int, str]) -> int:
        seq, tid = entry
        term = terms.get(tid)
        if term is None or term.seq != seq:
            return SKIP  # dropped (and maybe another terminal made with its id since)
        if "exitStatus" not in term.fields:
            term.queued = False
            return SKIP
        return KEEP if seq == keep else VICTIM

    victim = pop_oldest(s.exited, judge)
    return None if victim is None else victim[1]


def number_terminals(s: Session) -> None:
    """Number the terminals of ``s`` 0, 1, 2, ... in creation order and queue the exited ones
    (after a restore, with a bound on terminals)."""
    exited = []
    for seq, (tid, term) in enumerate(s.terminals.items()):
        term.seq = seq
        term.queued = "exitStatus" in term.fields
        if term.queued:
            exited.append((seq, tid))
    s.terminal_seq = len(s.terminals)
    s.exited = exited  # ascending: a heap already


def touch_session(store: Store, sid: str, s: Session) -> None:
    """Bound on sessions only: the session ``sid`` (``s``) is touched by the frame being applied:
    it becomes the most recently active (moved to the end of the activity order). O(1)."""
    s.active = store._tick
    store._activity.move_to_end(sid)  # type: ignore[attr-defined]


def touch_session_id(store: Store, sid: str) -> None:
    """``touch_session`` of the session ``sid`` if the store holds it (``session/cancel``)."""
    s = store._sessions.get(sid)
    if s is not None:
        touch_session(store, sid, s)


def activity_order(store: Store) -> List[str]:
    """The ids of the sessions from the least to the most recently active."""
    return list(store._activity)


def order_sessions(store: Store, order: List[str]) -> None:
    """Set the activity order (a restore): the sessions ``order`` names, the least recently
    active first."""
    sessions = store._sessions
    store._activity = OrderedDict((sid, sessions[sid]) for sid in order)


def push_permission(store: Store, entry: List[Any]) -> None:
    """Record a permission request ``[session id, record]`` (its index in the list queued when
    resolved: a record read from a checkpoint)."""
    perms = store._permissions
    s = store._sessions[entry[0]]
    s.permission_count += 1
    if entry[1]["outcome"] == "pending":
        heappush(s.waiting, len(perms))
    else:
        heappush(s.resolved, len(perms))
    perms.append(entry)


def drop_permission(store: Store, index: int) -> None:
    """Drop the permission record at ``index`` (a pending one replaced by a request with its id, or
    one the bound drops); its place stays empty until ``trim_permissions`` closes the holes."""
    entry = store._permissions[index]
    if entry is not None:
        store._permissions[index] = None
        store._sessions[entry[0]].permission_count -= 1
        store._permission_holes += 1


def trim_permissions(store: Store, sid: str) -> None:
    """After a request of session ``sid`` was recorded: while the session holds more records than
    ``max_permissions``, drop its oldest resolved one, else its oldest pending one (never the one
    just recorded: it is the newest), counted in its ``_truncated`` marker; then close the holes
    once they outnumber the records (the pending ones renumbered, the resolved ones queued again).
    Cost: O(log n) per record dropped (the session's heaps, ``Session.resolved`` and
    ``Session.waiting``), O(1) amortised for closing the holes."""
    limit = store._max_permissions
    perms = store._permissions
    if limit is not None:
        s = store._sessions[sid]
        resolved = s.resolved
        waiting = s.waiting
        while s.permission_count > limit:
            if resolved:
                i = heappop(resolved)
            else:
                # the oldest pending record (stale entries: resolved or dropped since)
                while waiting:
                    i = heappop(waiting)
                    e = perms[i]
                    if e is not None and e[1]["outcome"] == "pending":
                        break
                else:
                    break
            e = perms[i]
            assert e is not None
            if e[1]["outcome"] == "pending" and store._pending.get(e[1]["id"], -1) == i:
                del store._pending[e[1]["id"]]
            perms[i] = None
            s.permission_count -= 1
            s.dropped_permissions += 1
            store._permission_holes += 1
    close_permission_holes(store)


def close_permission_holes(store: Store) -> None:
    """Close the holes of the permission list once they outnumber the records: the pending ones
    renumbered, the resolved ones queued again."""
    perms = store._permissions
    holes = store._permission_holes
    if holes >= 32 and holes > len(perms) - holes:
        live = [e for e in perms if e is not None]
        perms[:] = live
        store._permission_holes = 0
        sessions = store._sessions
        for e in live:
            sessions[e[0]].resolved.clear()
            sessions[e[0]].waiting.clear()
        pending = store._pending = {}
        # In ascending order: a sorted list is a min-heap.
        for i, e in enumerate(live):
            if e[1]["outcome"] == "pending":
                pending[e[1]["id"]] = i
                sessions[e[0]].waiting.append(i)
            else:
                sessions[e[0]].resolved.append(i)


def touch_terminal(store: Store, s: Session, tid: str, term: Terminal, created: bool) -> None:
    """Bound on terminals only: after a frame created (``created``) the terminal ``tid`` (``term``)
    of session ``s``, or left it exited: number it if new, queue it if exited, and after a
    creation, drop terminals beyond the bound (``trim_terminals``)."""
    if created:
        term.seq = s.terminal_seq
        s.terminal_seq += 1
    if not term.queued and "exitStatus" in term.fields:
        term.queued = True
        heappush(s.exited, (term.seq, tid))
    if created:
        _trim_terminals(s, store._max_terminals, term.seq)


#: What ``pop_oldest`` makes of an entry taken off an eviction heap (Rust: ``Seen``): stale (its
#: record dropped, or no longer queued: forgotten), the record the frame touches (back on the
#: heap once a victim is found), or the victim.
SKIP, KEEP, VICTIM = 0, 1, 2


def touch(store: Store, sid: str, tcid: str, f: Dict[str, Any], created: bool) -> None:
    """Bound only: after a frame created (``created``) or changed the tool call ``tcid`` (fields
    ``f``) of session ``sid``: number it if new, queue it if it is now finished, and after a
    creation, evict."""
    key = (sid, tcid)
    if created:
        order = store._order
        seq = store._order_base + len(order)
        entry = store._created[key] = [seq, False]
        order.append(key)
    else:
        entry = store._created[key]
    if not entry[1] and finished(f):
        entry[1] = True
        heappush(store._finished, entry[0])
    if created:
        limit = store._max_tool_calls
        if limit is not None and store._tool_call_count > limit:
            evict(store, seq)


def evict(store: Store, keep: int) -> None:
    """Drop tool calls while more than the bound are retained: the oldest finished one, else the
    oldest one; never ``keep`` (the creation number of the tool call just created). Then cut off
    or renumber the evicted entries."""
    limit = store._max_tool_calls
    if limit is None:
        return
    order = store._order
    while store._tool_call_count > limit:
        seq = _oldest_finished(store, keep) if store._finished else None
        if seq is None:
            seq = _oldest(store, keep)
            if seq is None:  # pragma: no cover - see _oldest
                return
        i = seq - store._order_base
        key: Any = order[i]  # a live entry
        order[i] = None
        del store._created[key]
        del store._sessions[key[0]].tool_calls[key[1]]
        store._tool_call_count -= 1
        store._evicted += 1
    trim_order(store)


def trim_order(store: Store) -> None:
    """After tool calls left ``order`` (evicted, or their session dropped): cut off the entries
    before ``order_head``, or renumber the live ones, when they are due."""
    order = store._order
    _skip_evicted(store)
    head = store._order_head
    most = 2 * store._tool_call_count + 64
    if len(order) - head > most or len(store._finished) > most:
        compact(store)
    elif head >= 64 and 2 * head >= len(order):
        del order[:head]
        store._order_base += head
        store._order_head = 0


def _oldest_finished(store: Store, keep: int) -> Optional[int]:
    """The oldest finished tool call but ``keep``, taken off the heap (dropping stale entries)."""
    order = store._order
    base = store._order_base

    def judge(seq: int) -> int:
        key = order[seq - base] if seq >= base else None
        if key is None:
            return SKIP  # evicted
        if not finished(store._sessions[key[0]].tool_calls[key[1]]):
            store._created[key][1] = False
            return SKIP
        return KEEP if seq == keep else VICTIM

    victim: Optional[int] = pop_oldest(store._finished, judge)
    return victim


def _skip_evicted(store: Store) -> None:
    """Move ``order_head`` past the evicted entries at the front."""
    order = store._order
    head = store._order_head
    while head < len(order) and order[head] is None:
        head += 1
    store._order_head = head


def _oldest(store: Store, keep: int) -> Optional[int]:
    """The oldest tool call but ``keep``."""
    _skip_evicted(store)
    seq = store._order_base + store._order_head
    # `keep` is the newest tool call: with more than one retained, the oldest is another.
    if store._order_head == len(store._order) or seq == keep:  # pragma: no cover - as above
        return None
    return seq


def compact(store: Store) -> None:
    """Renumber the live tool calls 0, 1, 2, ... in creation order and rebuild the heap from their
    queued flags (after a restore, this numbers the tool calls and fills the heap)."""
    created = store._created
    order: List[Optional[Tuple[str, str]]] = []
    heap: List[int] = []
    for key in store._order:
        if key is None:
            continue
        entry = created[key]
        entry[0] = seq = len(order)
        if entry[1]:
            heap.append(seq)
        order.append(key)
    store._order = order
    store._order_base = 0
    store._order_head = 0
    store._finished = heap  # ascending: a heap already
