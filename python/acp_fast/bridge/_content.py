"""What a tool call, a plan and a terminal look like on the other side of the bridge (private).

The bridge keeps the agent's state in a [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore] and, per tool call, the
record the editor was last brought to (its *view*). These pure functions compute the view of a
record for an editor of either version, and the smallest frame that brings an editor from one
view to the next. docs/BRIDGE.md states each mapping.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

# Values protocol v1 knows (closed enums of the v1 schema); v2 accepts any string for these.
V1_KINDS = frozenset(("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"))
V1_STATUSES = frozenset(("pending", "in_progress", "completed", "failed"))
V1_BLOCKS = frozenset(("text", "image", "audio", "resource_link", "resource"))
V1_PLAN_PRIORITIES = frozenset(("high", "medium", "low"))
V1_PLAN_STATUSES = frozenset(("pending", "in_progress", "completed"))
V1_STOP_REASONS = frozenset(("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"))
V1_OPTION_KINDS = frozenset(("allow_once", "allow_always", "reject_once", "reject_always"))

# Fields a tool-call record always has, and their defaults (docs/API.md, "The record").
DEFAULTS: Dict[str, Any] = {"kind": "other", "status": "pending", "content": [], "locations": []}
# Fields whose v2 ``null`` a v1 editor can be told: the defaults, and ``_meta`` as ``{}`` (no keys
# means no metadata); a cleared ``capabilities`` has nothing to tell.
V1_CLEARS = frozenset((*DEFAULTS, "_meta", "capabilities"))

_MISSING = object()


def same(a: Any, b: Any, dumps: Callable[[Any], bytes]) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``true`` differ, as they do on the wire)."""
    if a is b:
        return True
    if a is _MISSING or b is _MISSING:
        return False
    try:
        if a != b:
            return False
    except RecursionError:  # nested deeper than Python compares (a frame may nest 1024 levels)
        pass
    if isinstance(a, str):
        return True
    return dumps(a) == dumps(b)


def is_str_in(value: Any, allowed: frozenset[str]) -> bool:
    """Whether ``value`` is one of the strings ``allowed`` (any JSON value may be asked)."""
    return isinstance(value, str) and value in allowed


# ---------------------------------------------------------------------------------------------
# Text renderings of what v1 cannot show as such


def diff_text(item: Mapping[str, Any]) -> str:
    """The text a v1 editor is shown for a v2 ``diff`` item: its git patch, else one line per change."""
    patch = item.get("patch")
    if isinstance(patch, dict) and isinstance(patch.get("text"), str):
        text: str = patch["text"]
        return text
    lines = []
    changes = item.get("changes")
    for change in changes if isinstance(changes, list) else ():
        if not isinstance(change, dict):
            continue
        operation = change.get("operation")
        path = change.get("path")
        old = change.get("oldPath")
        if isinstance(old, str):
            lines.append(f"{operation} {old} -> {path}")
        else:
            lines.append(f"{operation} {path}")
    return "\n".join(lines)


def terminal_text(record: Optional[Mapping[str, Any]]) -> str:
    """The text a v1 editor is shown for an agent-owned (v2) terminal.

    ``$ {command}`` and a newline when the command is known, then ``[N earlier bytes not kept]``
    and a newline when the state's bound on terminal output dropped the first N bytes
    (``max_terminal_bytes``), then the output kept decoded as UTF-8 (invalid bytes as U+FFFD),
    then ``\\n[exit code N]``, ``\\n[signal S]`` or ``\\n[exited]`` once the terminal has an
    exit status. An unknown terminal is the empty text.
    """
    if record is None:
        return ""
    parts = []
    command = record.get("command")
    if isinstance(command, str):
        parts.append(f"$ {command}\n")
    truncated = record.get("_truncated")
    dropped = truncated.get("droppedBytes") if isinstance(truncated, dict) else None
    if isinstance(dropped, int) and dropped > 0:
        parts.append(f"[{dropped} earlier bytes not kept]\n")
    output = record.get("output")
    if isinstance(output, (bytes, bytearray)):
        parts.append(bytes(output).decode("utf-8", "replace"))
    status = record.get("exitStatus")
    if isinstance(status, dict):
        code = status.get("exitCode")
        signal = status.get("signal")
        if isinstance(code, int) and not isinstance(code, bool):
            parts.append(f"\n[exit code {code}]")
        elif isinstance(signal, str):
            parts.append(f"\n[signal {signal}]")
        else:
            parts.append("\n[exited]")
    return "".join(parts)


