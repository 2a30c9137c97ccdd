"""An ACP agent written with the official SDK, for the proxy tests: on a prompt it streams a
message, a tool call with a diff, asks permission, updates the tool call and a plan, then ends
the turn."""

import asyncio

from acp import PROTOCOL_VERSION, run_agent

try:  # the SDK's helpers (0.x); 1.0 has none: the same models, built here
    from acp import (
        plan_entry,
        start_tool_call,
        tool_diff_content,
        update_agent_message_text,
        update_plan,
        update_tool_call,
    )
except ImportError:
    from acp.schema import (
        AgentMessageChunk,
        AgentPlanUpdate,
        FileEditToolCallContent,
        PlanEntry,
        TextContentBlock,
        ToolCallProgress,
        ToolCallStart,
    )

    def update_agent_message_text(text):
        return AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text))

    def start_tool_call(tool_call_id, title, *, kind=None, status=None, content=None):
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=tool_call_id,
            title=title,
            kind=kind,
            status=status,
            content=content,
        )

    def tool_diff_content(path, new_text, old_text=None):
        return FileEditToolCallContent(type="diff", path=path, new_text=new_text, old_text=old_text)

    def update_tool_call(tool_call_id, *, status=None):
        return ToolCallProgress(session_update="tool_call_update", tool_call_id=tool_call_id, status=status)

    def plan_entry(content, *, priority="medium", status="pending"):
        return PlanEntry(content=content, priority=priority, status=status)

    def update_plan(entries):
        return AgentPlanUpdate(session_update="plan", entries=list(entries))


from acp.schema import InitializeResponse, NewSessionResponse, PermissionOption, PromptResponse, ToolCallUpdate


class Agent:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        return NewSessionResponse(session_id="sdk-session-1")

    async def prompt(self, session_id, prompt, **kwargs):
        send = self.conn.session_update
        for word in ("Looking ", "at the ", "file… ", "naïve café ✓"):
            await send(session_id, update_agent_message_text(word))
        await send(
            session_id,
            start_tool_call(
                "call-1",
                "Edit main.py",
                kind="edit",
                status="pending",
                content=[tool_diff_content("main.py", "print('hi')\n", "print('hello')\n")],
            ),
        )
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(session_id, ToolCallUpdate(tool_call_id="call-1"), options)
        status = "completed" if getattr(answer.outcome, "option_id", None) == "allow" else "failed"
        await send(session_id, update_tool_call("call-1", status=status))
        await send(session_id, update_plan([plan_entry("Edit main.py", status="completed"), plan_entry("Run tests")]))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(Agent()))
