"""A client built on the ACP Python SDK's experimental v2 API (``acp.experimental.v2``, SDK 1.0
pre-releases) served by the v1 demo agent through ``acp-fast proxy --bridge 2:1`` (docs/BRIDGE.md,
docs/PROXY.md): the SDK's v2 connection validates every frame it receives with its own v2 models,
so each frame the bridge makes for the editor must be one a real v2 client accepts.

Two turns: the first allows the edit (the tool calls, the plan, the messages and the permission
request, converted from v1, and the stop reason); the second cancels the turn while the permission
request is pending and answers it ``cancelled``, as the protocol asks (the agent fails the edit and
ends the turn ``cancelled``). The recording, the summary and the state describe the editor's side
(v2). Both backends (the subprocesses get ``ACP_FAST_BACKEND``). CI runs the ``test_sdk_*`` files on
every SDK release of ``SDK_TESTED_VERSIONS`` (.ci/sdk-versions); on one without the v2 API (0.12.1)
this file is skipped, saying which SDK it needs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

try:
    from acp.experimental import v2
except ImportError:  # SDK 0.12.1
    pytest.skip(
        "needs the experimental v2 API of the ACP Python SDK (acp.experimental.v2: agent-client-protocol "
        "1.0 pre-releases, e.g. 1.0.0rc3; .ci/sdk-versions runs this file there)",
        allow_module_level=True,
    )

from acp_fast.cli.demo_agent import README  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

S2 = v2.schema
CLI = [sys.executable, "-m", "acp_fast.cli"]
TIMEOUT = 60.0


class V2Client:
    """A v2 client: records every update and permission request; answers the permission requests
    in turn from ``answers``: ``"allow"`` picks the ``allow_once`` option, ``"cancel"`` cancels the
    session's turn and then answers ``cancelled``."""

    def __init__(self, answers: List[str]) -> None:
        self.answers = list(answers)
        self.updates: List[Tuple[str, Any]] = []
        self.permissions: List[Dict[str, Any]] = []
        self.idle = asyncio.Event()
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if update.session_update == "state_update" and update.state == "idle":
            self.idle.set()

    async def request_permission(self, **kwargs: Any) -> Any:
        self.permissions.append(kwargs)
        if self.answers.pop(0) == "cancel":
            await self.conn.cancel_session(session_id=kwargs["session_id"])
            return S2.RequestPermissionResponse(outcome=S2.CancelledPermissionOutcome(outcome="cancelled"))
        option = next(o for o in kwargs["options"] if o.kind == "allow_once")
        return S2.RequestPermissionResponse(
            outcome=S2.SelectedPermissionOutcomeVariant(outcome="selected", option_id=option.option_id)
        )


