"""``--answer-cancelled-permissions``: after the editor cancels a prompt turn (``session/cancel``),
the editor must answer every pending permission request of that session with the ``cancelled``
outcome (ACP, "Cancellation"). ``CancelledPermissions`` is the middleware that makes sure the
agent gets those answers: what the editor has not answered within a grace period, the proxy
answers (``ToolCallStore.cancel_responses``), and never twice: every answer from the editor that
comes after the proxy's is dropped (the recording says why), however many the editor sends.

Not answered: requests the editor answered meanwhile, and requests the agent withdrew with
``$/cancel_request`` (the agent no longer waits for them). Only requests pending when the
editor's ``session/cancel`` passes are concerned.

One timer thread serves every cancel: the requests owed are kept in a heap by deadline (one
entry per request owed, the earliest deadline when several cancels name it, dropped when it is
due), and the thread sleeps until the first is due.
What the middleware remembers is bounded: the requests the proxy answered and the requests the
agent withdrew, at most ``MAX_REMEMBERED`` each (the oldest forgotten first).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import acp_fast

from ._middleware import Context, Result

__all__ = ["DEFAULT_GRACE", "MAX_REMEMBERED", "CancelledPermissions"]

#: Seconds the editor has to answer before the proxy does.
DEFAULT_GRACE = 1.0

#: The most requests ``CancelledPermissions`` remembers as answered by the proxy (so that
#: every later answer from the editor is dropped) and as withdrawn by the agent; past it the
#: oldest is forgotten. An editor answers late within seconds, and a proxy answers a handful of
#: requests per cancelled turn: 10,000 covers hours of cancelled turns.
MAX_REMEMBERED = 10_000

_Key = Tuple[str, Any]


def _key(request_id: Any) -> _Key:
    """A request id as a set key: ``1`` and ``"1"`` differ."""
    return (type(request_id).__name__, request_id)


class _Remembered:
    """A set of request keys holding at most ``MAX_REMEMBERED`` (the oldest forgotten first)."""

    def __init__(self) -> None:
        self._keys: OrderedDict[_Key, None] = OrderedDict()

    def __contains__(self, key: _Key) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: _Key) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > MAX_REMEMBERED:
            self._keys.popitem(last=False)

    def discard(self, key: _Key) -> None:
        self._keys.pop(key, None)


class CancelledPermissions:
    """The middleware of ``--answer-cancelled-permissions``: answers, ``grace`` seconds after a
    ``session/cancel`` from the editor, the permission requests of that session the editor has
    not answered (see the module's docstring)."""

    name = "answer-cancelled-permissions"

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        if not grace >= 0:
            raise ValueError(f"expected a grace period of at least 0 seconds, found {grace!r}")
        self.grace = grace
        self.answered = 0  #: answers the proxy sent
        self._by_proxy = _Remembered()  # requests the proxy answered (the editor's answers are dropped)
        self._withdrawn = _Remembered()  # requests the agent cancelled with $/cancel_request
        # The requests owed, (deadline, order, session, key) by deadline, and the deadline of each
        # (session, key) in the heap (a cancel naming one already owed changes nothing).
        self._heap: List[Tuple[float, int, str, _Key]] = []
        self._due: Dict[Tuple[str, _Key], Any] = {}  # -> the request id as sent
        self._order = 0
        self._ctx: Optional[Context] = None
        self._wake = threading.Condition(threading.Lock())
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def __call__(self, message: acp_fast.Message, sender: str, ctx: Context) -> Result:
        kind = message.kind
        if sender == "agent":
            if kind == "request" and message.method == "session/request_permission":
                key = _key(message.id)  # a new request with this id: whoever answered the old one
                self._by_proxy.discard(key)
                self._withdrawn.discard(key)
            elif kind == "notification" and message.method == "$/cancel_request":
                params = message.params
                if isinstance(params, dict) and "requestId" in params:
                    self._withdrawn.add(_key(params["requestId"]))
            return message
        if kind == "notification" and message.method == "session/cancel":
            session_id = message.session_id
            if session_id is not None:
                owed = [p["id"] for p in ctx.store.pending_permissions(session_id)]
                if owed:
                    self._schedule(ctx, session_id, owed)
            return message
        if kind in ("response", "error") and _key(message.id) in self._by_proxy:
            return _dropped(ctx)  # every late answer, not only the first
        return message

    def _schedule(self, ctx: Context, session_id: str, owed: List[Any]) -> None:
        """Owe an answer to each of ``owed`` (of ``session_id``) ``grace`` seconds from now, unless
        it is owed already (then by an earlier deadline)."""
        deadline = time.monotonic() + self.grace
        with self._wake:
            if self._stopped:
                return
            self._ctx = ctx
            first = self._heap[0][0] if self._heap else None
            for request_id in owed:
                key = _key(request_id)
                if (session_id, key) in self._due:
                    continue
                self._due[(session_id, key)] = request_id
                heapq.heappush(self._heap, (deadline, self._order, session_id, key))
                self._order += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="acp-fast-cancelled-permissions", daemon=True)
                self._thread.start()
            elif first is None or deadline < first:
                self._wake.notify()

    def _run(self) -> None:
        """The timer thread: wait for the first deadline, answer what is due, again."""
        while True:
            with self._wake:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._wake.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                if self._stopped:
                    return
                now = time.monotonic()
                due: Dict[str, List[Any]] = {}  # by session, in the order they were owed
                while self._heap and self._heap[0][0] <= now:
                    _, _, session_id, key = heapq.heappop(self._heap)
                    due.setdefault(session_id, []).append(self._due.pop((session_id, key)))
                ctx = self._ctx
            assert ctx is not None  # set with the first entry
            for session_id, owed in due.items():
                try:
                    self._expire(ctx, session_id, owed)
                except Exception as e:  # noqa: BLE001 - the timer goes on for the other sessions
                    ctx.note(f"could not answer the permission requests of session {session_id}: {e}")

    def _expire(self, ctx: Context, session_id: str, owed: List[Any]) -> None:
        """The grace period is over: answer what is still pending (decided under the proxy's lock,
        so an answer from the editor is either before it, and seen, or after it, and dropped)."""
        frames: List[bytes] = []
        with ctx.lock:
            wanted: Dict[_Key, Any] = {_key(i): i for i in owed}
            for key in list(wanted):
                if key in self._withdrawn or key in self._by_proxy:
                    del wanted[key]
            if not wanted:
                return
            for frame in ctx.store.cancel_responses(session_id):  # the pending ones, in request order
                key = _key(acp_fast.loads(frame)["id"])
                if key in wanted:
                    frames.append(frame)
                    self._by_proxy.add(key)
            self.answered += len(frames)
        for frame in frames:
            ctx.inject(frame, to="agent")
        if frames:
            n = len(frames)
            ctx.note(
                f"answered {n} permission request{'s' if n > 1 else ''} of session {session_id} with "
                f"'cancelled' (the editor did not within {self.grace:g} s of session/cancel)"
            )

    def cancel(self) -> None:
        """Stop the timer (nothing more is answered)."""
        with self._wake:
            self._stopped = True
            self._heap.clear()
            self._due.clear()
            self._wake.notify()


def _dropped(ctx: Context) -> Result:
    ctx.reason("the proxy already answered this permission request with 'cancelled'")
    return None
