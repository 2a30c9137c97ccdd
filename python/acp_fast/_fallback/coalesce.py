"""Coalescing (DESIGN 8): the agent's ``tool_call_update`` frames held per (session, tool call)
for a while, and one frame with their merged effect forwarded in their place.

``Coalescer.push_line`` takes whole lines as the agent sent them (in the editor's protocol
version) and appends the lines to write now to ``out``; ``release_due`` the held updates whose
time has come; ``release_all`` everything.
Time is the caller's (``now``, seconds on any monotonic clock), so a fake clock tests it.

What is held: a ``session/update`` notification whose update is a ``tool_call_update`` with a
string ``toolCallId``, that the state engine applied without error (``tracked``), with no
duplicate member in its update. Its update's members are merged into the entry of its
(session, tool call): a member the entry lacks is added; one it has takes the later value in
the first one's place (v1: a ``null`` leaves it; v2: a ``null`` unsets, and a ``_meta`` object
patches the held one by top-level key). Where one update cannot say what two said in a row (v2:
a member unset then set again, which moves it to the end of the record; a ``_meta`` object over
a ``_meta`` that is not one; or the protocol version not known yet and the two differ by version)
the entry is released and the new update held on its own.

What releases: a final status (``completed``, ``failed``, ``cancelled``) in the merged update
(released at once, with it); a ``tool_call``, ``tool_call_content_chunk`` or ``state_update``, or
any request of the agent naming the session (the session's entries before it); any response, batch, untracked or unreadable line (every entry
before it); ``ms`` after an entry's first update (``release_due``); more than ``max_held`` entries or
``max_held_bytes`` bytes held (the oldest, until under); ``release_all``. An entry released on its
own takes the entries of its session held before it along, first, so that the editor learns of a
session's tool calls in the order the agent made them.

An entry of one update is released as its line came, byte for byte; a merged one as the last
update's line with its ``update`` object replaced by the merged members, each key and value as
received (nothing is re-encoded).

Mirror of ``rust/coalesce.rs``. Differences on purpose: the members of an object are found here
with the fallback's scanner helpers (``members``), there with the core scanner.
"""

from __future__ import annotations

import math
import operator
import time
from threading import RLock
from typing import Any, Dict, List, Optional, Tuple

from .framing import exclusive
from .scanner import find_member, skip_ws, string_text
from .scanner.cursor import _WS
from .scanner.grammar import _SKIP_STRING, skip_value

#: The statuses after which a tool call changes no more: an update carrying one is released at once.
FINAL_STATUSES = ("completed", "failed", "cancelled")
#: Default of ``max_held``: entries (tool calls) held at once.
DEFAULT_MAX_HELD = 1000
#: Default of ``max_held_bytes``: bytes held at once (each entry: its last line and merged values).
DEFAULT_MAX_HELD_BYTES = 16 << 20

# What a line asks of the held entries (``classify``).
HOLD = 0  # a tool_call_update: held (its key)
PASS = 1  # forwarded, nothing released
RELEASE_SESSION = 2  # its session's entries released before it
RELEASE_ALL = 3  # every entry released before it

# A member: (key text, key literal as received, value type, value as received).
Member = Tuple[str, bytes, str, bytes]


def members(data: bytes, start: int) -> Optional[List[Member]]:
    """The members of the (valid) object whose ``{`` is at ``start``, in order; None when a key
    appears twice."""
    ws = _WS.match
    out: List[Member] = []
    seen = set()
    i = ws(data, start + 1).end()  # type: ignore[union-attr]
    if data[i] == 0x7D:
        return out
    while True:
        kend = _SKIP_STRING.match(data, i).end()  # type: ignore[union-attr]
        literal = data[i:kend]
        key = string_text(literal)
        if key in seen:
            return None
        seen.add(key)
        i = ws(data, kend).end()  # type: ignore[union-attr]
        i = ws(data, i + 1).end()  # type: ignore[union-attr]  # after ':'
        ty, vend = skip_value(data, i)
        out.append((key, literal, ty, data[i:vend]))
        i = ws(data, vend).end()  # type: ignore[union-attr]
        if data[i] == 0x7D:
            return out
        i = ws(data, i + 1).end()  # type: ignore[union-attr]  # after ','


