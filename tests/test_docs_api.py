"""docs/API.md says what the package is (issue 28): its list of public names is ``acp_fast.__all__``,
and the ``Change`` targets and actions it lists (and DESIGN §7.9's targets) are the ones the state
engine gives, on both backends. Each doc is parsed, so a name or target added without its
documentation, or documentation left behind, fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

import acp_fast
from acp_fast import builders as B

DOCS = Path(__file__).resolve().parent.parent / "docs"
API = (DOCS / "API.md").read_text(encoding="utf-8")
DESIGN = (DOCS / "DESIGN.md").read_text(encoding="utf-8")


def _paragraph(text: str, start: str) -> str:
    """The paragraph of ``text`` that begins with ``start``, its lines joined by single spaces."""
    at = text.index(start)
    end = text.find("\n\n", at)
    return " ".join(text[at : end if end >= 0 else len(text)].split())


def _names(text: str) -> List[str]:
    return re.findall(r"`([^`]+)`", text)


def _listed(text: str) -> List[str]:
    """The code spans of ``text`` up to the end of the list: the first "(" or "." outside them."""
    names = []
    for i, part in enumerate(re.split(r"`([^`]*)`", text)):
        if i % 2:
            names.append(part)
        elif "(" in part or "." in part:
            break
    return names


def test_api_md_lists_exactly_acp_fast_all():
    listed = _listed(_paragraph(API, "Public names (`acp_fast.__all__`):").split(":", 1)[1])
    assert len(listed) == len(set(listed)), "a name is listed twice"
    assert sorted(listed) == sorted(acp_fast.__all__)
    assert len(acp_fast.__all__) == len(set(acp_fast.__all__))


# -- Change ------------------------------------------------------------------------------------

#: The targets that are not entity targets (an entity target is named as the schema names it).
FIXED = {"tool_call", "terminal", "plan", "permission", "session", "request", "protocol", "update", "file"}


def _api_table() -> Dict[str, Set[str]]:
    """API.md "Change": target (or "an entity target") -> the actions its table row lists."""
    section = API[API.index("### `Change`") : API.index("### Queries")]
    rows: Dict[str, Set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        if len(cells) != 2 or cells[0] in ("target", "---"):
            continue
        target = cells[0].strip("`")
        # the actions are the backticked words before each parenthesis' explanation
        actions = re.findall(r"`([a-z_]+)`", re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "", cells[1]))
        rows[target] = set(actions)
    return rows


def _api_targets() -> Set[str]:
    """The targets API.md's "Change" paragraph names (before "or an entity target")."""
    paragraph = _paragraph(API, "A light, immutable event: `Change(")
    listed = paragraph.split("`target` is", 1)[1].split("or an entity target", 1)[0]
    return {name.strip('"') for name in _names(listed)}


def _design_targets() -> Set[str]:
    """The targets DESIGN §7.9 names (before "or an entity target")."""
    paragraph = _paragraph(DESIGN, "An immutable light event with `session_id`")
    listed = paragraph.split("`target` (", 1)[1].split("or an entity target", 1)[0]
    return {name.strip('"') for name in _names(listed)}


def _conversations() -> List[List[Tuple[bytes, str]]]:
    """Conversations (frames and their sender) that give every action of the fixed targets."""
    C, A = "client", "agent"
    perm = B.request_permission(5, "s1", {"toolCallId": "c1"}, [B.permission_option("y", "Yes", "allow_once")])
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}}
    v1 = [
        (B.request(0, "initialize", {"protocolVersion": 1}), C),
        (B.response(0, {"protocolVersion": 1}), A),  # protocol negotiated
        (B.tool_call("s1", "c1", "Read"), A),  # tool_call created
        (B.tool_call("s1", "c1", "Read again"), A),  # replaced (v1 tool_call on a record)
        (B.tool_call_update("s1", "c1", status="in_progress"), A),  # updated
    ]
    v2 = [
        (B.request(0, "initialize", {"protocolVersion": 2}), C),
        (B.response(0, {"protocolVersion": 2}), A),
        (B.tool_call_update("s1", "c1", protocol_version=2, title="Read", kind="read"), A),
        (B.tool_call_content_chunk("s1", "c1", {"type": "text", "text": "x"}), A),  # tool_call appended
        (B.plan_update("s1", "p1", [B.plan_entry("a")]), A),  # plan created
        (B.plan_update("s1", "p1", [B.plan_entry("a", status="completed")]), A),  # replaced
        (B.session_update("s1", {"sessionUpdate": "plan_removed", "planId": "p1"}), A),  # removed
        (perm, A),  # permission requested
        (B.permission_response(5, "y"), C),  # resolved
        (B.terminal_update("s1", "t1", command="ls"), A),  # terminal created
        (B.terminal_update("s1", "t1", exit_status={"exitCode": 0}), A),  # updated
        (B.terminal_output_chunk("s1", "t1", b"out"), A),  # appended
        (B.request(6, "terminal/create", {"sessionId": "s1", "command": "ls"}), A),
        (B.response(6, {"terminalId": "t1"}), C),  # replaced (a terminal held)
        (B.request(7, "fs/read_text_file", {"sessionId": "s1", "path": "/r/a"}), A),
        (B.response(7, {"content": "abc"}), C),  # file appended
        (B.notification("$/cancel_request", {"requestId": 8}), C),  # request cancelled
        (B.session_update("s1", {"sessionUpdate": "_acme_progress", "n": 1}), A),  # update appended
        (B.notification("session/cancel", {"sessionId": "s1"}), C),  # session cancelled
        (B.request(9, "session/resume", {"sessionId": "s2", "replayFrom": {"type": "start"}}), C),  # replaying
        (B.response(9, {}), A),  # replayed
        (B.request(10, "session/close", {"sessionId": "s1"}), C),
        (B.response(10, {}), A),  # closed
        (B.session_update("s3", chunk), A),  # an entity target
    ]
    return [v1, v2]


def _seen(backend: Any) -> Dict[str, Set[str]]:
    seen: Dict[str, Set[str]] = {}
    for conversation in _conversations():
        store = backend.ToolCallStore()
        for frame, source in conversation:
            change = store.apply(frame, source=source)
            assert change is None or isinstance(change, backend.Change), (frame, change)
            if change is not None:
                seen.setdefault(change.target, set()).add(change.action)
    return seen


def test_the_change_targets_and_actions_are_the_stores(backend):
    table = _api_table()
    entity_actions = table.pop("an entity target")
    seen = _seen(backend)
    entity_targets = set(seen) - FIXED
    assert entity_targets and entity_targets <= set(acp_fast.ENTITY_TARGETS)
    assert all(seen[t] <= entity_actions for t in entity_targets)
    fixed_seen = {t: a for t, a in seen.items() if t in FIXED}
    # every fixed target, each with every action the table lists, and no other
    assert fixed_seen == table
    assert _api_targets() == set(table) == FIXED
    assert _design_targets() == FIXED
