"""``acp-fast connect URL``: a stdio endpoint for an editor, to a remote ACP agent over Streamable
HTTP (http://, https://) or WebSocket (ws://, wss://).

The command line of `acp_fast.net.connect` (docs/NETWORK.md). Needs the `net` extra.
"""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import acp_fast

from .._outputs import check_output
from ._usage import Parser, fail, integer
from .proxy import add_bridge_option, add_coalesce_option, add_middleware_option, made_middleware
from .serve import TOKEN_ENV

__all__ = ["main", "parser"]

SCHEMES = ("http://", "https://", "ws://", "wss://")


def parser() -> Parser:
    p = Parser(
        prog="acp-fast connect",
        usage="acp-fast connect URL [options]",
        description="Connect an editor on stdin/stdout to a remote ACP agent over Streamable HTTP "
        "(http://, https://) or WebSocket (ws://, wss://), e.g. http://127.0.0.1:8765/acp (docs/NETWORK.md).",
    )
    p.add_argument("url", metavar="URL", help="the agent's endpoint: http(s)://HOST:PORT/acp or ws(s)://HOST:PORT/acp")
    p.add_argument(
        "--token", metavar="TOKEN", help=f"send Authorization: Bearer TOKEN (default: ${TOKEN_ENV} when set)"
    )
    p.add_argument("--record", metavar="FILE", help="write an NDJSON recording of both directions (docs/CLI.md)")
    p.add_argument("--trace", metavar="FILE.jsons", help="write a trace in the ACP conductor's format")
    p.add_argument("--force", action="store_true", help="overwrite the --record / --trace files")
    p.add_argument(
        "--strict", action="store_true", help="answer editor lines that are not JSON-RPC with an error (not sent)"
    )
    add_coalesce_option(p)
    add_bridge_option(p, "the editor and the remote agent")
    add_middleware_option(p, "once")
    p.add_argument(
        "--max-frame-bytes",
        type=integer(1, acp_fast.MAX_FRAME_BYTES),
        default=acp_fast.DEFAULT_MAX_FRAME_BYTES,
        metavar="N",
        help="longest line or message relayed (default 64 MiB)",
    )
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..net import require_net

    try:
        require_net()
    except ImportError as exc:
        return fail("acp-fast connect", str(exc))
    p = parser()
    ns = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not ns.url.lower().startswith(SCHEMES) or "://" not in ns.url or not ns.url.split("://", 1)[1].strip("/"):
        p.error(f"expected an http://, https://, ws:// or wss:// URL, e.g. http://127.0.0.1:8765/acp, found {ns.url!r}")
    for option, path in (("--record", ns.record), ("--trace", ns.trace)):
        if path:
            problem = check_output(path, ns.force)
            if problem is not None:
                p.error(f"{option} {path}: {problem}")
            if ns.force and os.path.lexists(path):
                os.unlink(path)
    if ns.record and ns.trace and os.path.abspath(ns.record) == os.path.abspath(ns.trace):
        p.error(f"--record and --trace name the same file {ns.record}")
    token = ns.token if ns.token is not None else os.environ.get(TOKEN_ENV) or None
    middleware = made_middleware(p, ns.middleware)
    from ..net.connect import run

    return run(
        ns.url,
        token=token,
        record=ns.record,
        trace=ns.trace,
        strict=ns.strict,
        coalesce=ns.coalesce,
        bridge=ns.bridge,
        middleware=middleware,
        max_frame_bytes=ns.max_frame_bytes,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