def _string(data: bytes, span: Optional[Tuple[str, int, int]]) -> Optional[str]:
    if span is None or span[0] != "string":
        return None
    return string_text(data[span[1] : span[2]])


def classify(data: bytes) -> Tuple[int, Optional[str], Optional[str], int, int]:
    """What the (valid, tracked) line ``data`` asks (``HOLD`` .. ``RELEASE_ALL``), its session and
    tool call, and for ``HOLD`` the span of its update object."""
    i = skip_ws(data, 0)
    if i >= len(data) or data[i] != 0x7B:
        return RELEASE_ALL, None, None, 0, 0
    method = _string(data, find_member(data, i, "method"))
    if method is None:
        return RELEASE_ALL, None, None, 0, 0  # a response
    params = find_member(data, i, "params")
    sid = None
    if params is not None and params[0] == "object":
        sid = _string(data, find_member(data, params[1], "sessionId"))
    else:
        params = None
    if method != "session/update":
        if find_member(data, i, "id") is None:
            return PASS, sid, None, 0, 0
        return (RELEASE_ALL if sid is None else RELEASE_SESSION), sid, None, 0, 0
    if sid is None or params is None:
        return PASS, None, None, 0, 0
    update = find_member(data, params[1], "update")
    if update is None or update[0] != "object":
        return PASS, sid, None, 0, 0
    kind = _string(data, find_member(data, update[1], "sessionUpdate"))
    if kind == "state_update":
        return RELEASE_SESSION, sid, None, 0, 0
    if kind not in ("tool_call_update", "tool_call", "tool_call_content_chunk"):
        return PASS, sid, None, 0, 0
    tcid = _string(data, find_member(data, update[1], "toolCallId"))
    if tcid is None:
        return PASS, sid, None, 0, 0
    if kind != "tool_call_update":
        return RELEASE_SESSION, sid, tcid, 0, 0  # it may create a tool call: those held were first
    return HOLD, sid, tcid, update[1], update[2]


def merge_members(
    held: List[Member], new: List[Member], version: Optional[int], patch_meta: bool = True
) -> Optional[List[Member]]:
    """The members of one update with the effect of ``held`` then ``new`` under protocol
    ``version`` (None: not known), or None when one update cannot say it. ``patch_meta``: a v2
    ``_meta`` object over a ``_meta`` object composes (``merge_object``; inside one, no member
    does)."""
    out = list(held)
    index = {m[0]: i for i, m in enumerate(out)}
    for m in new:
        at = index.get(m[0])
        if at is None:
            index[m[0]] = len(out)
            out.append(m)
            continue
        old = out[at]
        if m[2] == "null":
            if version == 1:
                continue  # v1: null leaves the field
            if version is None:
                return None
            out[at] = (old[0], old[1], "null", m[3])
        elif old[2] == "null":
            if version != 1:
                return None  # v2: unset then set again moves the member to the end
            out[at] = (old[0], old[1], m[2], m[3])
        elif patch_meta and m[0] == "_meta" and m[2] == "object" and version != 1:
            if version is None or old[2] != "object":
                return None
            meta = merge_object(old[3], m[3])
            if meta is None:
                return None
            out[at] = (old[0], old[1], "object", meta)
        else:
            out[at] = (old[0], old[1], m[2], m[3])
    return out


def merge_object(held: bytes, new: bytes) -> Optional[bytes]:
    """Two v2 ``_meta`` patches as one (``merge_members`` of their members, by v2's rules); None
    when it cannot be said in one."""
    a = members(held, 0)
    b = members(new, 0)
    merged = None if a is None or b is None else merge_members(a, b, 2, patch_meta=False)
    return None if merged is None else write_object(merged)


def write_object(ms: List[Member]) -> bytes:
    """The object of members ``ms``, each key and value as received."""
    return b"{" + b",".join(m[1] + b":" + m[3] for m in ms) + b"}"


