"""The official ACP Python SDK (``agent-client-protocol``, import name ``acp``) on acp-fast.

One call makes every SDK connection built from byte streams — client side and agent side, over
stdio (``spawn_agent_process``, ``run_agent``, ``stdio_streams``) or any asyncio streams —
read and write its frames through acp-fast:

    from acp_fast.integrations import acp_sdk

    acp_sdk.install()                        # before the connections are created
    async with acp.spawn_agent_process(client, "my-agent") as (conn, proc):
        ...

What changes (docs/SDK.md has the details and the figures):

* frames are split by [`acp_fast.FrameDecoder`][acp_fast.FrameDecoder] with a configurable size limit
  (``max_frame_bytes``, 64 MiB by default) instead of ``StreamReader.readuntil`` with no bound;
* JSON is parsed and written by the native core (``acp_fast.loads`` / ``dumps``);
* a batch array is handled as JSON-RPC 2.0 says (its entries are dispatched in array order, and
  the replies to its requests go back as one array) instead of killing the receive loop (SDK
  0.12) or being skipped (1.0), under protocol v1; protocol v2 has no batches, and on a
  connection that speaks it (the version its ``initialize`` answered, or an experimental v2
  client or agent) a batch is answered with one -32600 error (``id: null``, kind
  ``batch_in_v2``), nothing of it dispatched, as the Rust SDK answers it;
* a bad line (not JSON, not JSON-RPC, too long) is answered with a JSON-RPC error (``id: null``)
  instead of being dropped silently; the stream goes on;
* frames are dispatched in wire order by one dispatcher: each handler starts as soon as its frame
  is read, runs eagerly until its first suspension point, and only a handler that suspends gets
  a task of its own (the SDK creates one task per message, which dominates its cost).

Over the SDK's network transports (``acp.http`` and ``acp.ws``, its ``http`` extra),
which move whole messages, the connection stays the SDK's and every message is parsed and written
by acp-fast's JSON instead of the standard ``json`` module (``_sdk_network.py``); ``strict=True``
checks every message received there as it checks frames.

What the handlers receive does not change: the SDK's own router, pydantic models, request and
notification coroutines, error mapping and telemetry spans are used as they are.

With an SDK that cancels incoming requests on ``$/cancel_request`` (1.0), requests go through
the SDK's own ``_process_message``, so they are tracked and cancelled as without acp-fast.

The SDK releases supported are those of the ``sdk`` extra
([`acp_fast.integrations.SDK_REQUIREMENT`][acp_fast.integrations.SDK_REQUIREMENT]); what the installed one has is found by looking
at it, and a fast path it does not allow is turned off with a warning (once per reason).

Its parts: the byte transport in ``_sdk_transport.py``, the eager-dispatch machinery in
``_sdk_dispatch.py``, the ``session/update`` fast path's validators in ``_sdk_validation.py``,
what is found in the installed SDK and the modules patched in ``_sdk_support.py``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import copy
import importlib.metadata
import inspect
import logging
import types
from typing import Any, Awaitable, Callable, Deque, Dict, Iterator, List, Optional, Tuple

from . import require_sdk

require_sdk("acp_fast.integrations.acp_sdk")

import acp.agent.connection as _sdk_agent_connection  # noqa: E402
import acp.core as _sdk_core  # noqa: E402
import acp.stdio  # noqa: E402, F401  (one of the modules install() patches)
from acp.connection import Connection as SdkConnection  # noqa: E402
from acp.connection import StreamDirection, StreamEvent  # noqa: E402
from acp.exceptions import RequestError  # noqa: E402
from pydantic import ValidationError  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast._terminal import printable  # noqa: E402
from acp_fast.batch import Batch  # noqa: E402
from acp_fast.errors import DecodeError  # noqa: E402

from ._sdk_dispatch import _DONE, _EOF, _await, _BatchReply, _driver, _Entry, _Resume  # noqa: E402
from ._sdk_network import NetworkPatches  # noqa: E402
from ._sdk_support import CANCEL_REQUEST_METHOD, MIRROR_REQUESTS, Patches, check_mirror, speaks_v2_only  # noqa: E402
from ._sdk_transport import _StreamTransport, _StrictMessageTransport, _StrictStreamTransport  # noqa: E402
from ._sdk_validation import (  # noqa: E402
    _update_tracker,
    _update_validators,
    _validate_notification,
    _validate_update,
)

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "FastConnection",
    "connect_to_agent",
    "install",
    "installed",
    "is_installed",
    "run_agent",
    "sdk_draft",
    "uninstall",
]

logger = logging.getLogger(__name__)

#: Default longest frame accepted (bytes, line ending excluded): acp-fast's decoder default.
DEFAULT_MAX_FRAME_BYTES = acp_fast.DEFAULT_MAX_FRAME_BYTES

# The SDK modules that construct ``Connection`` objects from byte streams (_sdk_support.py).
_patches = Patches()
# The SDK modules of its network transports (acp.http, acp.ws), whose per-message JSON install() replaces
# (_sdk_network.py).
_network = NetworkPatches()
_UNSET: Any = object()
_CoroutineType = types.CoroutineType


class _Options:
    __slots__ = ("max_frame_bytes", "reply_errors", "backend", "strict", "schema")

    def __init__(
        self,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        reply_errors: bool = True,
        backend: Any = None,
        strict: bool = False,
        schema: Tuple[bool, Optional[str]] = (False, None),
    ):
        self.max_frame_bytes = max_frame_bytes
        self.reply_errors = reply_errors
        self.backend = backend
        self.strict = strict
        # (unstable, draft) of the strict check.
        self.schema = schema


_options = _Options()


# ---------------------------------------------------------------------------------------------
# Installing


def install(
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    reply_errors: bool = True,
    backend: Any = None,
    strict: bool = False,
    unstable: bool = False,
    draft: Optional[str] = None,
) -> None:
    """Make the SDK build [`FastConnection`][acp_fast.integrations.acp_sdk.FastConnection] wherever it builds a connection from streams.

    Affects the connections created afterwards by ``ClientSideConnection``,
    ``AgentSideConnection``, ``acp.connect_to_agent``, ``acp.run_agent``,
    ``acp.spawn_agent_process``, ``acp.spawn_client_process`` and
    ``acp.stdio.spawn_stdio_connection`` (existing connections keep their reader); and the JSON of
    the SDK's HTTP and WebSocket transports (``acp.http``, ``acp.ws``: their messages parsed and
    written by acp-fast; before ``create_asgi_app`` for a server). Calling it again replaces the
    options. ``max_frame_bytes``: the longest line accepted (a longer one is answered
    with a -32700 error and skipped); ``reply_errors``: answer bad lines with JSON-RPC errors
    (else they are only logged); ``backend``: an acp-fast backend module (``acp_fast._native`` or
    ``acp_fast._fallback``), default the one ``acp_fast`` chose; ``strict``: check every frame
    received against the official schema (``FrameDecoder(strict_schema=True)``, told what the
    connection sends) and refuse the invalid ones as the SDK refuses invalid params: a request
    is answered with a -32602 error, a notification is logged and dropped, a response fails the
    request it answers (over HTTP or WebSocket: every message received, refused the same way).
    ``unstable``: the strict check accepts the unstable surface of the
    schema; ``draft``: the v2 draft it checks against (``'latest'`` or ``'alpha.5'``; None: the
    draft of the installed SDK, [`sdk_draft`][acp_fast.integrations.acp_sdk.sdk_draft]).
    """
    global _options
    _check_max_frame_bytes(max_frame_bytes)
    check_mirror()
    schema = _check_schema(unstable, draft)
    _options = _Options(max_frame_bytes, bool(reply_errors), backend, _check_strict(strict), schema)
    _patches.apply(FastConnection)
    _network.apply(acp_fast if backend is None else backend)


def uninstall() -> None:
    """Undo [`install`][acp_fast.integrations.acp_sdk.install]: connections created afterwards are the SDK's own again."""
    global _options
    _options = _Options()
    _patches.apply(None)
    _network.apply(None)


