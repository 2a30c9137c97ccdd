"""ACP over the network: `acp-fast serve` and `acp-fast connect` (docs/NETWORK.md).

`acp-fast serve -- AGENT...` exposes a stdio agent over Streamable HTTP and WebSocket, one agent
process per client connection, with the proxy's recording, trace, state tracking and strict mode
per connection (`acp_fast.net.serve`). `acp-fast connect URL` is the other end: a stdio endpoint
for an editor, talking to a remote agent over HTTP/SSE or WebSocket (`acp_fast.net.connect`).

Both need the `net` extra (`pip install 'acp-fast[net]'`, which brings aiohttp); this package
imports it only in its submodules, so `import acp_fast` works without it.
"""

from __future__ import annotations

__all__ = ["INSTALL", "require_net"]

#: What to install for `acp-fast serve` and `acp-fast connect`.
INSTALL = "pip install 'acp-fast[net]'"


def require_net() -> None:
    """Raise ImportError naming the `net` extra when aiohttp is not installed."""
    try:
        import aiohttp  # noqa: F401
    except ImportError as e:
        raise ImportError(f"ACP over the network needs aiohttp, which is not installed: {INSTALL}") from e