def _text_item(text: str, item: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"type": "content", "content": {"type": "text", "text": text}}
    meta = item.get("_meta")
    if meta is not None:
        out["_meta"] = meta
    return out


# ---------------------------------------------------------------------------------------------
# v1 diff -> v2 diff (a whole-file git patch: nothing of either text is lost)


def _split(text: str) -> List[str]:
    """Lines of ``text`` split at ``\\n`` only, each keeping its ``\\n`` (the last may lack it)."""
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def _patch_line(mark: str, line: str) -> str:
    if line.endswith("\n"):
        return mark + line
    return f"{mark}{line}\n\\ No newline at end of file\n"


_QUOTED = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def _git_path(path: str) -> str:
    """``path`` as git writes it in a patch: C-quoted when it holds a quote, a backslash, a
    control character or a non-ASCII one (git's ``core.quotePath``), else as it is."""
    if not any(c in _QUOTED or ord(c) < 0x20 or ord(c) >= 0x7F for c in path):
        return path
    out = []
    for c in path:
        if c in _QUOTED:
            out.append(_QUOTED[c])
        elif ord(c) < 0x20 or ord(c) >= 0x7F:
            out += [f"\\{b:03o}" for b in c.encode("utf-8", "surrogatepass")]
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def git_patch(path: str, old: Optional[str], new: str) -> str:
    """A git patch of one file whose single hunk holds every line of both texts (full context).

    ``old=None`` is a new file. Paths are written as the newest v2 draft requires: absolute, with
    no ``a/`` / ``b/`` prefix, quoted as git quotes them (a ``---`` / ``+++`` line naming a path
    with a space ends in a tab, as git writes it). Both texts can be read back from the patch: the
    lines marked `` `` and ``-`` are the old text, `` `` and ``+`` the new one, and
    ``\\ No newline at end of file`` removes the newline of the line before it.
    """
    name = _git_path(path)
    tab = "\t" if " " in name else ""
    head = [f"diff --git {name} {name}\n"]
    if old is None:
        head += ["new file mode 100644\n", "--- /dev/null\n"]
    else:
        head.append(f"--- {name}{tab}\n")
    head.append(f"+++ {name}{tab}\n")
    a = _split(old or "")
    b = _split(new)
    if a == b:
        return "".join(head)
    body = [f"@@ -{1 if a else 0},{len(a)} +{1 if b else 0},{len(b)} @@\n"]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            body += [_patch_line(" ", line) for line in a[i1:i2]]
            continue
        body += [_patch_line("-", line) for line in a[i1:i2]]
        body += [_patch_line("+", line) for line in b[j1:j2]]
    return "".join(head + body)