def is_installed() -> bool:
    """True while [`install`][acp_fast.integrations.acp_sdk.install] is in force."""
    return _patches.target is FastConnection


@contextlib.contextmanager
def installed(
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    reply_errors: bool = True,
    backend: Any = None,
    strict: bool = False,
    unstable: bool = False,
    draft: Optional[str] = None,
) -> Iterator[None]:
    """[`install`][acp_fast.integrations.acp_sdk.install] for the duration of a ``with`` block, then the previous state again."""
    global _options
    saved = (_patches.target, _options, _network.backend)
    install(
        max_frame_bytes=max_frame_bytes,
        reply_errors=reply_errors,
        backend=backend,
        strict=strict,
        unstable=unstable,
        draft=draft,
    )
    try:
        yield
    finally:
        _patches.apply(saved[0])
        _options = saved[1]
        _network.apply(saved[2])


def connect_to_agent(
    client: Any,
    input_stream: Any,
    output_stream: Any = None,
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    reply_errors: bool = True,
    backend: Any = None,
    strict: bool = False,
    unstable: bool = False,
    draft: Optional[str] = None,
    **kwargs: Any,
) -> Any:
    """``acp.connect_to_agent`` with a [`FastConnection`][acp_fast.integrations.acp_sdk.FastConnection], without [`install`][acp_fast.integrations.acp_sdk.install].

    ``input_stream`` is the agent's stdin (``StreamWriter``), ``output_stream`` its stdout
    (``StreamReader``); other keywords go to ``ClientSideConnection``."""
    with installed(
        max_frame_bytes=max_frame_bytes,
        reply_errors=reply_errors,
        backend=backend,
        strict=strict,
        unstable=unstable,
        draft=draft,
    ):
        return _sdk_core.connect_to_agent(client, input_stream, output_stream, **kwargs)