def is_final(ms: List[Member]) -> bool:
    """Whether the merged members carry a final status."""
    for key, _, ty, value in ms:
        if key == "status" and ty == "string":
            return string_text(value) in FINAL_STATUSES
    return False


class Entry:
    """What is held for one (session, tool call): the last line and its update's span, the merged
    members, how many updates, since when."""

    __slots__ = ("wire", "start", "end", "members", "updates", "since", "size")

    def __init__(self, wire: bytes, start: int, end: int, ms: List[Member], since: float) -> None:
        self.wire = wire
        self.start = start
        self.end = end
        self.members = ms
        self.updates = 1
        self.since = since
        self.size = entry_size(wire, ms)

    def line(self) -> bytes:
        """The line to forward: the update as it came, or the last line with the merged update."""
        if self.updates == 1:
            return self.wire
        return self.wire[: self.start] + write_object(self.members) + self.wire[self.end :]


def entry_size(wire: bytes, ms: List[Member]) -> int:
    return len(wire) + sum(len(m[3]) for m in ms)


def check_protocol(protocol: Any) -> Optional[int]:
    """``protocol`` when it is 1, 2 or None, else ValueError."""
    if protocol is None or (type(protocol) is int and protocol in (1, 2)):
        return protocol
    raise ValueError(f"expected protocol to be 1, 2 or None, found {protocol!r}")


