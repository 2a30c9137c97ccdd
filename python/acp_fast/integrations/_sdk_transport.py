"""The byte transport of :class:`acp_fast.integrations.acp_sdk.FastConnection`: NDJSON over asyncio
streams with acp-fast framing and JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import acp_fast
from acp_fast.errors import EncodeError

#: Bytes asked of the reader per read.
READ_SIZE = 256 * 1024


class _StreamTransport:
    """NDJSON over an asyncio ``StreamReader`` / ``StreamWriter`` with acp-fast framing and JSON.

    ``Connection`` sends through it (``send`` / ``close``, as the SDK's ``Transport``);
    :class:`FastConnection` reads through :meth:`receive_frames`."""

    #: The decoder's ``strict_schema`` (:class:`_StrictStreamTransport` sets it).
    strict_schema = False

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        backend: Any,
        max_frame_bytes: int,
        receive_timeout: Optional[float],
        schema: Tuple[bool, Optional[str]] = (False, None),
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
    """:class:`_StreamTransport` for ``install(strict=True)``: its decoder checks every frame read
    against the schema (``strict_schema=True``: the version of the ``initialize`` answer) and is
    told every frame written (``FrameDecoder.sent``), so that a response read is checked against
    the request it answers."""

    strict_schema = True

    def encode(self, message: Any) -> bytes:
        data = super().encode(message)
        self._decoder.sent(data)
        return data