async def run_agent(
    agent: Any,
    input_stream: Any = None,
    output_stream: Any = None,
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    reply_errors: bool = True,
    backend: Any = None,
    strict: bool = False,
    unstable: bool = False,
    draft: Optional[str] = None,
    **kwargs: Any,
) -> None:
    """``acp.run_agent`` (stdio by default) with a [`FastConnection`][acp_fast.integrations.acp_sdk.FastConnection], without [`install`][acp_fast.integrations.acp_sdk.install]."""
    from acp.stdio import stdio_streams

    if input_stream is None and output_stream is None:
        output_stream, input_stream = await stdio_streams()
    with installed(
        max_frame_bytes=max_frame_bytes,
        reply_errors=reply_errors,
        backend=backend,
        strict=strict,
        unstable=unstable,
        draft=draft,
    ):
        conn = _sdk_agent_connection.AgentSideConnection(agent, input_stream, output_stream, listening=False, **kwargs)
    try:
        await conn.listen()
    finally:
        await asyncio.shield(conn.close())


def _check_max_frame_bytes(value: Any) -> None:
    """Refuse a bad ``max_frame_bytes`` at once (else the first read would): an int, within the
    codec's limits (its own check and message)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected max_frame_bytes to be an int, found {value!r}")
    acp_fast.Framer(max_frame_bytes=int(value))


def _check_strict(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected strict to be a bool, found {value!r}")
    return value


def _check_schema(unstable: Any, draft: Any) -> Tuple[bool, Optional[str]]:
    """(unstable, draft) of the strict check; None as the draft: the installed SDK's."""
    if not isinstance(unstable, bool):
        raise ValueError(f"expected unstable to be a bool, found {unstable!r}")
    if draft is None:
        draft = sdk_draft()
    acp_fast.FrameDecoder(draft=draft)  # the codec's own check and message
    return unstable, draft


#: The v2 draft each SDK release speaks where it is not the newest one acp-fast holds.
SDK_DRAFTS = {"1.0.0rc3": "alpha.5"}


def sdk_draft() -> str:
    """The v2 draft of the installed SDK: ``'alpha.5'`` for 1.0.0rc3 (its models are generated from
    that draft), else ``'latest'``."""
    return SDK_DRAFTS.get(_sdk_version(), "latest")


