"""``acp-fast proxy``: a byte-exact stdio proxy between an editor and an ACP agent.

    acp-fast proxy [options] -- AGENT COMMAND...

The command line of [`acp_fast.proxy.Proxy`][acp_fast.proxy.Proxy] (the engine and its middleware API live in the
``acp_fast.proxy`` package; docs/PROXY.md): argument parsing, the checks of the files it will
write, then ``Proxy(...).run()``. What each option does is in docs/CLI.md ("proxy").
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import acp_fast

from .._outputs import check_output, output_error
from .._terminal import printable
from ..proxy import (
    DEFAULT_COALESCE_MS,
    DEFAULT_MAX_TOOL_CALLS,
    INVALID_LINES_STATUS,
    INVALID_POLICIES,
    Middleware,
    Proxy,
)
from ..proxy._middleware import load_factory, make
from ..proxy.cancel import DEFAULT_GRACE, CancelledPermissions
from ._usage import Parser, bound, integer, number, split_command

__all__ = ["main", "parser", "Proxy"]


#: ``--max-frame-bytes``: 1 to ``MAX_FRAME_BYTES``.
_positive = integer(1, acp_fast.MAX_FRAME_BYTES)


def _bridge_versions(text: str) -> Tuple[int, int]:
    """``--bridge EDITOR:AGENT``: two protocol versions, 1 or 2."""
    editor, _, agent = text.partition(":")
    if editor not in ("1", "2") or agent not in ("1", "2"):
        raise argparse.ArgumentTypeError(f"expected EDITOR:AGENT, each 1 or 2 (e.g. 1:2), found {text!r}")
    return int(editor), int(agent)


def middleware_spec(text: str) -> Tuple[str, Callable[[], Any]]:
    """``--middleware MODULE:FACTORY``: the factory, imported now (what is wrong is a usage error)."""
    try:
        return text, load_factory(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_middleware_option(p: argparse.ArgumentParser, each: str) -> None:
    """``--middleware MODULE:FACTORY`` (proxy, serve, connect): ``each`` says when the factory is called."""
    p.add_argument(
        "--middleware",
        type=middleware_spec,
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help=f"run the middleware FACTORY() makes {each} on every frame both ways; repeat for more, in order "
        "from the editor to the agent (docs/PROXY.md, Middleware)",
    )


def add_bridge_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--bridge EDITOR:AGENT`` (proxy, serve, connect): ``what`` the bridge converts between."""
    p.add_argument(
        "--bridge",
        type=_bridge_versions,
        default=None,
        metavar="EDITOR:AGENT",
        help=f"convert between {what} speaking different protocol versions, e.g. 1:2 (docs/BRIDGE.md)",
    )


def add_coalesce_option(p: argparse.ArgumentParser, where: str = "") -> None:
    """``--coalesce [MS]`` (proxy, serve, connect): ``where`` the held updates are merged."""
    p.add_argument(
        "--coalesce",
        type=_coalesce_ms,
        nargs="?",
        const=DEFAULT_COALESCE_MS,
        default=None,
        metavar="MS",
        help=f"{where}hold the agent's tool-call updates up to MS milliseconds and send one merged update "
        f"(default {DEFAULT_COALESCE_MS:g}; docs/PROXY.md)",
    )


def made_middleware(p: argparse.ArgumentParser, specs: Sequence[Tuple[str, Callable[[], Any]]]) -> List[Middleware]:
    """One middleware of each ``--middleware`` factory (a factory that fails is a usage error)."""
    try:
        return [make(spec, factory) for spec, factory in specs]
    except ValueError as e:
        p.error(f"--middleware {e}")


#: ``--coalesce``: milliseconds, 0 to 60000.
_coalesce_ms = number(0, 60000, noun="number of milliseconds")
#: ``--answer-cancelled-permissions``: a grace period in seconds, 0 to 3600.
_grace = number(0, 3600, noun="number of seconds")


def _invalid_policy(text: str) -> Tuple[str, int]:
    """``--agent-invalid``: divert, pass, drop, fail or fail=N (N a positive integer)."""
    policy, eq, count = text.partition("=")
    if policy in INVALID_POLICIES and not eq:
        return policy, 1
    if policy == "fail" and count.isascii() and count.isdigit() and int(count) >= 1:
        return policy, int(count)
    raise argparse.ArgumentTypeError(f"expected divert, pass, drop, fail or fail=N (N >= 1), found {text!r}")


