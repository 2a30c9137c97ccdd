"""``acp-fast serve``: a stdio ACP agent over Streamable HTTP and WebSocket.

    acp-fast serve [--listen HOST:PORT] [options] -- AGENT COMMAND...

The command line of `acp_fast.net.serve` (docs/NETWORK.md): argument parsing and the checks of
what it will write, then the gateway. Needs the `net` extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence, Tuple

import acp_fast

from ..proxy import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOOL_CALLS
from ._usage import Parser, bound, fail, integer, number, split_command
from .proxy import add_bridge_option, add_coalesce_option, add_middleware_option

__all__ = ["main", "parser", "listen_address", "check_template", "TOKEN_ENV"]

#: The environment variable read for `--token` when the option is not given.
TOKEN_ENV = "ACP_FAST_TOKEN"
DEFAULT_LISTEN = "127.0.0.1:8765"
NO_TOKEN = " and require a token (--token); anyone who reaches this port can run the agent"


def listen_address(text: str) -> Tuple[str, int]:
    """`--listen HOST:PORT` (`[::1]:PORT` for IPv6; port 0: any free port)."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:8765, found {text!r}")
    return host, int(port)


def check_template(option: str, template: str) -> Optional[str]:
    """Why `--record` / `--trace` `template` cannot name one file per connection (None when it can)."""
    if os.path.isdir(template):
        return None
    if "{id}" not in template and "{n}" not in template:
        return (
            f"{option} {template}: expected a directory or a file name with {{id}} or {{n}} "
            "(one file per connection), e.g. recordings/{id}.jsonl"
        )
    folder = os.path.dirname(os.path.abspath(template.replace("{id}", "x").replace("{n}", "1")))
    if not os.path.isdir(folder):
        return f"{option} {template}: no folder {folder}"
    return None


def parser() -> argparse.ArgumentParser:
    from ..net.serve import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_QUEUE

    p = Parser(
        prog="acp-fast serve",
        usage="acp-fast serve [--listen HOST:PORT] [options] -- AGENT COMMAND...",
        description="Expose a stdio ACP agent over Streamable HTTP and WebSocket at /acp, "
        "one agent process per client connection (docs/NETWORK.md).",
    )
    p.add_argument(
        "--listen",
        type=listen_address,
        default=listen_address(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"address to listen on (default {DEFAULT_LISTEN}; port 0: any free port, printed at start)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --listen address other than loopback (reachable from other machines: use --token and TLS)",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"require Authorization: Bearer TOKEN from clients (default: ${TOKEN_ENV} when set)",
    )
    p.add_argument(
        "--max-connections",
        type=bound(1),
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="connections (agent processes) at once; more are answered 503 "
        f"(default {DEFAULT_MAX_CONNECTIONS}; none: no limit)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=integer(1, acp_fast.MAX_FRAME_BYTES),
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
        help="largest POST body or WebSocket message, and longest agent line; larger bodies are answered 413 "
        "(default 64 MiB)",
    )
    p.add_argument(
        "--idle-timeout",
        type=number(0, None, noun="number of seconds"),
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"end a connection with no message either way for this long (default {DEFAULT_IDLE_TIMEOUT:g}; 0: never)",
    )
    p.add_argument(
        "--queue",
        type=integer(1, 1 << 20),
        default=DEFAULT_QUEUE,
        metavar="N",
        help="messages held per SSE stream for a slow client before the agent's output is paused "
        f"(default {DEFAULT_QUEUE})",
    )
    p.add_argument("--strict", action="store_true", help="answer client messages that are not JSON-RPC with an error")
    p.add_argument(
        "--record",
        metavar="DIR|TEMPLATE",
        help="a recording per connection: DIR/<connection id>.jsonl, or a file name with {id} or {n}",
    )
    p.add_argument(
        "--trace",
        metavar="DIR|TEMPLATE",
        help="a trace per connection (the conductor's format): DIR/<connection id>.jsons, or a file name "
        "with {id} or {n}",
    )
    p.add_argument(
        "--max-tool-calls",
        type=bound(1),
        default=DEFAULT_MAX_TOOL_CALLS,
        metavar="N",
        help=f"tool calls kept in each connection's state (default {DEFAULT_MAX_TOOL_CALLS}; none: all)",
    )
    p.add_argument(
        "--max-sessions",
        type=bound(1),
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"sessions kept in each connection's state (default {DEFAULT_MAX_SESSIONS}; none: all)",
    )
    add_coalesce_option(p, "per connection, ")
    add_bridge_option(p, "each client and the agent (a bridge per connection)")
    add_middleware_option(p, "for each connection (its own instance)")
    p.add_argument("--quiet", action="store_true", help="no line on stderr when a connection ends")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..net import require_net

    try:
        require_net()
    except ImportError as exc:
        return fail("acp-fast serve", str(exc))
    args = list(sys.argv[1:] if argv is None else argv)
    options, command = split_command(args)
    p = parser()
    ns, extra = p.parse_known_args(options)
    if extra and not command and not extra[0].startswith("-"):
        p.error(f"expected the agent command after --, e.g. acp-fast serve [options] -- {' '.join(extra)}")
    if extra:
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    if not command:
        p.error("expected the agent command after --, e.g. acp-fast serve -- acp-fast demo-agent")
    from ..net.serve import Options, is_loopback, run

    host, port = ns.listen
    if not is_loopback(host):
        if not ns.allow_remote:
            p.error(
                f"--listen {host}:{port} is reachable from other machines; expected a loopback address "
                "(127.0.0.1, ::1, localhost), or add --allow-remote (and use --token and TLS: docs/NETWORK.md)"
            )
        advice = "" if (ns.token or os.environ.get(TOKEN_ENV)) else NO_TOKEN
        print(
            f"acp-fast serve: warning: listening on {host}:{port}, reachable from other machines, over plain "
            f"HTTP: put a TLS reverse proxy in front{advice} (docs/NETWORK.md)",
            file=sys.stderr,
        )
    for option, template in (("--record", ns.record), ("--trace", ns.trace)):
        if template:
            problem = check_template(option, template)
            if problem is not None:
                p.error(problem)
    token = ns.token if ns.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and not token.strip():
        p.error("--token: expected a non-empty token")
    opts = Options(
        command=command,
        host=host,
        port=port,
        token=token,
        max_connections=ns.max_connections,
        max_body_bytes=ns.max_body_bytes,
        idle_timeout=ns.idle_timeout,
        queue=ns.queue,
        strict=ns.strict,
        record=ns.record,
        trace=ns.trace,
        max_tool_calls=ns.max_tool_calls,
        max_sessions=ns.max_sessions,
        quiet=ns.quiet,
        coalesce=ns.coalesce,
        bridge=ns.bridge,
        middleware=ns.middleware,
    )
    return run(opts)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