def _sdk_version() -> str:
    try:
        return importlib.metadata.version("agent-client-protocol")
    except importlib.metadata.PackageNotFoundError:
        return ""


# ---------------------------------------------------------------------------------------------
# The connection


class FastConnection(SdkConnection):
    """``acp.connection.Connection`` with acp-fast framing, JSON and dispatch.

    Same constructor as the SDK's (``Connection(handler, writer, reader, *, observers,
    listening, receive_timeout)``) plus ``max_frame_bytes``, ``reply_errors``, ``backend`` and
    ``strict`` (defaults: the options of [`install`][acp_fast.integrations.acp_sdk.install]). Given a message-level ``Transport`` instead of
    streams (no ``reader``: the SDK's HTTP and WebSocket transports), it is the SDK's connection
    unchanged, there being no frames to split (the transports' JSON is acp-fast's after
    ``install()``, ``_sdk_network.py``), except that with ``strict`` every message received is
    checked against the schema and refused as a frame would be (``_StrictMessageTransport``).
    """

    def __init__(
        self,
        handler: Callable[[str, Any, bool], Awaitable[Any]],
        writer: Any,
        reader: Optional[asyncio.StreamReader] = None,
        *,
        observers: Optional[List[Any]] = None,
        listening: bool = True,
        receive_timeout: Optional[float] = None,
        max_frame_bytes: Any = _UNSET,
        reply_errors: Any = _UNSET,
        backend: Any = _UNSET,
        strict: Any = _UNSET,
    ) -> None:
        options = _options
        max_frame_bytes = options.max_frame_bytes if max_frame_bytes is _UNSET else max_frame_bytes
        reply_errors = options.reply_errors if reply_errors is _UNSET else reply_errors
        backend = options.backend if backend is _UNSET else backend
        strict = options.strict if strict is _UNSET else _check_strict(strict)
        schema = options.schema
        _check_max_frame_bytes(max_frame_bytes)
        self._backend = acp_fast if backend is None else backend
        self._message_type = self._backend.Message
        self._reply_errors = bool(reply_errors)
        self._queue: Deque[Any] = collections.deque()
        self._dispatching = False
        self._as_sdk = False  # in _dispatch_as_sdk
        self._drained: Optional[asyncio.Future[None]] = None
        # The SDK client's update tracker, when this connection may use the fast path for
        # session/update (see _update_tracker).
        self._tracker = _update_tracker(handler)
        self._strict_update = _update_validators() if self._tracker is not None else {}
        if reader is None:
            self._stream: Optional[_StreamTransport] = None
            if strict:
                # A message-level transport (the SDK's HTTP and WebSocket ones): every message
                # received is checked as a frame would be, and refused as on a byte stream.
                writer = _StrictMessageTransport(writer, self._backend, max_frame_bytes, schema, self._bad_frame)
            super().__init__(
                handler, writer, None, observers=observers, listening=listening, receive_timeout=receive_timeout
            )
            return
        transport = _StrictStreamTransport if strict else _StreamTransport
        version = 2 if speaks_v2_only(handler) else None  # else negotiated
        self._stream = transport(reader, writer, self._backend, max_frame_bytes, receive_timeout, schema, version)
        # The SDK's Transport minus `receive`: Connection only sends through it (it tells transports
        # from writers by `reader`), and this class reads with receive_frames.
        super().__init__(
            handler,
            self._stream,  # type: ignore[arg-type]
            None,
            observers=observers,
            listening=listening,
            receive_timeout=receive_timeout,
        )

    @property
    def max_frame_bytes(self) -> Optional[int]:
        """The frame size limit in force (None for a message-level transport)."""
        return None if self._stream is None else self._stream._decoder.max_frame_bytes

    # -- receiving

    async def _receive_loop(self) -> None:
        stream = self._stream
        if stream is None:
            await super()._receive_loop()
            return
        try:
            while True:
                frames = await stream.receive_frames()
                if frames is None:
                    break
                if frames:
                    self._enqueue(frames)
            # End of input: the frames already read are dispatched (responses resolve their
            # requests) before the connection counts as disconnected, as in the SDK.
            self._drained = asyncio.get_running_loop().create_future()
            self._enqueue((_EOF,))
            await self._drained
        except asyncio.CancelledError:
            return
        except asyncio.TimeoutError:
            raise RequestError.internal_error({"details": "Agent timeout"}) from None

    def _enqueue(self, frames: Any) -> None:
        self._queue.extend(frames)
        if not self._dispatching:
            self._dispatching = True
            self._tasks.create(self._dispatch_queue(), name="acp_fast.dispatch")

    async def _dispatch_queue(self) -> None:
        """Start the handler of every queued frame, in order. A handler runs inside this task until
        it first suspends; then the rest of the queue goes to a new dispatcher task and this one
        keeps driving that handler (so ``asyncio.current_task()`` stays the handler's task)."""
        queue = self._queue
        start = self._start
        tracker = self._tracker
        handler: Any = tracker._session_update if tracker is not None else None  # called only when hot
        validate_update = _validate_update
        strict_get = self._strict_update.get
        hot = tracker is not None and validate_update is not None
        observers = self._observers  # the SDK's list: add_observer appends to it
        message_type = self._message_type
        copy_context = contextvars.copy_context
        driver: Any = None
        send: Any = None
        while queue:
            item = queue.popleft()
            session_id = None
            try:
                if tracker is not None and type(item) is message_type and item.method == "session/update":
                    # The client's hot path (see _update_handler): the handler coroutine itself.
                    # update_kind: params.update.sessionUpdate when a str, so params is an object
                    # holding sessionId (a str: session_id) and update, and nothing else if its
                    # length is 2.
                    kind = item.update_kind
                    session_id = item.session_id
                    params = item.params
                    if (
                        hot
                        and kind is not None
                        and session_id is not None
                        and len(params) == 2
                        and not observers
                        and item.kind == "notification"
                    ):
                        update = params["update"]
                        try:
                            update = strict_get(kind, validate_update)(update)
                        except ValidationError:
                            try:
                                update = validate_update(update)  # the SDK's lenient validator
                            except ValidationError:
                                _validate_notification(params)  # raises the SDK's own error
                                raise
                        coro = handler(session_id=session_id, update=update)
                        if type(coro) is not _CoroutineType:
                            coro = _await(coro)
                    elif item.kind == "notification":
                        session_id, coro = self._update_handler(item)
                    else:
                        session_id = None
                        coro = start(item)
                else:
                    coro = start(item)
                if coro is None:
                    continue
                if driver is None:
                    driver = _driver()
                    send = driver.send
                    send(None)
                ctx = copy_context()
                first = ctx.run(send, coro)
                if first is _DONE:
                    continue
            except StopIteration:  # pragma: no cover - the driver never returns
                driver = None
                continue
            except Exception as exc:  # logged as the SDK does
                driver = None  # the handler's error went through it: it is finished
                if session_id is not None or (
                    tracker is not None
                    and type(item) is message_type
                    and item.method == "session/update"
                    and item.kind == "notification"
                ):
                    logging.exception(
                        "Unhandled error while handling notification method=%s", "session/update", exc_info=exc
                    )
                else:
                    logging.exception("Background task failed", exc_info=exc)
                continue
            except BaseException:
                self._dispatching = False
                if queue:
                    self._enqueue(())
                raise
            # The handler has suspended: the driver now holds it until it ends.
            if queue:
                self._tasks.create(self._dispatch_queue(), name="acp_fast.dispatch")
            else:
                self._dispatching = False
            if session_id is None:
                await _Resume(driver, first, ctx)
            else:
                await self._finish_update(session_id, driver, first, ctx)
            return
        self._dispatching = False

    def _update_handler(self, item: Any) -> Any:
        """For a client-side ``session/update``: validate ``params`` as the SDK's route does
        (``SessionNotification``), build the same keyword arguments, and return
        ``(session_id, the client's session_update coroutine)``.

        ``_dispatch_queue`` inlines the common case: when ``params`` is exactly
        ``{"sessionId": <str>, "update": ...}`` (what every sender writes), only ``update`` goes
        through pydantic, with the validator of ``SessionNotification.update`` itself, which gives
        the same model for less (any validation error is raised by ``SessionNotification``, as
        in the SDK).

        The SDK wraps the call in its update tracker (a future per update, so that ``prompt()``
        can wait for the updates still running). That bookkeeping is invisible to every other task
        for a handler that completes without suspending, so it is only done when the handler
        suspends (``_finish_update``)."""
        if self._observers:
            self._emit(StreamDirection.INCOMING, item.to_dict())
        notification = _validate_notification(item.params)
        kwargs = {"session_id": notification.session_id, "update": notification.update}
        meta = notification.field_meta
        if meta:
            kwargs.update(meta)
        coro = self._tracker._session_update(**kwargs)
        if type(coro) is not _CoroutineType:
            coro = _await(coro)
        return kwargs["session_id"], coro

    async def _finish_update(self, session_id: str, coro: Any, first: Any, ctx: contextvars.Context) -> None:
        """The SDK tracker's bookkeeping around an update handler that has suspended."""
        tracker = self._tracker
        completed = asyncio.get_running_loop().create_future()
        pending = tracker._pending.setdefault(session_id, set())
        pending.add(completed)
        token = ctx.run(tracker._current_update.set, completed)
        try:
            await _Resume(coro, first, ctx)
        except Exception as exc:  # as the SDK's _run_notification
            logging.exception("Unhandled error while handling notification method=%s", "session/update", exc_info=exc)
        finally:
            ctx.run(tracker._current_update.reset, token)
            if not completed.done():
                completed.set_result(None)
            pending.discard(completed)
            if not pending:
                tracker._pending.pop(session_id, None)

    def _start(self, item: Any) -> Any:
        """Handle one queued item: a coroutine to run for it, or None when it is already done."""
        if type(item) is self._message_type:
            kind = item.kind
            if self._observers:
                self._emit(StreamDirection.INCOMING, item.to_dict())
            if kind == "notification":
                if MIRROR_REQUESTS and item.method == CANCEL_REQUEST_METHOD:
                    self._process_message(item.to_dict())  # the SDK cancels the request's task
                    return None
                return self._run_notification({"method": item.method, "params": item.params})
            if kind == "request":
                if MIRROR_REQUESTS:
                    # The SDK's own dispatch: the handler in a task of its own, tracked so that
                    # $/cancel_request can cancel it (even before it starts), and a task that
                    # sends its response. The frames read with it follow as the SDK takes them.
                    self._process_message(item.to_dict())
                    self._dispatch_as_sdk()
                    return None
                return self._run_request(
                    {"jsonrpc": "2.0", "id": item.id, "method": item.method, "params": item.params}
                )
            self._handle_response(item.to_dict())
            return None
        if isinstance(item, Batch):
            if self._no_batches():
                error = self._bad_frame(self._batch_error(item.raw, item.line))
                if error is not None:
                    self._write_reply(error)
                return None
            reply = _BatchReply(self)
            last = len(item) - 1
            self._queue.extendleft(reversed([_Entry(entry, reply, i == last) for i, entry in enumerate(item)]))
            return None
        if isinstance(item, _Entry):
            return self._start_entry(item)
        if isinstance(item, DecodeError):
            error = self._bad_frame(item)
            if error is not None:
                self._write_reply(error)
            return None
        if item is _EOF:
            self._disconnect()
            if self._drained is not None and not self._drained.done():
                self._drained.set_result(None)
            return None
        raise TypeError(f"unexpected item in the dispatch queue: {item!r}")  # pragma: no cover

    def _start_entry(self, entry: _Entry) -> Any:
        item, reply = entry.item, entry.reply
        coro = None
        mirrored = False
        if isinstance(item, DecodeError):
            error = self._bad_frame(item)
            if error is not None:
                reply.replies.append(error)
        elif item.kind == "request":
            if self._observers:
                self._emit(StreamDirection.INCOMING, item.to_dict())
            reply.expected += 1
            message = {"jsonrpc": "2.0", "id": item.id, "method": item.method, "params": item.params}
            if MIRROR_REQUESTS:  # as _process_message does for a request on a line of its own
                handler = self._tasks.create(self._execute_request(message), name="acp.Connection.request")
                self._track_incoming(message["id"], handler)  # type: ignore[attr-defined]  # SDK 1.0 (MIRROR_REQUESTS)
                self._tasks.create(self._run_batched_request(message, reply, handler), name="acp.Connection.response")
                mirrored = True
            else:
                coro = self._run_batched_request(message, reply)
        else:
            coro = self._start(item)
        if entry.last:
            reply.sealed = True
            reply.flush_if_done()
        if mirrored:
            self._dispatch_as_sdk()
        return coro

    async def _run_batched_request(
        self, message: Dict[str, Any], reply: _BatchReply, handler: Optional[asyncio.Task[Any]] = None
    ) -> None:
        """The reply to one request of a batch, added to the batch's reply. ``handler``: the task
        already running ``_execute_request`` (when the SDK cancels requests), whose cancellation
        gives the SDK's "request cancelled" error, as in its ``_run_request``."""
        try:
            if handler is None:
                payload = await self._execute_request(message)
            else:
                await asyncio.wait({handler})
                if handler.cancelled():
                    error = RequestError.request_cancelled().to_error_obj()  # type: ignore[attr-defined]
                    payload = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                else:
                    payload = handler.result()
        except BaseException:
            reply.expected -= 1
            reply.flush_if_done()
            raise
        reply.expected -= 1
        reply.add(payload)

    def _dispatch_as_sdk(self) -> None:
        """Take the rest of the queue as the SDK's receive loop takes the messages of a read: each
        through ``_process_message`` (a task per handler, created now, started in order;
        ``$/cancel_request`` and responses handled at once), batches and bad lines as
        ``_start`` does, their coroutines in tasks. Used once a request has been given a task
        of its own, so that nothing read after it starts before it, and a ``$/cancel_request``
        read with it cancels it before it starts, as in the SDK."""
        if self._as_sdk:  # already draining (a request in a batch): that loop goes on
            return
        self._as_sdk = True
        queue, message_type = self._queue, self._message_type
        try:
            while queue:
                item = queue.popleft()
                if type(item) is message_type:
                    if self._observers:
                        self._emit(StreamDirection.INCOMING, item.to_dict())
                    self._process_message(item.to_dict())
                    continue
                coro = self._start(item)
                if coro is not None:
                    self._tasks.create(coro, name="acp.Connection.notification")
        finally:
            self._as_sdk = False

    def _handle_response(self, message: Dict[str, Any]) -> None:
        """The SDK's, once the protocol version is learned from ``message`` (see _StreamTransport)."""
        stream = self._stream
        if stream is not None and stream.negotiates:
            stream.negotiated(message)
        super()._handle_response(message)

    def _no_batches(self) -> bool:
        """Whether the connection speaks protocol v2, which has no batches."""
        stream = self._stream
        return stream is not None and stream.protocol_version >= 2

    def _batch_error(self, raw: bytes, line: Optional[int]) -> DecodeError:
        """The error of a batch frame under protocol v2 (at line ``line``): the state engine's own
        (-32600, kind ``batch_in_v2``, at its ``[``), as a ``ToolCallStore`` under v2 raises it."""
        try:
            self._backend.ToolCallStore(2).apply(raw)
        except DecodeError as error:
            at = error.position
            return DecodeError(
                error.msg,
                code=error.code,
                kind=error.kind,
                position=at,
                lineno=None if at is None else line,
                colno=None if at is None else at + 1,
                line=line,
                raw=raw,
            )
        raise AssertionError("a ToolCallStore under protocol v2 applied a batch")  # pragma: no cover

    def _bad_frame(self, error: DecodeError) -> Any:
        """Log a bad frame; fail the request it answers, if any; the error reply it deserves."""
        if error.kind == "schema":
            if error.raw and error.raw.lstrip()[:1] == b"[" and self._no_batches():
                # With ``strict``: the schema check refuses a v2 batch as a whole; it gets the
                # error of a batch under v2, as without ``strict``.
                return self._bad_frame(self._batch_error(error.raw, error.line))
            return self._refused(error)
        logger.warning("acp-fast: bad frame on line %s: %s", error.line, printable(str(error)))
        if self._fail_pending(error):
            return None
        if not self._reply_errors:
            return None
        request_error = RequestError.parse_error if error.code == -32700 else RequestError.invalid_request
        return {"jsonrpc": "2.0", "id": None, "error": request_error({"details": str(error)}).to_error_obj()}

    def _refused(self, error: DecodeError) -> Any:
        """With ``strict``: a frame the schema refuses, handled as the SDK handles invalid params
        (its ``ValidationError``): each request is answered with a -32602 error of its id, a
        notification is logged and dropped, a response fails the request it answers (else it is
        dropped, as the SDK drops a response to nothing). The reply (a list for a batch), or None."""
        logger.warning("acp-fast: frame on line %s refused by the schema: %s", error.line, printable(str(error)))
        problems = [{"path": p.path, "message": p.message, "rule": p.rule} for p in error.problems]  # type: ignore[attr-defined]
        data = {"details": str(error), "errors": problems}
        frame = self._backend.loads(error.raw)
        replies = []
        for message in frame if isinstance(frame, list) else [frame]:
            if not isinstance(message, dict):
                continue
            if self._observers:
                self._emit(StreamDirection.INCOMING, message)
            if "method" in message:
                if "id" in message:
                    obj = RequestError.invalid_params(data).to_error_obj()
                    replies.append({"jsonrpc": "2.0", "id": message["id"], "error": obj})
                continue
            if "id" not in message:
                continue
            try:
                future = self._pending.pop(message["id"], None)
            except TypeError:  # unhashable id
                continue
            if future is not None and not future.done():
                future.set_exception(RequestError.invalid_params({**data, "response": message}))
        if not replies:
            return None
        return replies if isinstance(frame, list) else replies[0]

    def _fail_pending(self, error: DecodeError) -> bool:
        """An invalid response to one of our pending requests fails that request (the SDK would
        have resolved it with ``None`` or the ``result`` it found)."""
        if error.code != -32600 or not error.raw or not self._pending:
            return False
        try:
            obj = self._backend.loads(error.raw)
        except ValueError:
            return False
        if not isinstance(obj, dict) or "method" in obj or "id" not in obj:
            return False
        request_id = obj["id"]
        try:
            future = self._pending.pop(request_id, None)
        except TypeError:  # unhashable id
            return False
        if future is None:
            return False
        if not future.done():
            future.set_exception(RequestError.invalid_request({"details": str(error), "response": obj}))
        return True

    def _write_reply(self, payload: Any) -> None:
        stream = self._stream
        assert stream is not None
        try:
            stream.write_now(stream.encode(payload))
        except Exception:  # the connection may be closing
            logger.exception("acp-fast: could not write an error reply")
            return
        if self._observers:
            for item in payload if isinstance(payload, list) else (payload,):
                self._notify_observers(StreamDirection.OUTGOING, item)

    # -- observers

    def _emit(self, direction: StreamDirection, snapshot: Dict[str, Any]) -> None:
        """The SDK's observer loop for a message that is already a private copy."""
        event = StreamEvent(direction, snapshot)
        for observer in list(self._observers):
            try:
                result = observer(event)
            except Exception:
                logging.exception("Stream observer failed", exc_info=True)
                continue
            if inspect.isawaitable(result):
                self._tasks.create(
                    result,
                    name=f"acp.Connection.observer.{direction.value}",
                    on_error=self._on_observer_error,
                )

    def _notify_observers(self, direction: StreamDirection, message: Dict[str, Any]) -> None:
        if not self._observers:
            return
        self._emit(direction, copy.deepcopy(message))