def _otlp_url(text: str) -> str:
    """`--otlp URL`: an http:// or https:// URL (the OTLP/HTTP endpoint's base)."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        raise argparse.ArgumentTypeError(
            f"expected an http:// or https:// URL, e.g. http://127.0.0.1:4318, found {text!r}"
        )
    return text


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="acp-fast proxy",
        usage="acp-fast proxy [options] -- AGENT COMMAND...\n       acp-fast proxy --chain [options]",
        description="Relay an editor and an ACP agent byte-exact, tracking every session's state.",
    )
    p.add_argument("--record", metavar="FILE", help="write an NDJSON recording of both directions (docs/CLI.md)")
    p.add_argument(
        "--chain",
        action="store_true",
        help="run as a proxy component under the ACP conductor (no agent command: the conductor runs it; docs/PROXY.md)",
    )
    p.add_argument(
        "--trace",
        metavar="FILE.jsons",
        help="write a trace in the ACP conductor's format, for its trace viewer (docs/CLI.md, Traces)",
    )
    p.add_argument(
        "--otlp",
        metavar="URL",
        type=_otlp_url,
        help="send OpenTelemetry spans and metrics to this OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318 "
        "(needs pip install 'acp-fast[otel]'; docs/PROXY.md, OpenTelemetry)",
    )
    p.add_argument(
        "--otlp-inject",
        action="store_true",
        help="with --otlp: put the prompt turn's traceparent in the _meta of each session/prompt sent to the agent",
    )
    p.add_argument(
        "--max-frame-bytes",
        type=_positive,
        default=acp_fast.DEFAULT_MAX_FRAME_BYTES,
        metavar="N",
        help="longest line forwarded (default 64 MiB)",
    )
    p.add_argument(
        "--agent-invalid",
        type=_invalid_policy,
        default=("divert", 1),
        metavar="divert|pass|drop|fail[=N]",
        help="lines from the agent that are not JSON-RPC: divert to stderr (default), pass on, drop, or "
        f"divert and stop the session with status {INVALID_LINES_STATUS} at the Nth (default 1)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="answer invalid lines from the editor with a JSON-RPC error instead of forwarding them",
    )
    p.add_argument(
        "--strict-schema",
        action="store_true",
        help="also check every frame against the official ACP schema and protocol rules: invalid frames "
        "from the editor are answered with a JSON-RPC error, from the agent they follow --agent-invalid",
    )
    p.add_argument(
        "--unstable",
        action="store_true",
        help="with --strict-schema: also accept the unstable parts of the schema",
    )
    p.add_argument(
        "--draft",
        choices=acp_fast.SCHEMA_DRAFTS,
        default=None,
        help="with --strict-schema: the ACP v2 draft to check against (default: latest; alpha.5 is the "
        "draft of the Python SDK 1.0.0rc3)",
    )
    p.add_argument(
        "--answer-cancelled-permissions",
        type=_grace,
        nargs="?",
        const=DEFAULT_GRACE,
        default=None,
        metavar="SECONDS",
        help="after the editor's session/cancel, answer the session's pending permission requests with "
        f"'cancelled' when the editor has not within SECONDS (default {DEFAULT_GRACE:g})",
    )
    p.add_argument("--summary", action="store_true", help="print a summary to stderr when the agent exits")
    p.add_argument("--summary-json", metavar="FILE", help="write the summary as JSON to FILE")
    p.add_argument(
        "--state-json",
        metavar="FILE",
        help="write the state engine's checkpoint (ToolCallStore.to_json) to FILE at exit",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite existing --record / --trace / --state-json / --summary-json files (default: refuse)",
    )
    p.add_argument(
        "--watch", action="store_true", help="print each tool call, permission, terminal and plan change to stderr"
    )
    p.add_argument("--quiet", action="store_true", help="no diagnostics on stderr (diverted lines still go there)")
    p.add_argument(
        "--protocol", type=int, choices=(1, 2), default=None, help="protocol version (default: learned from initialize)"
    )
    add_bridge_option(p, "an editor and an agent")
    add_middleware_option(p, "once")
    add_coalesce_option(p)
    p.add_argument(
        "--max-tool-calls",
        type=bound(1, zero_was_none="acp-fast proxy: --max-tool-calls"),
        default=DEFAULT_MAX_TOOL_CALLS,
        metavar="N",
        help=f"tool calls kept in the state, the oldest finished dropped first (default {DEFAULT_MAX_TOOL_CALLS}; none: all)",
    )
    # The bounds inside sessions (docs/API.md "Bounds and checkpoints"), the store's defaults.
    defaults = acp_fast.ToolCallStore()
    for option, least, what in (
        ("--max-terminal-bytes", 0, "output bytes kept per terminal, the last ones"),
        ("--max-content-items", 0, "content items kept per tool call, the last ones"),
        ("--max-plans", 1, "plans kept per session, the oldest dropped first"),
        ("--max-permissions", 1, "permission records kept per session, the oldest resolved dropped first"),
        ("--max-updates", 0, "updates of kinds the state engine has no rule for, the last ones kept per session"),
        ("--max-terminals", 1, "terminals kept per session, the oldest exited dropped first"),
        ("--max-entities", 0, "v2 entities (messages, ...) kept per target and session; 0: not tracked"),
        (
            "--max-content-bytes",
            0,
            "bytes of content kept per tool call (its items' JSON text), the oldest items dropped first",
        ),
        ("--max-sessions", 1, "sessions kept in the state, the least recently active dropped whole"),
    ):
        default = getattr(defaults, option[2:].replace("-", "_"))
        help = f"{what} (default {default}; none: all)"
        p.add_argument(option, type=bound(least), default=default, metavar="N", help=help)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    options, command = split_command(args)
    p = parser()
    ns, extra = p.parse_known_args(options)
    if ns.chain and command:
        p.error(
            "--chain takes no agent command: the conductor starts the agent (docs/PROXY.md, In a conductor's chain)"
        )
    if extra and not command and not extra[0].startswith("-"):
        p.error(f"expected the agent command after --, e.g. acp-fast proxy [options] -- {' '.join(extra)}")
    if extra:
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    if not command and not ns.chain:
        p.error("expected the agent command after --, e.g. acp-fast proxy -- acp-fast demo-agent")
    # Files that will hold the session's traffic: a mistake is a usage error now, not a lost report
    # at exit (they are created owner-only, never through a symbolic link; see create_output).
    outputs = (
        ("--record", ns.record),
        ("--trace", ns.trace),
        ("--state-json", ns.state_json),
        ("--summary-json", ns.summary_json),
    )
    named = [(option, os.path.abspath(path)) for option, path in outputs if path]
    for i, (option, path) in enumerate(named):
        for other, same in named[:i]:
            if same == path:
                p.error(f"{other} and {option} name the same file {printable(path)}")
    for option, path in outputs:
        if path:
            problem = check_output(path, ns.force)
            if problem is not None:
                p.error(f"{option} {path}: {problem}")
    if ns.otlp_inject and not ns.otlp:
        p.error("--otlp-inject needs --otlp URL (the turn's span is what is injected)")
    if ns.otlp:
        from ..otel import INSTALL, require_otel

        try:
            require_otel()
        except ImportError:
            print(f"acp-fast proxy: --otlp needs the OpenTelemetry packages, which are not installed: {INSTALL}",
                  file=sys.stderr)  # fmt: skip
            return 2
    middleware: List[Middleware] = []
    if ns.answer_cancelled_permissions is not None:
        middleware.append(CancelledPermissions(ns.answer_cancelled_permissions))
    middleware += made_middleware(p, ns.middleware)
    try:
        proxy = Proxy(
            command,
            middleware,
            max_frame_bytes=ns.max_frame_bytes,
            agent_invalid=ns.agent_invalid[0],
            agent_invalid_limit=ns.agent_invalid[1],
            strict=ns.strict,
            strict_schema=ns.strict_schema,
            unstable=ns.unstable,
            draft=ns.draft,
            watch=ns.watch,
            quiet=ns.quiet,
            protocol=ns.protocol,
            bridge=ns.bridge,
            coalesce=ns.coalesce,
            max_tool_calls=ns.max_tool_calls,
            max_terminal_bytes=ns.max_terminal_bytes,
            max_content_items=ns.max_content_items,
            max_plans=ns.max_plans,
            max_permissions=ns.max_permissions,
            max_updates=ns.max_updates,
            max_terminals=ns.max_terminals,
            max_entities=ns.max_entities,
            max_content_bytes=ns.max_content_bytes,
            max_sessions=ns.max_sessions,
            record=ns.record,
            trace=ns.trace,
            chain=ns.chain,
            otlp=ns.otlp,
            otlp_inject=ns.otlp_inject,
            state_json=ns.state_json,
            summary=ns.summary,
            summary_json=ns.summary_json,
            force=ns.force,
        )
    except OSError as e:
        failed = ns.trace if ns.trace and e.filename == ns.trace else ns.record
        p.error(f"{'--trace' if failed == ns.trace else '--record'} {output_error(failed, e)}")
    return proxy.run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
