"""The ``acp-fast`` command line."""

from __future__ import annotations

import sys
from typing import List, Optional

USAGE = """usage: acp-fast COMMAND [options]

commands:
  bench     time acp-fast against json, orjson and msgspec on built-in ACP traffic
            (``acp-fast bench --help`` for its options)
  version   print the version and the backend in use
"""


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    command, rest = args[0], args[1:]
    if command == "bench":
        from .bench import main as bench_main

        return bench_main(rest)
    if command == "version":
        import acp_fast

        print(f"acp-fast {acp_fast.__version__} ({acp_fast.BACKEND} backend)")
        return 0
    print(f"acp-fast: unknown command {command!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
