"""The ``acp-fast`` command line: a dispatcher to one module per command.

Each command lives in its own module with a ``main(argv) -> int`` function, imported only when
that command runs (so ``acp-fast version`` does not import the benchmark machinery).
"""

from __future__ import annotations

import importlib
import sys
from typing import Dict, List, Optional, Tuple

# command -> (module, one-line description)
COMMANDS: Dict[str, Tuple[str, str]] = {
    "bench": ("acp_fast.bench", "time acp-fast against json, orjson, msgspec and the ACP SDK on built-in traffic"),
    "proxy": (
        "acp_fast.cli.proxy",
        "byte-exact stdio proxy between an editor and an agent (acp-fast proxy -- AGENT...)",
    ),
    "validate": (
        "acp_fast.cli.validate",
        "check every line of an NDJSON stream or recording (JSON-RPC, the ACP schema, protocol rules)",
    ),
    "inspect": (
        "acp_fast.cli.inspect",
        "replay a stream or recording through the state engine and show the final state",
    ),
    "export": ("acp_fast.cli.export", "write streams and recordings to Parquet: frames or tool calls (needs pyarrow)"),
    "serve": (
        "acp_fast.cli.serve",
        "expose a stdio agent over Streamable HTTP and WebSocket (acp-fast serve -- AGENT...; needs acp-fast[net])",
    ),
    "connect": (
        "acp_fast.cli.connect",
        "a stdio endpoint for an editor, to a remote agent over HTTP/SSE or WebSocket (acp-fast connect URL)",
    ),
    "demo-agent": ("acp_fast.cli.demo_agent", "a small scripted ACP agent on stdio, for demos and tests"),
    "version": ("", "print the version and the backend in use"),
}


def usage() -> str:
    lines = ["usage: acp-fast COMMAND [options]", "", "commands:"]
    for name, (_, text) in COMMANDS.items():
        lines.append(f"  {name:<11} {text}")
    lines.append("")
    lines.append("`acp-fast COMMAND --help` describes a command's options.")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0
    command, rest = args[0], args[1:]
    from ._usage import fail

    if command in ("version", "--version"):
        if rest in (["-h"], ["--help"]):
            print(f"usage: acp-fast version\n\n{COMMANDS['version'][1].capitalize()}.")
            return 0
        if rest:
            return fail("acp-fast version", f"takes no arguments, found {' '.join(rest)}")
        import acp_fast

        print(f"acp-fast {acp_fast.__version__} ({acp_fast.BACKEND} backend)")
        return 0
    if command not in COMMANDS:
        known = ", ".join(COMMANDS)
        return fail("acp-fast", f"unknown command {command!r} (one of {known}; acp-fast --help)")
    try:
        module = importlib.import_module(COMMANDS[command][0])
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        # Ctrl-C (at a terminal it reaches every process of the job, the proxy's agent too): the
        # usual status of a command ended by SIGINT, without a traceback
        return 130
