"""A programmable ACP proxy: ``acp-fast proxy`` as a Python API (docs/PROXY.md, "Middleware").

    from acp_fast.proxy import Proxy
    from acp_fast.proxy.examples import AutoApprove, RedactSecrets

    proxy = Proxy(["my-agent"], middleware=[AutoApprove({"read"}), RedactSecrets(r"sk-[A-Za-z0-9]{20,}")])
    sys.exit(proxy.run())

[`Proxy`][acp_fast.proxy.Proxy] relays an editor (this process's stdin / stdout) and the agent it starts, byte-exact,
tracking every session's state; each [`Middleware`][acp_fast.proxy.Middleware] sees every message of both directions as
a [`acp_fast.Message`][acp_fast.Message] and returns it (forwarded byte-exact), a replacement, a list of frames,
or nothing (dropped); its [`Context`][acp_fast.proxy.Context] injects frames in either direction, notes the reason of
a drop or replacement (in the recording) and reaches the state. With no middleware the relay works
on whole blocks of lines, as fast as without this API.
"""

from __future__ import annotations

from ._middleware import Context, Drop, Frame, Middleware, Result
from ._proxy import (
    DEFAULT_COALESCE_MS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_TOOL_CALLS,
    INVALID_LINES_STATUS,
    INVALID_POLICIES,
    Proxy,
    format_summary,
)

__all__ = [
    "DEFAULT_COALESCE_MS",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_TOOL_CALLS",
    "INVALID_LINES_STATUS",
    "INVALID_POLICIES",
    "Context",
    "Drop",
    "Frame",
    "Middleware",
    "Proxy",
    "Result",
    "format_summary",
]
