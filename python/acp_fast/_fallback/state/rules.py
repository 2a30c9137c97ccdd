"""The update table, read from the protocol's own schema: ``acp_fast/schema/v1/state.json`` and
``v2/state.json``, which ``make schemas`` generates from the official schema crate (each
``sessionUpdate`` kind a version defines, with the ``x-state`` rules the schema publishes for it).
A kind's function in this store comes from its first session rule, by target and action
(``HANDLERS``); v1 publishes no rules, so its own kinds are named (``V1_HANDLERS``). A rule whose
target has no function of its own is applied as written (``entity.py``: upsert, append, replace,
remove of a target, by id or not) under v2, when its paths are plain member names (``Rule``); a
kind of a newer draft is tracked by regenerating. A kind whose rule the store cannot apply is
defined (ignored under the versions that define it, DESIGN §7.3).

Mirror of ``rust/state/rules.rs``. Difference on purpose: ``table`` gives the function names
(``__init__.py`` turns them into its dispatch dicts) where Rust gives ``UpdateKind`` values; a
kind applied as written is ``(ENTITY, rule index, v1 defines it)``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

#: The function (by name) of a rule's (target, action).
HANDLERS: Dict[Tuple[str, str], str] = {
    ("toolCall", "upsert"): "tool_call_update",
    ("toolCall", "append"): "content_chunk",
    ("terminal", "upsert"): "terminal_update",
    ("terminal", "append"): "terminal_chunk",
    ("plan", "replace"): "plan_update",
    ("plan", "remove"): "plan_removed",
}


class Rule(NamedTuple):
    """A rule applied as written (``entity.py``): its action, its target (an index in
    ``targets()``), and the members of the update it names: the id, the target's field an append
    extends, the value (None: the update itself, but for ``sessionUpdate``)."""

    action: str
    target: int
    id: Optional[str]
    field: Optional[str]
    value: Optional[str]


class TargetRule(NamedTuple):
    """A target of the rules applied as written: its name (the schema's), the id member of its
    entities (None: one entity per session), whether a rule replaces it by a value (held whole,
    not as a record), and the fields appends extend (lists in its records)."""

    name: str
    id: Optional[str]
    whole: bool
    lists: Tuple[str, ...]


class MessageRule(NamedTuple):
    """A rule of the answer to a request or of a notification (the tables' ``responses`` and
    ``notifications``): it replaces its target (an index in ``targets()``; ``agent``: the store's
    own, else the session's), or only the target's ``field``, by the message's ``value`` member
    (None: the result or params object whole). The tables' other actions have no such rule yet."""

    target: int
    field: Optional[str]
    value: Optional[str]
    agent: bool


#: v1's kinds that the store tracks (v1's schema has no ``x-state``).
V1_HANDLERS: Dict[str, str] = {"tool_call": "tool_call", "tool_call_update": "tool_call_update", "plan": "plan"}

#: What ``table`` gives a kind no function handles: which versions define it.
DEFINED, DEFINED_V1, DEFINED_V2 = "defined", "defined_v1", "defined_v2"
#: The tag of a kind applied as written (``entity.py``).
ENTITY = "entity"

#: What ``table`` gives a kind.
Kind = Union[str, Tuple[str, int, bool]]

#: The rules of messages, by method.
Messages = Dict[str, List[MessageRule]]
#: What ``table`` gives: the kinds, the rules and targets applied as written, the rules of
#: answers and of notifications.
Table = Tuple[Dict[str, Kind], List[Rule], List[TargetRule], Messages, Messages]

_TABLE: Optional[Table] = None


def get() -> Table:
    """The update table, built once."""
    global _TABLE
    if _TABLE is None:
        _TABLE = table()
    return _TABLE


def rule(index: int) -> Rule:
    """The rule of a kind applied as written."""
    return get()[1][index]


def answer_rules(method: str) -> List[MessageRule]:
    """The rules the answer to a request of ``method`` applies (empty: none)."""
    return get()[3].get(method, [])


def notification_rules(method: str) -> List[MessageRule]:
    """The rules a notification of ``method`` applies (empty: none)."""
    return get()[4].get(method, [])


def targets() -> List[TargetRule]:
    """The targets of the rules applied as written, in table order (a rule's ``target`` indexes
    it)."""
    return get()[2]


def action_of(name: str) -> Optional[str]:
    """A rule's action by its name in the schema (None: not one the store applies)."""
    return name if name in ("upsert", "append", "replace", "remove") else None


def table() -> Table:
    """Every kind of either table: its function's name, else its rule applied as written (v2),
    else which versions define it; and the rules and targets applied as written."""
    defined: Dict[str, List[Any]] = {}
    rules: List[Rule] = []
    found: List[List[Any]] = []  # TargetRule fields, mutable while the table is read
    generic: Dict[str, int] = {}
    documents = [
        json.loads((resources.files("acp_fast") / "schema" / version / "state.json").read_text(encoding="utf-8"))
        for version in ("v1", "v2")
    ]
    for index, document in enumerate(documents):
        for name, first in updates(document):
            entry = defined.setdefault(name, [0, None])
            entry[0] |= 1 << index
            if first is None:
                continue
            handler = HANDLERS.get((first["target"], first["action"]))
            if handler is not None:
                entry[1] = entry[1] or handler
                continue
            if entry[1] is not None or name in generic:
                continue
            action = action_of(first["action"])
            paths = (first.get("id"), first.get("field"), first.get("value"))
            if action is None or any(p is not None and (not p or "." in p) for p in paths) or len(rules) >= 255:
                continue
            if action == "append" and first.get("field") is None:
                continue
            at = next((i for i, t in enumerate(found) if t[0] == first["target"]), None)
            if at is None:
                found.append([first["target"], first.get("id"), False, []])
                at = len(found) - 1
            t = found[at]
            if (t[1] is None) != (first.get("id") is None):
                continue  # a target both with and without ids: not applied as written
            t[2] = t[2] or (action == "replace" and first.get("value") is not None)
            if action == "append" and first["field"] not in t[3]:
                t[3].append(first["field"])
            generic[name] = len(rules)
            rules.append(Rule(action, at, first.get("id"), first.get("field"), first.get("value")))
    for name, index in generic.items():
        entry = defined[name]
        if entry[1] is None:
            entry[1] = (ENTITY, index, bool(entry[0] & 1))
    for name, handler in V1_HANDLERS.items():
        entry = defined.setdefault(name, [1, None])
        entry[1] = entry[1] or handler
    kinds: Dict[str, Kind] = {
        name: handler or {1: DEFINED_V1, 2: DEFINED_V2}.get(versions, DEFINED)
        for name, (versions, handler) in defined.items()
    }
    # The rules of messages, after the updates' (their targets' indexes come first).
    answers: Messages = {}
    notifications: Messages = {}
    for document in documents:
        for table_name, into in (("responses", answers), ("notifications", notifications)):
            for method, written in message_rules(document, table_name):
                kept = [r for r in (message_rule(found, agent, w) for agent, w in written) if r is not None]
                if kept:
                    into[method] = kept
    return kinds, rules, [TargetRule(t[0], t[1], t[2], tuple(t[3])) for t in found], answers, notifications


def message_rule(found: List[List[Any]], agent: bool, w: Dict[str, str]) -> Optional[MessageRule]:
    """A rule of a message as the store applies it: a replace whose paths are plain member names,
    of a target without ids (added to ``found`` when new); None for any other."""
    field, value = w.get("field"), w.get("value")
    plain = all(p is None or (p and "." not in p) for p in (field, value))
    if action_of(w["action"]) != "replace" or w.get("id") is not None or not plain:
        return None
    at = next((i for i, t in enumerate(found) if t[0] == w["target"]), None)
    if at is not None and found[at][1] is not None:
        return None
    if at is None:
        if len(found) >= 255:
            return None
        found.append([w["target"], None, field is None and value is not None, []])
        at = len(found) - 1
    return MessageRule(at, field, value, agent)


def message_rules(document: Dict[str, Any], table_name: str) -> List[Tuple[str, List[Tuple[bool, Dict[str, str]]]]]:
    """The ``responses`` or ``notifications`` of a table: each method with its rules, each rule
    with its scope (``agent``: True for the agent's, False for the session's)."""
    out: List[Tuple[str, List[Tuple[bool, Dict[str, str]]]]] = []
    for method, scopes in document.get(table_name, {}).items():
        rules: List[Tuple[bool, Dict[str, str]]] = []
        for scope, agent in (("session", False), ("agent", True)):
            listed = scopes.get(scope) if isinstance(scopes, dict) else None
            for r in listed if isinstance(listed, list) else ():
                w = written(r)
                if w is not None:
                    rules.append((agent, w))
        out.append((method, rules))
    return out


def written(r: Any) -> Optional[Dict[str, str]]:
    """A rule's string members (None: without a string ``action`` and ``target``)."""
    if not isinstance(r, dict):
        return None
    rule = {k: v for k, v in r.items() if isinstance(v, str)}
    return rule if "target" in rule and "action" in rule else None


def updates(document: Dict[str, Any]) -> List[Tuple[str, Optional[Dict[str, str]]]]:
    """The ``updates`` of a table: each kind with its first session rule (its string members)."""
    out: List[Tuple[str, Optional[Dict[str, str]]]] = []
    for name, rules in document.get("updates", {}).items():
        session = rules.get("session") if isinstance(rules, dict) else None
        first = session[0] if isinstance(session, list) and session else None
        out.append((name, written(first)))
    return out
