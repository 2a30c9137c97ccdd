"""Two middleware for :class:`acp_fast.proxy.Proxy`, as examples of the API (docs/PROXY.md,
"Middleware") and ready to use:

* :class:`AutoApprove`: answers the agent's permission requests for tool calls of chosen kinds
  (``read``, ``search``, ...) itself, with an ``allow`` option; the editor never sees them.
* :class:`RedactSecrets`: replaces what a regular expression matches in tool-call output
  (``content`` and ``rawOutput`` of tool-call updates and permission requests) before it reaches
  the editor.

    proxy = Proxy(["my-agent"], middleware=[RedactSecrets(r"(?i)api[_-]?key=\\S+"), AutoApprove({"read"})])
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Pattern, Tuple, Union

import acp_fast

from ._middleware import Context, Drop, Result

__all__ = ["AutoApprove", "RedactSecrets"]

PERMISSION = "session/request_permission"
#: The session updates that carry a tool call (v1 and v2).
TOOL_CALL_UPDATES = frozenset({"tool_call", "tool_call_update", "tool_call_content_chunk"})


def _tool_call(params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The tool-call update a permission request carries: ``toolCall`` (v1) or
    ``subject.toolCall`` (v2)."""
    call = params.get("toolCall")
    if call is None:
        subject = params.get("subject")
        if isinstance(subject, dict) and subject.get("type") == "tool_call":
            call = subject.get("toolCall")
    return call if isinstance(call, dict) else None


class AutoApprove:
    """Answers permission requests for tool calls whose kind is in ``kinds`` with the first option
    of kind ``allow_once`` (``prefer="allow_always"`` for that kind first), and drops them (the
    editor never sees them). The kind is the request's own tool-call update's, else the tool
    call's as the proxy's state knows it. Requests for other kinds, and requests offering no
    ``allow_*`` option, pass on."""

    name = "auto-approve"

    def __init__(self, kinds: Iterable[str], *, prefer: str = "allow_once") -> None:
        self.kinds = frozenset(kinds)
        order = ("allow_once", "allow_always")
        self.order: Tuple[str, ...] = (prefer,) + tuple(k for k in order if k != prefer)
        self.approved = 0

    def __call__(self, message: acp_fast.Message, sender: str, ctx: Context) -> Result:
        if sender != "agent" or message.method != PERMISSION or message.kind != "request":
            return message
        params = message.params
        if not isinstance(params, dict):
            return message
        call = _tool_call(params) or {}
        kind = call.get("kind")
        tool_call_id = call.get("toolCallId")
        session_id = params.get("sessionId")
        if kind is None and isinstance(session_id, str) and isinstance(tool_call_id, str):
            known = ctx.store.get(session_id, tool_call_id)
            kind = known.get("kind") if known else None
        if kind not in self.kinds:
            return message
        options = params.get("options")
        option = self._option(options if isinstance(options, list) else [])
        if option is None:
            return message
        ctx.inject(
            {"jsonrpc": "2.0", "id": message.id, "result": {"outcome": {"outcome": "selected", "optionId": option}}},
            to="agent",
        )
        self.approved += 1
        return Drop(f"auto-approved: {kind} tool call {tool_call_id}, option {option}")

    def _option(self, options: List[Any]) -> Optional[str]:
        for wanted in self.order:
            for o in options:
                if isinstance(o, dict) and o.get("kind") == wanted and isinstance(o.get("optionId"), str):
                    return str(o["optionId"])
        return None


class RedactSecrets:
    """Replaces every match of ``pattern`` (a regular expression, as text or compiled) in the
    strings of tool-call output — the ``content`` and ``rawOutput`` of tool-call updates from the
    agent, and of the tool call a permission request carries — with ``replacement``. A frame with
    nothing to redact is forwarded byte-exact; one with a match is replaced (the recording keeps
    the original with the reason)."""

    name = "redact-secrets"

    def __init__(self, pattern: Union[str, Pattern[str]], replacement: str = "[REDACTED]") -> None:
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.replacement = replacement
        self.redacted = 0

    def __call__(self, message: acp_fast.Message, sender: str, ctx: Context) -> Result:
        if sender != "agent":
            return message
        if message.update_kind in TOOL_CALL_UPDATES:
            frame = message.to_dict()
            target = frame["params"]["update"]
        elif message.method == PERMISSION and message.kind == "request" and isinstance(message.params, dict):
            frame = message.to_dict()
            target = _tool_call(frame["params"])
            if target is None:
                return message
        else:
            return message
        found = 0
        for key in ("content", "rawOutput"):
            if key in target:
                target[key], n = self._redact(target[key])
                found += n
        if not found:
            return message
        self.redacted += found
        ctx.reason(f"redacted {found} match{'es' if found > 1 else ''} of {self.pattern.pattern!r}")
        return frame

    def _redact(self, value: Any) -> Tuple[Any, int]:
        if isinstance(value, str):
            return self.pattern.subn(self.replacement, value)
        if isinstance(value, list):
            total = 0
            for i, item in enumerate(value):
                value[i], n = self._redact(item)
                total += n
            return value, total
        if isinstance(value, dict):
            total = 0
            for k, item in value.items():
                value[k], n = self._redact(item)
                total += n
            return value, total
        return value, 0
