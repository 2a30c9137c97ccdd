"""Two middleware for [`acp_fast.proxy.Proxy`][acp_fast.proxy.Proxy], as examples of the API (docs/PROXY.md,
"Middleware") and ready to use:

* ``AutoApprove``: answers the agent's permission requests for tool calls of chosen kinds
  (``read``, ``search``, ...) itself, with an ``allow`` option; the editor never sees them.
* ``RedactSecrets``: replaces what a regular expression matches in every string the agent
  sends the editor (base64 terminal output included) before it reaches the editor, and keeps the
  agent's line out of the recording.

    proxy = Proxy(["my-agent"], middleware=[AutoApprove({"read"}), RedactSecrets(r"(?i)api[_-]?key=\\S+")])

(``RedactSecrets`` last: next to the agent, it meets the agent's frames first.)
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Dict, Iterable, List, Optional, Pattern, Tuple, Union

import acp_fast

from ._middleware import Context, Drop, Result

__all__ = ["AutoApprove", "RedactSecrets"]

PERMISSION = "session/request_permission"


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
    """Replaces every match of ``pattern`` (a regular expression, as text or compiled) with
    ``replacement`` in every string the agent sends the editor: each string value anywhere in a
    frame's ``params``, ``result`` or ``error`` (titles, ``rawInput`` / ``rawOutput``, content
    text, message chunks, diffs, locations, plan entries, ``_meta``, ids, ...); base64 text that
    holds output is decoded, redacted and encoded again: the ``data`` of a v2
    ``terminal_output_chunk``, the ``output.data`` of a v2 ``terminal_update`` and the ``blob``
    of an embedded resource (bytes that are not UTF-8 are kept as they were).

    A frame with nothing to redact is forwarded byte-exact; one with a match is replaced by the
    redacted frame, and the recording (``--record``) keeps the agent's line without its bytes
    (``"withheld":<length>``, ``Context.withhold``) unless ``record_original=True``. Frames from
    the editor pass unchanged, and so do the agent's requests named in ``keep_methods``
    (``fs/write_text_file``, ``terminal/create``: the editor writes or runs what they hold, and
    a redacted value would change the file or the command). A match is found within one string
    of one frame: a secret cut across two streamed chunks is not. docs/PROXY.md, "Middleware"."""

    name = "redact-secrets"

    #: The agent's requests passed unchanged by default: the editor acts on their values.
    KEEP_METHODS = ("fs/write_text_file", "terminal/create")

    def __init__(
        self,
        pattern: Union[str, Pattern[str]],
        replacement: str = "[REDACTED]",
        *,
        record_original: bool = False,
        keep_methods: Iterable[str] = KEEP_METHODS,
    ) -> None:
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.replacement = replacement
        self.record_original = record_original
        self.keep_methods = frozenset(keep_methods)
        self.redacted = 0

    def __call__(self, message: acp_fast.Message, sender: str, ctx: Context) -> Result:
        if sender != "agent" or (message.kind == "request" and message.method in self.keep_methods):
            return message
        frame = message.to_dict()
        found = 0
        for key in ("params", "result", "error"):
            if key in frame:
                frame[key], n = self._redact(frame[key])
                found += n
        if not found:
            return message
        self.redacted += found
        ctx.reason(f"redacted {found} match{'es' if found > 1 else ''} of {self.pattern.pattern!r}")
        if not self.record_original:
            ctx.withhold()
        return frame

    def _redact(self, value: Any) -> Tuple[Any, int]:
        """``value`` with every match replaced (lists and dicts in place), and the count."""
        if isinstance(value, str):
            return self.pattern.subn(self.replacement, value)
        if isinstance(value, list):
            total = 0
            for i, item in enumerate(value):
                new, n = self._redact(item)
                if n:
                    value[i] = new
                    total += n
            return value, total
        if isinstance(value, dict):
            return value, self._members(value)
        return value, 0

    def _members(self, value: Dict[str, Any], encoded: Tuple[str, ...] = ()) -> int:
        """Redact the members of an object (those named in ``encoded`` hold base64 text)."""
        kind = value.get("sessionUpdate")
        if kind == "terminal_output_chunk":
            encoded += ("data",)
        if "uri" in value:  # an embedded resource's bytes
            encoded += ("blob",)
        total = 0
        for k, item in value.items():
            new: Any
            if k in encoded and isinstance(item, str):
                new, n = self._base64(item)
            elif kind == "terminal_update" and k == "output" and isinstance(item, dict):
                new, n = item, self._members(item, ("data",))
            else:
                new, n = self._redact(item)
            if n:
                value[k] = new
                total += n
        return total

    def _base64(self, text: str) -> Tuple[str, int]:
        """Base64 ``text`` redacted in its bytes (as UTF-8; other bytes kept as they are); text
        that is not base64 is redacted as it is."""
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return self.pattern.subn(self.replacement, text)
        new, n = self.pattern.subn(self.replacement, data.decode("utf-8", "surrogateescape"))
        if not n:
            return text, 0
        return base64.b64encode(new.encode("utf-8", "surrogateescape")).decode("ascii"), n
