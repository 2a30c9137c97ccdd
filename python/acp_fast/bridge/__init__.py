"""A bridge between an editor and an agent that speak different ACP versions (v1 and v2).

    >>> from acp_fast.bridge import Bridge
    >>> bridge = Bridge(editor=1, agent=2)
    >>> frames = bridge.from_agent(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
    ...     b'"update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"Read"}}}\\n')
    >>> frames[0]
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read","kind":"other","status":"pending","content":[],"locations":[]}}}\\n'

[`Bridge`][acp_fast.bridge.Bridge] converts frame by frame, in both directions, keeping the state the conversion
needs (the agent's tool calls, terminals and plans in an [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore], what
the editor was last told about each tool call, pending requests and prompt turns). What is
converted, the choices made where one version cannot say what the other said, and strict mode
are in docs/BRIDGE.md.
"""

from __future__ import annotations

from ._bridge import BRIDGE_MAX_DEPTH, REJECT_OPTION, Bridge, BridgeError
from ._content import diff_text, git_patch, terminal_text, v1_diff_to_v2, v2_diff_to_v1

__all__ = [
    "BRIDGE_MAX_DEPTH",
    "REJECT_OPTION",
    "Bridge",
    "BridgeError",
    "diff_text",
    "git_patch",
    "terminal_text",
    "v1_diff_to_v2",
    "v2_diff_to_v1",
]
