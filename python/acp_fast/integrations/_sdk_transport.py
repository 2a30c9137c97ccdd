"""The byte transport of [`acp_fast.integrations.acp_sdk.FastConnection`][acp_fast.integrations.acp_sdk.FastConnection]: NDJSON over asyncio
streams with acp-fast framing and JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import acp_fast
from acp_fast.errors import DecodeError, EncodeError

#: Bytes asked of the reader per read.
READ_SIZE = 256 * 1024


class _StreamTransport:
    """NDJSON over an asyncio ``StreamReader`` / ``StreamWriter`` with acp-fast framing and JSON.

    ``Connection`` sends through it (``send`` / ``close``, as the SDK's ``Transport``);
    ``FastConnection`` reads through ``receive_frames``.

    ``protocol_version`` is the protocol version in force on the connection (which decides whether
    a batch frame is dispatched: v1, or answered with one error: v2, which has no batches). Given
    (2 for an experimental v2 connection), it is fixed; else it is learned, as
    ``ToolCallStore.negotiated_version`` is, from every success response whose ``result`` holds an
    integer ``protocolVersion`` (the ``initialize`` answer): the ones written here
    ([`encode`][acp_fast.encode]), and the ones read, which ``FastConnection`` hands to ``negotiated``;
    1 until then."""

    #: The decoder's ``strict_schema`` (``_StrictStreamTransport`` sets it).
    strict_schema = False

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        backend: Any,
        max_frame_bytes: int,
        receive_timeout: Optional[float],
        schema: Tuple[bool, Optional[str]] = (False, None),
        protocol_version: Optional[int] = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        # Either backend's (same API; typed as the package's). `schema`: (unstable, draft) of the
        # strict check.
        unstable, draft = schema
        self._decoder: acp_fast.FrameDecoder = backend.FrameDecoder(
            max_frame_bytes=max_frame_bytes, strict_schema=self.strict_schema, unstable=unstable, draft=draft
        )
        self._dumps: Callable[[Any], bytes] = backend.dumps
        self._receive_timeout = receive_timeout
        self._drain_lock = asyncio.Lock()
        self._closed = False
        self.protocol_version = 1 if protocol_version is None else protocol_version
        self.negotiates = protocol_version is None

    # -- the protocol version

    def negotiated(self, message: Any) -> None:
        """Learn the protocol version from ``message`` (one message read or written) when it is a
        success response whose ``result`` holds an integer ``protocolVersion``: 1 if that is at
        most 1, else 2."""
        if type(message) is not dict:
            return
        result = message.get("result")
        if type(result) is dict:
            version = result.get("protocolVersion")
            if type(version) is int:
                self.protocol_version = 1 if version <= 1 else 2

    # -- reading

    async def receive_frames(self) -> Optional[List[Any]]:
        """The frames completed by the next read (possibly none), or None at end of input."""
        if self._receive_timeout is None:
            data = await self._reader.read(READ_SIZE)
        else:
            data = await asyncio.wait_for(self._reader.read(READ_SIZE), timeout=self._receive_timeout)
        if not data:
            tail = self._decoder.finish()
            return tail if tail else None
        return self._decoder.feed(data)

    # -- writing

    def encode(self, message: Any) -> bytes:
        if self.negotiates:
            for reply in message if type(message) is list else (message,):
                self.negotiated(reply)
        try:
            return self._dumps(message) + b"\n"
        except EncodeError:
            # What the SDK's json.dumps accepts and acp-fast does not (non-str keys, str
            # subclasses as keys, very deep nesting): written by json as the SDK did, but never
            # NaN / Infinity, which are not JSON.
            return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")

    def write_now(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionError("Connection closed")
        self._writer.write(data)

    async def send(self, message: Dict[str, Any]) -> None:
        self.write_now(self.encode(message))
        async with self._drain_lock:  # no suspension unless the pipe is full
            await self._writer.drain()

    async def close(self) -> None:
        # Like the SDK's MessageSender: stop sending, leave the stream to its owner.
        self._closed = True


class _StrictStreamTransport(_StreamTransport):
    """``_StreamTransport`` for ``install(strict=True)``: its decoder checks every frame read
    against the schema (``strict_schema=True``: the version of the ``initialize`` answer) and is
    told every frame written (``FrameDecoder.sent``), so that a response read is checked against
    the request it answers."""

    strict_schema = True

    def encode(self, message: Any) -> bytes:
        data = super().encode(message)
        self._decoder.sent(data)
        return data


class _StrictMessageTransport:
    """``install(strict=True)`` on a message-level ``Transport`` (the SDK's HTTP and WebSocket
    ones, which move parsed messages): every message received is written by acp-fast and checked
    by a ``FrameDecoder(strict_schema=True)``, told every message sent (``FrameDecoder.sent``), as
    ``_StrictStreamTransport`` checks the frames of a byte stream. A message the check refuses is
    not handed to the connection: ``refuse`` (``FastConnection._bad_frame``) gives the reply it
    deserves (a -32602 error for a request, as on a byte stream), which is sent back through the
    transport; the next message is read."""

    def __init__(
        self,
        transport: Any,
        backend: Any,
        max_frame_bytes: int,
        schema: Tuple[bool, Optional[str]],
        refuse: Callable[[Any], Any],
    ) -> None:
        self._transport = transport
        unstable, draft = schema
        self._decoder: acp_fast.FrameDecoder = backend.FrameDecoder(
            max_frame_bytes=max_frame_bytes, strict_schema=True, unstable=unstable, draft=draft
        )
        self._dumps: Callable[[Any], bytes] = backend.dumps
        self._refuse = refuse

    def _encode(self, message: Any) -> bytes:
        try:
            return self._dumps(message)
        except EncodeError:  # as _StreamTransport.encode
            return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")

    async def send(self, message: Dict[str, Any]) -> None:
        self._decoder.sent(self._encode(message))
        await self._transport.send(message)

    async def receive(self) -> Optional[Dict[str, Any]]:
        while True:
            message: Optional[Dict[str, Any]] = await self._transport.receive()
            if message is None:
                return None
            try:
                data = self._encode(message)
            except ValueError:  # NaN and the like: not JSON; the SDK takes it as it is
                return message
            errors = [frame for frame in self._decoder.feed(data + b"\n") if isinstance(frame, DecodeError)]
            if not errors:
                return message
            reply = self._refuse(errors[0])
            if reply is not None:
                await self.send(reply)

    async def close(self) -> None:
        await self._transport.close()

    def __getattr__(self, name: str) -> Any:  # what else the SDK or its server asks of the transport
        return getattr(self._transport, name)