def v1_diff_to_v2(item: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """A v1 ``diff`` item ``{path, oldText?, newText}`` as a v2 one: ``changes`` (``add`` when
    ``oldText`` is absent or null, else ``modify``) and a whole-file ``git_patch`` ([`git_patch`][acp_fast.bridge.git_patch]).
    None for a malformed v1 diff (no string ``path`` / ``newText``)."""
    path = item.get("path")
    new = item.get("newText")
    old = item.get("oldText")
    if not isinstance(path, str) or not isinstance(new, str) or not (old is None or isinstance(old, str)):
        return None
    change = {"operation": "add" if old is None else "modify", "path": path, "fileType": "text"}
    out: Dict[str, Any] = {
        "type": "diff",
        "changes": [change],
        "patch": {"format": "git_patch", "text": git_patch(path, old, new)},
    }
    meta = item.get("_meta")
    if meta is not None:
        out["_meta"] = meta
    return out


def v2_diff_to_v1(item: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """A v2 ``diff`` item as a v1 one ``{path, newText}`` when its text can be read back exactly:
    one ``add`` of a text file (or of unknown type) whose ``git_patch`` creates that file (``---
    /dev/null``), its single hunk ``@@ -0,0 +1,N @@`` holding every line of the new text (no hunk:
    an empty file). None for any other diff: v2 diffs carry changes and a patch, v1 ones whole
    texts, and only a created file's whole text is in its patch."""
    changes = item.get("changes")
    patch = item.get("patch")
    if not (isinstance(changes, list) and len(changes) == 1 and isinstance(changes[0], dict)):
        return None
    change = changes[0]
    path = change.get("path")
    if change.get("operation") != "add" or not isinstance(path, str) or change.get("fileType") not in (None, "text"):
        return None
    if not (isinstance(patch, dict) and patch.get("format") == "git_patch" and isinstance(patch.get("text"), str)):
        return None
    lines = patch["text"].split("\n")
    if lines.pop() != "":
        return None  # every line of a patch ends in a newline
    name = _git_path(path)
    hunk = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    header = lines[:hunk]
    if header[:1] != [f"diff --git {name} {name}"] or any(line.startswith("diff --git") for line in header[1:]):
        return None
    files = [line for line in header if line.startswith(("--- ", "+++ "))]
    if files != ["--- /dev/null", f"+++ {name}{chr(9) if ' ' in name else ''}"] and (files or hunk < len(lines)):
        return None
    new: List[str] = []
    for line in lines[hunk + 1 :]:
        if line.startswith("+"):
            new.append(line[1:] + "\n")
        elif line.startswith("\\") and new and new[-1].endswith("\n"):
            new[-1] = new[-1][:-1]
        else:
            return None  # context, removed lines or a second hunk: not a whole created file
    if hunk < len(lines) and lines[hunk] not in (f"@@ -0,0 +1,{len(new)} @@", "@@ -0,0 +1 @@" if len(new) == 1 else ""):
        return None
    if hunk == len(lines) and not files and not any(line.startswith("new file mode ") for line in header):
        return None
    out: Dict[str, Any] = {"type": "diff", "path": path, "newText": "".join(new)}
    meta = item.get("_meta")
    if meta is not None:
        out["_meta"] = meta
    return out


# ---------------------------------------------------------------------------------------------
# Content items


def v1_item(
    item: Any, terminal: Callable[[str], Optional[Mapping[str, Any]]], subagents: bool = False
) -> Optional[Any]:
    """A v2 tool-call content item as v1 shows it: the item itself when v1 knows it (a ``session``
    reference only for an editor that advertised ``subagents``), a v1 diff for a created file
    ([`v2_diff_to_v1`][acp_fast.bridge.v2_diff_to_v1]), a text item for another diff or an agent-owned terminal, None (left
    out) for anything else."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "content":
        block = item.get("content")
        return item if isinstance(block, dict) and is_str_in(block.get("type"), V1_BLOCKS) else None
    if kind == "session":
        return item if subagents and isinstance(item.get("sessionId"), str) else None
    if kind == "diff":
        return v2_diff_to_v1(item) or _text_item(diff_text(item), item)
    if kind == "terminal":
        tid = item.get("terminalId")
        return _text_item(terminal_text(terminal(tid) if isinstance(tid, str) else None), item)
    return None


def v2_item(item: Any) -> Optional[Any]:
    """A v1 tool-call content item as v2 shows it: a diff converted ([`v1_diff_to_v2`][acp_fast.bridge.v1_diff_to_v2]), a
    (client-owned) terminal left out, anything else as it is."""
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if kind == "diff":
        return v1_diff_to_v2(item)
    if kind == "terminal":
        return None
    return item


def v1_item_problem(item: Any, subagents: bool = False) -> Optional[str]:
    """Why a v2 content item has no v1 form (None when it has one); ``subagents``: the v1 editor
    advertised the ``subagents`` client capability (v1 shows ``session`` references then)."""
    if not isinstance(item, dict):
        return "a content item that is not an object"
    kind = item.get("type")
    if kind == "content":
        block = item.get("content")
        btype = block.get("type") if isinstance(block, dict) else None
        if is_str_in(btype, V1_BLOCKS):
            return None
        return f"content block type {_show(btype)} (v1 knows {', '.join(sorted(V1_BLOCKS))})"
    if kind == "diff":
        if v2_diff_to_v1(item) is not None:
            return None
        return "a v2 diff (changes and a patch; v1 diffs carry whole texts)"
    if kind == "session":
        if subagents and isinstance(item.get("sessionId"), str):
            return None
        return "a session reference (v1 shows one only to an editor that advertised subagents)"
    if kind == "terminal":
        return "an agent-owned terminal (v1 terminals belong to the editor)"
    return f"content type {_show(kind)}"


def v2_item_problem(item: Any) -> Optional[str]:
    """Why a v1 content item has no v2 form (None when it has one)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "terminal":
        return "an editor-owned terminal (v2 terminals belong to the agent)"
    if kind == "diff" and v1_diff_to_v2(item) is None:
        return "a malformed diff (no string path and newText)"
    return None


def capabilities_problem(value: Any) -> Optional[str]:
    """Why a v2 tool call's ``capabilities`` cannot be said in v1 (None when they say nothing):
    v1 has no client control of one tool call (``tool_call/cancel``)."""
    if isinstance(value, dict):
        offered = sorted(k for k, v in value.items() if k != "_meta" and v is not None)
        if offered:
            return f"the tool call capabilities {', '.join(offered)} (v1 has no tool_call/cancel)"
    return None


def _show(value: Any) -> str:
    return repr(value) if value is None or isinstance(value, (str, int, float)) else type(value).__name__


# ---------------------------------------------------------------------------------------------
# Tool-call views


def v1_kind(value: Any) -> str:
    return value if is_str_in(value, V1_KINDS) else "other"


def v1_status(value: Any) -> str:
    if is_str_in(value, V1_STATUSES):
        status: str = value
        return status
    return "failed" if value == "cancelled" else "in_progress"


def v1_view(
    record: Mapping[str, Any],
    terminal: Callable[[str], Optional[Mapping[str, Any]]],
    refs: List[str],
    subagents: bool = False,
) -> Dict[str, Any]:
    """The tool call as a v1 editor holds it; the terminal ids its content shows go to ``refs``.
    ``capabilities`` (v2's client controls, ``tool_call/cancel``) have no v1 form and are left out."""
    title = record.get("title")
    view: Dict[str, Any] = {"toolCallId": record["toolCallId"], "title": title if isinstance(title, str) else ""}
    for key, value in record.items():
        if key in ("toolCallId", "title", "capabilities"):
            continue
        if key == "kind":
            value = v1_kind(value)
        elif key == "status":
            value = v1_status(value)
        elif key == "content":
            items = []
            for item in value:
                if (
                    isinstance(item, dict)
                    and item.get("type") == "terminal"
                    and isinstance(item.get("terminalId"), str)
                ):
                    refs.append(item["terminalId"])
                shown = v1_item(item, terminal, subagents)
                if shown is not None:
                    items.append(shown)
            value = items
        view[key] = value
    return view


def v2_view(record: Mapping[str, Any]) -> Dict[str, Any]:
    """The tool call as a v2 editor holds it. Its ``_meta`` lacks the keys whose value is
    ``null`` (a v2 ``_meta`` patch removes such a key: v2 cannot hold one)."""
    view = dict(record)
    meta = view.get("_meta", _MISSING)
    if meta is not _MISSING and not (isinstance(meta, dict) and None not in meta.values()):
        if isinstance(meta, dict):
            view["_meta"] = {k: v for k, v in meta.items() if v is not None}
        else:
            del view["_meta"]
    content = view.get("content")
    if isinstance(content, list) and any(
        isinstance(i, dict) and i.get("type") in ("diff", "terminal") for i in content
    ):
        view["content"] = [shown for shown in map(v2_item, content) if shown is not None]
    locations = view.get("locations")
    if isinstance(locations, list) and any(_line_zero(loc) for loc in locations):
        # v1 allows line 0 of its 1-based lines; v2 does not: no specific line
        view["locations"] = [
            {k: v for k, v in loc.items() if k != "line"} if _line_zero(loc) else loc for loc in locations
        ]
    return view


def _line_zero(location: Any) -> bool:
    return isinstance(location, dict) and type(location.get("line")) is int and location["line"] == 0


def v1_step(
    before: Optional[Mapping[str, Any]], view: Mapping[str, Any], dumps: Callable[[Any], bytes]
) -> Optional[Tuple[str, Dict[str, Any]]]:
    """The v1 update that takes an editor from ``before`` to ``view``: ``("tool_call", view)`` for
    a tool call it does not know or one that lost a field (v1 cannot unset one: the whole tool
    call is sent again), else ``("tool_call_update", changed fields)``, or None (no change)."""
    if before is None or any(key not in view for key in before):
        return "tool_call", dict(view)
    changed = _changed(before, view, dumps)
    return None if changed is None else ("tool_call_update", changed)


def v2_step(
    before: Optional[Mapping[str, Any]], view: Mapping[str, Any], dumps: Callable[[Any], bytes]
) -> Optional[Dict[str, Any]]:
    """The v2 upsert that takes an editor from ``before`` (None: a tool call it does not know)
    to ``view``: the changed fields, ``null`` for those it lost, ``_meta`` as a patch
    (``meta_patch``); None when nothing changed."""
    base = before if before is not None else {"toolCallId": view["toolCallId"], **DEFAULTS}
    changed = _changed(base, view, dumps)
    lost = [key for key in base if key not in view]
    if changed is None:
        if not lost and before is not None:
            return None
        changed = {"toolCallId": view["toolCallId"]}
    for key in lost:
        changed[key] = None
    if "_meta" in changed and changed["_meta"] is not None:
        changed["_meta"] = meta_patch(base.get("_meta"), changed["_meta"], dumps)
    return changed


def meta_patch(before: Any, after: Mapping[str, Any], dumps: Callable[[Any], bytes]) -> Dict[str, Any]:
    """The v2 ``_meta`` patch that turns ``before`` into ``after`` (the crate's
    ``apply_meta_update``: a key set to ``null`` is removed, any other value replaces that key's
    value whole): the keys of ``after`` that are new or changed, ``null`` for each key lost."""
    if not isinstance(before, dict):
        return dict(after)
    out = {k: v for k, v in after.items() if not same(before.get(k, _MISSING), v, dumps)}
    out.update((k, None) for k in before if k not in after)
    return out


def apply_meta(stored: Any, patch: Mapping[str, Any]) -> Dict[str, Any]:
    """``stored`` metadata with the v2 ``_meta`` patch ``patch`` applied (``apply_meta_update``)."""
    out = dict(stored) if isinstance(stored, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def meta_problem(meta: Any) -> Optional[str]:
    """Why a v1 ``_meta`` cannot be held by a v2 editor (None when it can): a top-level key whose
    value is ``null`` (a v2 ``_meta`` patch removes such a key)."""
    if isinstance(meta, dict):
        for key, value in meta.items():
            if value is None:
                return f"the _meta key {key!r} set to null (v2 reads it as a removal)"
    return None


def _changed(
    before: Mapping[str, Any], view: Mapping[str, Any], dumps: Callable[[Any], bytes]
) -> Optional[Dict[str, Any]]:
    out = {"toolCallId": view["toolCallId"]}
    for key, value in view.items():
        if key != "toolCallId" and not same(before.get(key, _MISSING), value, dumps):
            out[key] = value
    return out if len(out) > 1 else None


def passes(
    update: Mapping[str, Any],
    step: Mapping[str, Any],
    view: Mapping[str, Any],
    dumps: Callable[[Any], bytes],
    meta_patches: bool = False,
) -> bool:
    """Whether ``update`` (the fields the agent sent) says exactly what ``step`` (the computed
    change) says, read with the editor's rules, so that the agent's frame can pass as it is.
    ``null`` in ``update`` must mean, for the editor, what the step does with that field;
    ``meta_patches``: the editor reads ``_meta`` as a patch (v2), so it must be the step's patch
    (or, when the step leaves ``_meta`` alone, a patch that changes nothing)."""
    for key, value in update.items():
        if key == "sessionUpdate":
            continue
        if meta_patches and key == "_meta" and isinstance(value, dict):
            if "_meta" in step:
                if not same(value, step["_meta"], dumps):
                    return False
            elif not same(apply_meta(view.get("_meta"), value), view.get("_meta", {}), dumps):
                return False
            continue
        if value is None:
            if key in step and step[key] is None:
                continue  # a v2 clear the v2 editor reads the same way
            if key in view or key in step:
                return False
            continue
        if not same(value, view.get(key, _MISSING), dumps):
            return False
    return all(key in update for key in step)


# ---------------------------------------------------------------------------------------------
# Plans


def v1_entry(entry: Any) -> Any:
    """A v2 plan entry as v1 knows it: unknown priority -> ``medium``, unknown status (``cancelled``
    included) -> ``pending``."""
    if not isinstance(entry, dict):
        return entry
    priority = entry.get("priority")
    status = entry.get("status")
    if is_str_in(priority, V1_PLAN_PRIORITIES) and is_str_in(status, V1_PLAN_STATUSES):
        return entry
    out = dict(entry)
    if not is_str_in(priority, V1_PLAN_PRIORITIES):
        out["priority"] = "medium"
    if not is_str_in(status, V1_PLAN_STATUSES):
        out["status"] = "pending"
    return out


def v1_plan_entries(plans: Mapping[str, Mapping[str, Any]]) -> List[Any]:
    """The one v1 plan of a session: the entries of all its ``items`` plans, in plan order."""
    entries: List[Any] = []
    for plan in plans.values():
        if plan.get("type") == "items" and isinstance(plan.get("entries"), list):
            entries += [v1_entry(entry) for entry in plan["entries"]]
    return entries


def entry_problems(entries: Any) -> Iterator[str]:
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        if not is_str_in(entry.get("priority"), V1_PLAN_PRIORITIES):
            yield f"plan entry priority {_show(entry.get('priority'))}"
        if not is_str_in(entry.get("status"), V1_PLAN_STATUSES):
            yield f"plan entry status {_show(entry.get('status'))}"


def turn_error(error: Any) -> Dict[str, Any]:
    """The JSON-RPC error a v1 editor's prompt is answered with when a v2 turn ends with
    ``stopReason: "error"``: the update's ``error`` (code, message and data), or, when it is
    missing or malformed (the draft reads such details as none), an internal error saying so."""
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        if isinstance(code, int) and not isinstance(code, bool) and isinstance(message, str):
            out: Dict[str, Any] = {"code": code, "message": message}
            if "data" in error:
                out["data"] = error["data"]
            return out
    return {"code": -32603, "message": "Internal error: the agent ended the turn with an error and no details"}


def first(problems: Sequence[Optional[str]]) -> Optional[str]:
    for problem in problems:
        if problem is not None:
            return problem
    return None
