"""The Streamable HTTP and WebSocket transport of ACP as `acp-fast serve` and `acp-fast connect`
speak it (docs/NETWORK.md): the header names, the methods whose POST names a session, where a
message goes, and the SSE framing. No HTTP library here: these are plain functions on the
decoded messages."""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "ACP_PATH",
    "CONNECTION_HEADER",
    "KEEPALIVE",
    "KEEPALIVE_SECONDS",
    "SESSION_ATTACH_METHODS",
    "SESSION_HEADER",
    "SESSION_SCOPED_METHODS",
    "is_initialize",
    "is_response",
    "key",
    "sse_event",
    "session_of",
    "session_in_result",
]

#: The endpoint path.
ACP_PATH = "/acp"
#: The header that names the connection (the answer to `initialize` carries it; every later
#: request of the connection sends it back).
CONNECTION_HEADER = "Acp-Connection-Id"
#: The header that names the session of a session-scoped POST or SSE stream.
SESSION_HEADER = "Acp-Session-Id"
#: Seconds an SSE stream may stay quiet before a keepalive comment is sent.
KEEPALIVE_SECONDS = 15.0
#: The SSE comment sent on a quiet stream.
KEEPALIVE = b": keepalive\n\n"

#: Requests that attach the session named in their params (its replay comes on the connection's
#: stream, the session's stream exists from the request on).
SESSION_ATTACH_METHODS = frozenset({"session/load", "session/resume"})
#: Methods on an established session: their POST carries `Acp-Session-Id`, their responses come
#: on the session's stream.
SESSION_SCOPED_METHODS = frozenset(
    {"session/set_mode", "session/set_config_option", "session/prompt", "session/cancel", "session/close"}
)


def key(message_id: Any) -> Optional[str]:
    """A request id as a routing key (an integer and its string are the same request)."""
    return None if message_id is None else str(message_id)


def is_initialize(message: Any) -> bool:
    """An `initialize` request."""
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message


def is_response(message: Any) -> bool:
    """A response (an id and no method)."""
    return isinstance(message, dict) and "id" in message and "method" not in message


def session_of(message: Any) -> Optional[str]:
    """The `sessionId` in a message's params (a request or notification)."""
    params = message.get("params") if isinstance(message, dict) else None
    sid = params.get("sessionId") if isinstance(params, dict) else None
    return sid if isinstance(sid, str) else None


def session_in_result(message: Any) -> Optional[str]:
    """The `sessionId` in a response's result (`session/new` and the like)."""
    result = message.get("result") if isinstance(message, dict) else None
    sid = result.get("sessionId") if isinstance(result, dict) else None
    return sid if isinstance(sid, str) else None


def sse_event(line: bytes) -> bytes:
    """One message as an SSE event: its bytes as they are (one line of JSON), then a blank line."""
    return b"data: " + line + b"\n\n"
