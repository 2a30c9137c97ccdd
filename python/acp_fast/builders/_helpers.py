"""Content helpers (plain dicts in ACP wire shape) and the tool-kind helpers of
[`acp_fast.builders`][acp_fast.builders] (private; re-exported there)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from ._pieces import (
    PERMISSION_OPTION_KINDS,
    PLAN_PRIORITIES,
    V2_PLAN_STATUSES,
)

# ---------------------------------------------------------------------------------------------
# Content helpers (plain dicts in ACP wire shape)


def text_content(text: str) -> Dict[str, Any]:
    """A tool-call content item holding text: ``{"type":"content","content":{"type":"text","text":...}}``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, found {type(text).__name__}")
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_content(path: str, new_text: str, old_text: Optional[str] = None) -> Dict[str, Any]:
    """A protocol v1 diff item ``{"type":"diff","path","oldText","newText"}``.

    ``old_text=None`` (a new file) leaves ``oldText`` out. ``path`` should be absolute. (Protocol v2
    describes diffs with ``changes`` and a git patch instead; this helper does not build those.)
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, found {type(path).__name__}")
    if not isinstance(new_text, str):
        raise TypeError(f"new_text must be a str, found {type(new_text).__name__}")
    if old_text is None:
        return {"type": "diff", "path": path, "newText": new_text}
    if not isinstance(old_text, str):
        raise TypeError(f"old_text must be a str or None, found {type(old_text).__name__}")
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def terminal_content(terminal_id: str) -> Dict[str, Any]:
    """A terminal item ``{"type":"terminal","terminalId":...}``."""
    if not isinstance(terminal_id, str):
        raise TypeError(f"terminal_id must be a str, found {type(terminal_id).__name__}")
    return {"type": "terminal", "terminalId": terminal_id}


def location(path: str, line: Optional[int] = None) -> Dict[str, Any]:
    """A tool-call location ``{"path":..., "line":...}`` (``line`` left out when None)."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, found {type(path).__name__}")
    if line is None:
        return {"path": path}
    if not isinstance(line, int) or isinstance(line, bool):
        raise TypeError(f"line must be an int or None, found {type(line).__name__}")
    if not 0 <= line <= 0xFFFFFFFF:
        raise ValueError(f"line must be between 0 and 4294967295, found {line}")
    return {"path": path, "line": line}


def plan_entry(content: str, *, priority: str = "medium", status: str = "pending") -> Dict[str, Any]:
    """A plan entry ``{"content","priority","status"}``.

    Known priorities are ``high``, ``medium``, ``low``; known statuses ``pending``,
    ``in_progress``, ``completed`` (and ``cancelled``, v2 only). ``_``-prefixed values are
    extensions (v2). [`plan`][acp_fast.builders.plan] (v1) refuses values outside the v1 sets.
    """
    if not isinstance(content, str):
        raise TypeError(f"content must be a str, found {type(content).__name__}")
    if priority not in PLAN_PRIORITIES and not (isinstance(priority, str) and priority.startswith("_")):
        raise ValueError(f"priority must be one of ['high', 'low', 'medium'] or start with '_', found {priority!r}")
    if status not in V2_PLAN_STATUSES and not (isinstance(status, str) and status.startswith("_")):
        raise ValueError(f"status must be one of {sorted(V2_PLAN_STATUSES)} or start with '_', found {status!r}")
    return {"content": content, "priority": priority, "status": status}


def permission_option(option_id: str, name: str, kind: str) -> Dict[str, Any]:
    """A permission option ``{"optionId","name","kind"}``.

    ``kind`` is ``allow_once``, ``allow_always``, ``reject_once`` or ``reject_always`` (v2 also
    accepts ``_``-prefixed extension kinds; [`request_permission`][acp_fast.builders.request_permission] checks per version).
    """
    if not isinstance(option_id, str):
        raise TypeError(f"option_id must be a str, found {type(option_id).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, found {type(name).__name__}")
    if kind not in PERMISSION_OPTION_KINDS and not (isinstance(kind, str) and kind.startswith("_")):
        raise ValueError(f"kind must be one of {sorted(PERMISSION_OPTION_KINDS)} or start with '_', found {kind!r}")
    return {"optionId": option_id, "name": name, "kind": kind}


# ---------------------------------------------------------------------------------------------
# Tool kinds

#: Default ACP tool kind of common agent tool names.
DEFAULT_TOOL_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "read_file": "read",
        "list_directory": "read",
        "edit_file": "edit",
        "grep": "search",
        "find_path": "search",
        "terminal": "execute",
        "thinking": "think",
        "fetch": "fetch",
        "web_search": "fetch",
    }
)


def tool_kind(tool_name: str, extra: Optional[Mapping[str, str]] = None) -> str:
    """The ACP tool kind of ``tool_name``: from ``extra`` first, then [`DEFAULT_TOOL_KINDS`][acp_fast.builders.DEFAULT_TOOL_KINDS], else ``"other"``."""
    if extra is not None:
        kind = extra.get(tool_name)
        if kind is not None:
            return kind
    return DEFAULT_TOOL_KINDS.get(tool_name, "other")


class ToolKindMap(dict[str, str]):
    """A ``dict`` of tool name -> ACP tool kind, starting from [`DEFAULT_TOOL_KINDS`][acp_fast.builders.DEFAULT_TOOL_KINDS].

    ```pycon
    >>> kinds = ToolKindMap({"bash": "execute"})
    >>> kinds.kind("bash"), kinds.kind("read_file"), kinds.kind("mystery")
    ('execute', 'read', 'other')

    ```
    """

    def __init__(self, extra: Union[Mapping[str, str], Iterable[Any], None] = None) -> None:
        super().__init__(DEFAULT_TOOL_KINDS)
        if extra is not None:
            for name, kind in dict(extra).items():
                self.register(name, kind)

    def kind(self, tool_name: str) -> str:
        """The kind registered for ``tool_name``, or ``"other"``."""
        return self.get(tool_name, "other")

    def register(self, tool_name: str, kind: str) -> None:
        """Map ``tool_name`` to ``kind`` (replacing any earlier mapping)."""
        if not isinstance(tool_name, str):
            raise TypeError(f"tool_name must be a str, found {type(tool_name).__name__}")
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a str, found {type(kind).__name__}")
        self[tool_name] = kind
