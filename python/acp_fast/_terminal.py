"""Text that reaches a terminal: agent-controlled strings (ids, titles, commands, statuses, a
recording's argv) made harmless before they are printed, so that a stream cannot clear the
screen, retitle the window, move the cursor or forge lines of a report.

Shared by the faces (``acp_fast.cli``) and the proxy's diagnostics (``acp_fast.proxy``).
"""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 controls (newline and tab included: a value never spans lines of a report), DEL, C1
# controls, and the bidirectional overrides and isolates, which reorder what follows them.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """``text`` with every control character written as its Python escape (``\\x1b``, ``\\n``,
    ``\\u202e``); text without any comes back as it is."""
    return _UNSAFE.sub(_escape, text)
