"""Agent-side frame builders: complete ACP frames as ``bytes``, ready to write to stdout.

Every frame builder below returns one frame: compact JSON, keys in wire order, ending in exactly
one ``b"\\n"``. The constant parts of the frame (the JSON-RPC envelope, method, ``sessionUpdate``
discriminators, fixed keys) are pre-encoded bytes; only the variable values go through
[`acp_fast.dumps`][acp_fast.dumps]. The small builders (message chunks, failed updates, plans, permission
answers) dump each value on its own and skip building any dict, which makes them about 1.2-1.6
times faster than ``dumps({...}) + b"\\n"`` of the equivalent message (native backend). The
field-rich tool-call builders dump their ``update`` object in one call, since one native call beats
several; with their argument checks they cost about 1.3-1.4 times a hand-written dict literal:

    out.write(tool_call("sess_1", "call_1", "Read README.md", kind="read",
                        locations=[location("/repo/README.md")]))
    out.write(tool_call_update("sess_1", "call_1", status="completed",
                               content=[text_content("# acp-fast ...")]))

* Omitted fields and ``None``:
  Optional fields default to [`UNSET`][acp_fast.builders.UNSET], which leaves the key out of the frame. An explicit
  ``None`` writes JSON ``null``. In a protocol v2 ``tool_call_update`` ``null`` clears the field;
  protocol v1 reads ``null`` exactly like an omitted key (v1 cannot clear a field), so the v1
  builders refuse ``None`` with a ``ValueError`` instead of emitting a frame that silently does
  nothing.

* Checks:
  Arguments are checked cheaply (types of ids and names, enumeration values that the chosen
  protocol version closes, required combinations). Nested values such as ``content`` items and
  ``rawInput`` are written as given: build them with the content helpers ([`text_content`][acp_fast.builders.text_content],
  [`diff_content`][acp_fast.builders.diff_content], [`terminal_content`][acp_fast.builders.terminal_content], [`location`][acp_fast.builders.location], [`plan_entry`][acp_fast.builders.plan_entry],
  [`permission_option`][acp_fast.builders.permission_option]) to stay within the schema. Wrong types raise ``TypeError``, wrong
  values ``ValueError``; values JSON cannot hold raise [`acp_fast.EncodeError`][acp_fast.EncodeError].

Content helpers return plain dicts (they are the inputs of the frame builders), and so do
[`todo_plan_entries`][acp_fast.builders.todo_plan_entries] and the tool-kind helpers' mappings.

The package's modules (all private; every public name is imported here): ``_pieces`` ([`UNSET`][acp_fast.builders.UNSET],
the enumerations, the pre-encoded frame parts, the argument checks), ``_helpers`` (content and
tool-kind helpers), ``_envelopes`` (generic envelopes, permission request and answer),
``_tool_calls`` and ``_updates`` (message chunks, plans, v2 terminals).
"""

from __future__ import annotations

from . import _pieces
from ._envelopes import (
    error_response,
    notification,
    permission_response,
    request,
    request_permission,
    response,
    session_update,
)
from ._helpers import (
    DEFAULT_TOOL_KINDS,
    ToolKindMap,
    diff_content,
    location,
    permission_option,
    plan_entry,
    terminal_content,
    text_content,
    tool_kind,
)
from ._pieces import UNSET
from ._tool_calls import failed_tool_call_update, tool_call, tool_call_content_chunk, tool_call_update
from ._updates import message_chunk, plan, plan_update, terminal_output_chunk, terminal_update, todo_plan_entries

__all__ = [
    "UNSET",
    "DEFAULT_TOOL_KINDS",
    "ToolKindMap",
    "diff_content",
    "error_response",
    "failed_tool_call_update",
    "location",
    "message_chunk",
    "notification",
    "permission_option",
    "permission_response",
    "plan",
    "plan_entry",
    "plan_update",
    "request",
    "request_permission",
    "response",
    "session_update",
    "terminal_content",
    "terminal_output_chunk",
    "terminal_update",
    "text_content",
    "todo_plan_entries",
    "tool_call",
    "tool_call_content_chunk",
    "tool_call_update",
    "tool_kind",
]

# The enumerations (not in __all__) stay importable from here, as before the package split.
MESSAGE_CHUNK_KINDS = _pieces.MESSAGE_CHUNK_KINDS
PERMISSION_OPTION_KINDS = _pieces.PERMISSION_OPTION_KINDS
PLAN_PRIORITIES = _pieces.PLAN_PRIORITIES
V1_PLAN_STATUSES = _pieces.V1_PLAN_STATUSES
V1_TOOL_KINDS = _pieces.V1_TOOL_KINDS
V1_TOOL_STATUSES = _pieces.V1_TOOL_STATUSES
V2_PLAN_STATUSES = _pieces.V2_PLAN_STATUSES
V2_TOOL_STATUSES = _pieces.V2_TOOL_STATUSES