async def _session(backend_id: str, tmp: Path, stderr: Any) -> Dict[str, Any]:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=os.pathsep.join(sys.path))
    reports = ["--record", str(tmp / "rec.ndjson"), "--summary-json", str(tmp / "summary.json")]
    reports += ["--state-json", str(tmp / "state.json")]
    agent = [*CLI, "demo-agent", "--protocol", "1"]
    proc = await asyncio.create_subprocess_exec(
        *CLI, "proxy", "--bridge", "2:1", *reports, "--", *agent,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env,
    )  # fmt: skip
    client = V2Client(["allow", "cancel"])
    conn = v2.connect_to_agent(client, proc.stdin, proc.stdout)
    out: Dict[str, Any] = {"client": client}
    try:
        out["init"] = await conn.initialize(
            protocol_version=v2.PROTOCOL_VERSION, info=S2.Implementation(name="sdk-v2-client", version="1.0")
        )
        session = await conn.new_session(cwd="/work/demo")
        out["session_id"] = sid = session.session_id
        out["turns"] = []
        for text in ("Fix the greeting", "Fix it again"):
            client.idle.clear()
            first = len(client.updates)
            ack = await conn.prompt(session_id=sid, prompt=[S2.TextContentBlock(type="text", text=text)])
            await asyncio.wait_for(client.idle.wait(), TIMEOUT)
            out["turns"].append((ack, client.updates[first:]))
        await conn.close()
        assert proc.stdin is not None
        proc.stdin.close()
        out["status"] = await asyncio.wait_for(proc.wait(), TIMEOUT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return out


def _tool_calls(updates: List[Tuple[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """The tool calls by v2 rules: each ``tool_call_update`` an upsert of the fields it names, an
    explicit ``null`` a clear (the bridge sends no content chunks for a v1 agent)."""
    calls: Dict[str, Dict[str, Any]] = {}
    for _sid, update in updates:
        assert update.session_update != "tool_call_content_chunk"
        if update.session_update == "tool_call_update":
            fields = update.model_dump(by_alias=True, exclude_unset=True, mode="json")
            record = calls.setdefault(fields.pop("toolCallId"), {})
            fields.pop("sessionUpdate")
            for key, value in fields.items():
                if value is None:
                    record.pop(key, None)
                else:
                    record[key] = value
    return calls


def _messages(updates: List[Tuple[str, Any]]) -> List[Tuple[str, str, str]]:
    """(kind, message id, text) of each message, its chunks joined, in order of first chunk."""
    texts: Dict[Tuple[str, str], str] = {}
    for _sid, update in updates:
        if update.session_update.endswith("_chunk") and update.session_update != "tool_call_content_chunk":
            key = (update.session_update, update.message_id)
            texts[key] = texts.get(key, "") + update.content.text
    return [(kind, mid, text) for (kind, mid), text in texts.items()]


def test_sdk_v2_client_through_bridge_to_v1_demo_agent(backend_id: str, tmp_path: Path) -> None:
    with open(tmp_path / "stderr", "wb") as stderr:
        out = asyncio.run(asyncio.wait_for(_session(backend_id, tmp_path, stderr), 2 * TIMEOUT))
    client: V2Client = out["client"]
    sid: str = out["session_id"]
    assert out["status"] == 0
    assert (tmp_path / "stderr").read_bytes() == b""  # no diagnostic: every frame was valid on both sides

    init = out["init"]
    assert init.protocol_version == 2  # the v1 agent's answer, reshaped
    assert init.info is not None and init.info.name == "acp-fast-demo-agent"
    assert init.capabilities.session is not None

    # turn 1: allowed
    (ack1, turn1), (ack2, turn2) = out["turns"]
    assert isinstance(ack1.message_id, str) and isinstance(ack2.message_id, str)
    assert ack1.message_id != ack2.message_id
    states = [(u.state, getattr(u, "stop_reason", None)) for _, u in turn1 if u.session_update == "state_update"]
    assert states == [("running", None), ("idle", "end_turn")]  # the v1 response, as v2's idle
    # the echo of the prompt the draft requires (BRIDGE.md), under the acknowledged id, then running
    echo, running = turn1[0][1], turn1[1][1]
    assert (echo.session_update, echo.message_id) == ("user_message", ack1.message_id)
    assert running.session_update == "state_update" and turn1[-1][1].state == "idle"
    assert all(s == sid for s, _ in turn1)

    calls = _tool_calls(turn1)
    assert list(calls) == ["call_1_read", "call_1_edit", "call_1_run"]
    read = calls["call_1_read"]
    assert (read["title"], read["kind"], read["status"]) == ("Read README.md", "read", "completed")
    assert read["locations"] == [{"path": "/work/demo/README.md"}]
    assert read["content"] == [{"type": "content", "content": {"type": "text", "text": README}}]
    edit = calls["call_1_edit"]
    assert (edit["kind"], edit["status"]) == ("edit", "completed")  # the agent got the allow
    [diff] = edit["content"]  # the v1 diff as a v2 diff
    assert diff["type"] == "diff"
    assert diff["changes"] == [{"operation": "modify", "path": "/work/demo/src/app.py", "fileType": "text"}]
    patch = diff["patch"]["text"]
    assert '-    return "Hello " + name\n' in patch and '+    return f"Hello, {name}!"\n' in patch
    run_ = calls["call_1_run"]
    assert (run_["kind"], run_["status"]) == ("execute", "completed")
    # the v1 terminal item (an editor-owned terminal) is left out; the output text stays
    output = "".join(f"test_{i} PASSED\n" for i in range(4)) + "4 passed\n"
    assert run_["content"] == [{"type": "content", "content": {"type": "text", "text": output}}]

    plans = [u for _, u in turn1 if u.session_update == "plan_update"]
    assert len(plans) == 4 and all(p.plan.type == "items" and p.plan.plan_id == "main" for p in plans)
    assert [e.status for e in plans[0].plan.entries] == ["in_progress", "pending", "pending"]
    assert [e.status for e in plans[-1].plan.entries] == ["completed", "completed", "completed"]

    messages = _messages(turn1)
    assert [(kind, text) for kind, _, text in messages] == [
        ("agent_thought_chunk", "Let me look at the project first."),
        ("agent_message_chunk", "I read the README "),
        ("agent_message_chunk", "Done."),  # after the tool calls: a message of its own
    ]
    ids = [mid for _, mid, _ in messages]
    assert len(set(ids)) == 3 and ack1.message_id not in ids

    first = client.permissions[0]
    assert first["session_id"] == sid and first["title"] == "Edit src/app.py"
    assert first["subject"].type == "tool_call" and first["subject"].tool_call.tool_call_id == "call_1_edit"
    assert [(o.option_id, o.kind) for o in first["options"]] == [("allow", "allow_once"), ("reject", "reject_once")]

    # turn 2: cancelled while the permission request was pending, answered "cancelled"
    assert len(client.permissions) == 2
    assert client.permissions[1]["subject"].tool_call.tool_call_id == "call_2_edit"
    states = [(u.state, getattr(u, "stop_reason", None)) for _, u in turn2 if u.session_update == "state_update"]
    assert states == [("running", None), ("idle", "cancelled")]
    calls = _tool_calls(turn2)
    assert list(calls) == ["call_2_read", "call_2_edit"]  # no terminal: the turn ended
    assert calls["call_2_edit"]["status"] == "failed"
    # the agent waits for the answer (the turn could not end without it), then fails the edit
    text = {"type": "text", "text": "cancelled by the client"}
    assert calls["call_2_edit"]["content"] == [{"type": "content", "content": text}]

    # every frame the proxy gave the editor reached the SDK's handlers (none failed its validation)
    records = [json.loads(line) for line in (tmp_path / "rec.ndjson").read_text().splitlines()]
    sent = [r["frame"] for r in records if r.get("from") == "agent" and isinstance(r.get("frame"), dict)]
    assert len([m for m in sent if m.get("method") == "session/update"]) == len(client.updates)
    kinds = {m["params"]["update"]["sessionUpdate"] for m in sent if m.get("method") == "session/update"}
    assert not kinds & {"tool_call", "plan"}  # the editor's side is v2
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == 0
    assert summary["tool_calls_by_status"] == {"completed": 4, "failed": 1}
    assert summary["permissions_by_outcome"] == {"selected": 1, "cancelled": 1}
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["negotiatedVersion"] == 2
    assert list(state["sessions"][sid]["toolCalls"]) == ["call_1_read", "call_1_edit", "call_1_run", *calls]