class Coalescer:
    """Holds the agent's ``tool_call_update`` frames per (session, tool call) for at most ``ms``
    milliseconds and forwards one frame with their merged effect (docs/API.md "Coalescing").
    ``protocol``: the editor's version (1 or 2), None until known (settable); ``max_held`` /
    ``max_held_bytes``: the bounds (over them, the oldest are released)."""

    def __init__(
        self,
        ms: float = 50.0,
        *,
        protocol: Optional[int] = None,
        max_held: int = DEFAULT_MAX_HELD,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
    ) -> None:
        given: Any = ms
        if isinstance(given, (str, bytes, bytearray)):  # float() would read them; the binding does not
            raise TypeError(f"must be real number, not {type(given).__name__}")
        ms = float(given)
        max_held, max_held_bytes = operator.index(max_held), operator.index(max_held_bytes)
        if not (math.isfinite(ms) and ms >= 0):
            raise ValueError(f"expected ms to be a number of milliseconds >= 0, found {ms}")
        if max_held < 1:
            raise ValueError(f"expected max_held to be at least 1, found {max_held}")
        if max_held_bytes < 0:
            raise ValueError(f"expected max_held_bytes to be at least 0, found {max_held_bytes}")
        self.window = ms / 1000.0
        self._protocol = check_protocol(protocol)
        self.max_held = max_held
        self.max_held_bytes = max_held_bytes
        self.entries: Dict[Tuple[str, str], Entry] = {}
        self._held_bytes = 0
        self._updates_in = 0  # updates held
        self._frames_out = 0  # merged or single lines released
        self._lock = RLock()
        self._busy = False

    # -- the public methods (rust/python/coalesce.rs) ---------------------------------------

    @exclusive
    def push(self, data: Any, now: Optional[float] = None, *, tracked: bool = True) -> bytes:
        """The lines to write now for ``data`` (whole lines as the agent sent them); ``tracked``:
        the state engine applied them without error."""
        data = bytes(data)
        if now is None:
            now = time.monotonic()
        out: List[bytes] = []
        lines = data.split(b"\n")
        last = lines.pop()
        for line in lines:
            self.push_line(line + b"\n", now, tracked, out)
        if last:
            self.push_line(last, now, tracked, out)
        return b"".join(out)

    @exclusive
    def due(self, now: Optional[float] = None) -> bytes:
        """The held updates due at ``now``."""
        out: List[bytes] = []
        self.release_due(time.monotonic() if now is None else now, out)
        return b"".join(out)

    @exclusive
    def flush(self) -> bytes:
        """Everything held, oldest first."""
        out: List[bytes] = []
        self.release_all(out)
        return b"".join(out)

    @property
    @exclusive
    def deadline(self) -> Optional[float]:
        """When the oldest held update is due (on the clock of ``now``), None when nothing is held."""
        return self.next_due()

    @property
    @exclusive
    def protocol(self) -> Optional[int]:
        """The editor's protocol version (1 or 2), None until known."""
        return self._protocol

    @protocol.setter
    @exclusive
    def protocol(self, protocol: Optional[int]) -> None:
        self._protocol = check_protocol(protocol)

    @property
    @exclusive
    def ms(self) -> float:
        """How long an update is held at most, in milliseconds."""
        return self.window * 1000.0

    @property
    @exclusive
    def held(self) -> int:
        """Tool calls held."""
        return len(self.entries)

    @property
    @exclusive
    def held_bytes(self) -> int:
        """Bytes held."""
        return self._held_bytes

    @property
    @exclusive
    def updates_in(self) -> int:
        """Updates held so far."""
        return self._updates_in

    @property
    @exclusive
    def frames_out(self) -> int:
        """Lines released so far (one per held update, or per merged run of them)."""
        return self._frames_out

    # -- the core (rust/coalesce.rs) ----------------------------------------------------------

    def next_due(self) -> Optional[float]:
        """When the oldest entry is due, or None when nothing is held."""
        for entry in self.entries.values():
            return entry.since + self.window
        return None

    def push_line(self, data: bytes, now: float, tracked: bool, out: List[bytes]) -> None:
        """One line as the agent sent it (line ending included): held, or appended to ``out``
        after what it releases. ``tracked``: the state engine applied it without error."""
        blank = not data.strip(b" \t\r\n")
        if not data.endswith(b"\n") or blank:
            if not blank:
                self.release_all(out)
            out.append(data)
            return
        what, sid, tcid, start, end = classify(data) if tracked else (RELEASE_ALL, None, None, 0, 0)
        if what == HOLD:
            assert sid is not None and tcid is not None
            self.hold(data, (sid, tcid), start, end, now, out)
            return
        if what == RELEASE_SESSION:
            for key in [k for k in self.entries if k[0] == sid]:
                self.release(key, out)
        elif what == RELEASE_ALL:
            self.release_all(out)
        out.append(data)

    def hold(self, data: bytes, key: Tuple[str, str], start: int, end: int, now: float, out: List[bytes]) -> None:
        ms = members(data, start)
        if ms is None:  # a member twice: not held
            self.release_through(key, out)
            out.append(data)
            return
        self._updates_in += 1
        entry = self.entries.get(key)
        merged = None if entry is None else merge_members(entry.members, ms, self._protocol)
        if entry is not None and merged is not None:
            self._held_bytes -= entry.size
            entry.wire, entry.start, entry.end, entry.members = data, start, end, merged
            entry.updates += 1
            entry.size = entry_size(data, merged)
            self._held_bytes += entry.size
        else:
            if entry is not None:
                self.release_through(key, out)
            entry = self.entries[key] = Entry(data, start, end, ms, now)
            self._held_bytes += entry.size
        if is_final(entry.members):
            self.release_through(key, out)
        self.bound(out)

    def bound(self, out: List[bytes]) -> None:
        """Release the oldest entries while more than the bounds are held."""
        while self.entries and (len(self.entries) > self.max_held or self._held_bytes > self.max_held_bytes):
            self.release(next(iter(self.entries)), out)

    def release(self, key: Tuple[str, str], out: List[bytes]) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self._held_bytes -= entry.size
            self._frames_out += 1
            out.append(entry.line())

    def release_through(self, key: Tuple[str, str], out: List[bytes]) -> None:
        """Release ``key`` and, before it, the entries of its session held before it: the editor
        learns of a session's tool calls in the order the agent made them."""
        for k in [k for k in self.entries if k[0] == key[0]]:
            self.release(k, out)
            if k == key:
                return

    def release_all(self, out: List[bytes]) -> None:
        for key in list(self.entries):
            self.release(key, out)

    def release_due(self, now: float, out: List[bytes]) -> None:
        """Release the entries held ``ms`` or longer at ``now``."""
        while self.entries:
            key, entry = next(iter(self.entries.items()))
            if entry.since + self.window > now:
                return
            self.release(key, out)
