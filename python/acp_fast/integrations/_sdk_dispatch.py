"""The eager dispatch of [`acp_fast.integrations.acp_sdk.FastConnection`][acp_fast.integrations.acp_sdk.FastConnection]: the driver that
runs handlers until they first suspend, the awaitable that resumes one, and the batch entries
and replies waiting in the dispatch queue."""

from __future__ import annotations

import contextvars
import types
from typing import Any, Dict, List, Protocol


class _Writer(Protocol):
    """What a ``_BatchReply`` needs of the connection (``FastConnection``): writing a reply."""

    def _write_reply(self, payload: Any) -> None: ...


async def _await(awaitable: Any) -> Any:
    return await awaitable


_DONE: Any = object()


@types.coroutine
def _driver() -> Any:
    """Runs the handler coroutines sent to it, one after the other, each until it first suspends
    or ends, and yields ``_DONE`` when one ends. So a handler that ends without suspending (the
    common case) costs the dispatcher no ``StopIteration``. One that suspends stays inside: the
    driver is then handed to ``_Resume``, which drives it until it yields ``_DONE``. A handler's
    exception goes through it (and ends it). Started with ``send(None)``."""
    coro = yield
    while True:
        yield from coro
        coro = yield _DONE


class _Resume:
    """Awaitable that goes on driving a handler already started by hand in a ``_driver``
    (which has just yielded ``first``), each step inside the handler's own context, until the
    handler ends (the driver yields ``_DONE``)."""

    __slots__ = ("_coro", "_first", "_ctx")

    def __init__(self, coro: Any, first: Any, ctx: contextvars.Context) -> None:
        self._coro = coro
        self._first = first
        self._ctx = ctx

    def __await__(self) -> Any:
        coro, run = self._coro, self._ctx.run
        value = self._first
        self._first = None
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in by the task (cancellation...)
                try:
                    value = run(coro.throw, exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    value = run(coro.send, sent)
                except StopIteration as stop:
                    return stop.value
            if value is _DONE:
                coro.close()
                return None


class _BatchReply:
    """Collects the replies owed for one batch frame and writes them as one array."""

    __slots__ = ("connection", "expected", "replies", "sealed")

    def __init__(self, connection: _Writer) -> None:
        self.connection = connection
        self.expected = 0  # requests whose reply is still owed
        self.replies: List[Dict[str, Any]] = []
        self.sealed = False  # every entry has been dispatched

    def add(self, payload: Dict[str, Any]) -> None:
        self.replies.append(payload)
        self.flush_if_done()

    def flush_if_done(self) -> None:
        if not self.sealed or self.expected or not self.replies:
            return
        replies, self.replies = self.replies, []
        self.connection._write_reply(replies)


class _Entry:
    """One batch entry waiting in the dispatch queue."""

    __slots__ = ("item", "reply", "last")

    def __init__(self, item: Any, reply: _BatchReply, last: bool) -> None:
        self.item = item
        self.reply = reply
        self.last = last


_EOF = object()
