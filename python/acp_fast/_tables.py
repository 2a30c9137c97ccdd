"""The columns of the tool-calls table, shared by ``acp_fast.arrow`` (its public names) and the
pure-Python backend (``_fallback/toolcalls.py``, which may not import ``acp_fast.arrow``: the
layers of ``.ci/import_cycles.py``). The Rust core's list is ``toolcalls::COLUMNS``. pyarrow is
imported by the caller: ``tool_call_fields`` takes the module.
"""

from __future__ import annotations

from typing import Any, List

__all__ = ["TIME_COLUMNS", "TOOL_CALL_COLUMNS", "tool_call_fields"]

#: The columns of [`tool_calls`][acp_fast.arrow.tool_calls] (a recording adds the ``*_time`` columns of ``TIME_COLUMNS``).
TOOL_CALL_COLUMNS = (
    "session_id",
    "tool_call_id",
    "kind",
    "title",
    "status",
    "first_line",
    "last_line",
    "updates",
    "content_items",
    "content_bytes",
    "permission_outcome",
    "permission_approved",
    "permission_line",
    "permission_resolved_line",
)
#: The columns of the times of a recording's lines, after those of ``TOOL_CALL_COLUMNS``.
TIME_COLUMNS = ("first_time", "last_time", "permission_time", "permission_resolved_time")


def tool_call_fields(pa: Any, times: bool) -> List[Any]:
    """The fields of the tool-calls table (``pa``: the ``pyarrow`` module; ``times``: with
    ``TIME_COLUMNS``): ``session_id`` and ``tool_call_id`` always set, the others nullable."""
    fields = []
    for name in TOOL_CALL_COLUMNS + (TIME_COLUMNS if times else ()):
        if name.endswith("_line") or name in ("updates", "content_items", "content_bytes"):
            ty = pa.int64()
        elif name.endswith("_time"):
            ty = pa.float64()
        elif name == "permission_approved":
            ty = pa.bool_()
        else:
            ty = pa.string()
        fields.append(pa.field(name, ty, nullable=name not in ("session_id", "tool_call_id")))
    return fields
