"""``--answer-cancelled-permissions``: after the editor cancels a prompt turn (``session/cancel``),
the editor must answer every pending permission request of that session with the ``cancelled``
outcome (ACP, "Cancellation"). :class:`CancelledPermissions` is the middleware that makes sure the
agent gets those answers: what the editor has not answered within a grace period, the proxy
answers (``ToolCallStore.cancel_responses``), and never twice: an answer from the editor that
comes after the proxy's is dropped (the recording says why).

Not answered: requests the editor answered meanwhile, and requests the agent withdrew with
``$/cancel_request`` (the agent no longer waits for them). Only requests pending when the
editor's ``session/cancel`` passes are concerned.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Set, Tuple

import acp_fast

from ._middleware import Context, Result

__all__ = ["DEFAULT_GRACE", "CancelledPermissions"]

#: Seconds the editor has to answer before the proxy does.
DEFAULT_GRACE = 1.0

_Key = Tuple[str, Any]


def _key(request_id: Any) -> _Key:
    """A request id as a set key: ``1`` and ``"1"`` differ."""
    return (type(request_id).__name__, request_id)


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
        self._by_proxy: Set[_Key] = set()  # requests the proxy answered (an editor's answer is dropped)
        self._withdrawn: Set[_Key] = set()  # requests the agent cancelled with $/cancel_request
        self._timers: List[threading.Timer] = []

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
            self._by_proxy.discard(_key(message.id))
            return _dropped(ctx)
        return message

    def _schedule(self, ctx: Context, session_id: str, owed: List[Any]) -> None:
        timer = threading.Timer(self.grace, self._expire, (ctx, session_id, owed))
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

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
        """Stop the timers still waiting (nothing more is answered)."""
        for timer in self._timers:
            timer.cancel()


def _dropped(ctx: Context) -> Result:
    ctx.reason("the proxy already answered this permission request with 'cancelled'")
    return None
