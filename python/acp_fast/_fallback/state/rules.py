"""The update table, read from the protocol's own schema: ``acp_fast/schema/v1/state.json`` and
``v2/state.json``, which ``make schemas`` generates from the official schema crate (each
``sessionUpdate`` kind a version defines, with the ``x-state`` rules the schema publishes for it).
A kind's function in this store comes from its first session rule, by target and action
(``HANDLERS``); v1 publishes no rules, so its own kinds are named (``V1_HANDLERS``). A kind of a
newer draft is tracked by regenerating when its rule names a target and action the store has a
function for; a kind whose target has none is defined (ignored under the versions that define
it, DESIGN §7.3).

Mirror of ``rust/state/rules.rs``. Difference on purpose: ``table`` gives the function names
(``__init__.py`` turns them into its dispatch dicts) where Rust gives ``UpdateKind`` values.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple

#: The function (by name) of a rule's (target, action).
HANDLERS: Dict[Tuple[str, str], str] = {
    ("toolCall", "upsert"): "tool_call_update",
    ("toolCall", "append"): "content_chunk",
    ("terminal", "upsert"): "terminal_update",
    ("terminal", "append"): "terminal_chunk",
    ("plan", "replace"): "plan_update",
    ("plan", "remove"): "plan_removed",
}

#: v1's kinds that the store tracks (v1's schema has no ``x-state``).
V1_HANDLERS: Dict[str, str] = {"tool_call": "tool_call", "tool_call_update": "tool_call_update", "plan": "plan"}

#: What ``table`` gives a kind no function handles: which versions define it.
DEFINED, DEFINED_V1, DEFINED_V2 = "defined", "defined_v1", "defined_v2"


def table() -> Dict[str, str]:
    """Every kind of either table: its function's name, else which versions define it."""
    defined: Dict[str, List[Any]] = {}
    for index, version in enumerate(("v1", "v2")):
        text = (resources.files("acp_fast") / "schema" / version / "state.json").read_text(encoding="utf-8")
        for name, rule in updates(json.loads(text)):
            entry = defined.setdefault(name, [0, None])
            entry[0] |= 1 << index
            if rule is not None and entry[1] is None:
                entry[1] = HANDLERS.get(rule)
    for name, handler in V1_HANDLERS.items():
        entry = defined.setdefault(name, [1, None])
        entry[1] = entry[1] or handler
    return {
        name: handler or {1: DEFINED_V1, 2: DEFINED_V2}.get(versions, DEFINED)
        for name, (versions, handler) in defined.items()
    }


def updates(document: Dict[str, Any]) -> List[Tuple[str, Optional[Tuple[str, str]]]]:
    """The ``updates`` of a table: each kind with the (target, action) of its first session rule."""
    out: List[Tuple[str, Optional[Tuple[str, str]]]] = []
    for name, rules in document.get("updates", {}).items():
        session = rules.get("session") if isinstance(rules, dict) else None
        first = session[0] if isinstance(session, list) and session else None
        rule = (first["target"], first["action"]) if isinstance(first, dict) else None
        out.append((name, rule))
    return out
