"""The method tables of ``acp-fast validate`` (private), read from the official schema.

``acp-fast validate`` checks every message with [`acp_fast.SchemaValidator`][acp_fast.SchemaValidator]: the official
schema compiled into the core (the fallback: jsonschema-rs or jsonschema) plus the protocol rules
the schema cannot express. What remains here is what neither says, and it is not hand-written:
``protocol`` gives each method of a protocol version (v1, v2, optionally with the unstable
surface) as the schema's ``x-method`` / ``x-side`` annotations describe it: whether it is a
request or a notification, which side sends it (the schema validator judges a message without
knowing who sent it, so ``validate`` checks the direction of a recording's frames with this
table), and the names of its params and result definitions (the tests check the bridge's output
with them). ``load_schema`` reads the schema documents shipped in ``acp_fast/schema/``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Dict, NamedTuple, Optional

__all__ = ["Method", "Protocol", "protocol", "load_schema"]


@cache
def load_schema(version: int, unstable: bool = False) -> Dict[str, Any]:
    """The official schema document shipped in the package (``acp_fast/schema/v{N}/``)."""
    name = "schema.unstable.json" if unstable else "schema.json"
    text = (resources.files("acp_fast") / "schema" / f"v{version}" / name).read_text(encoding="utf-8")
    schema: Dict[str, Any] = json.loads(text)
    return schema


class Method(NamedTuple):
    name: str
    kind: str  # "request" or "notification"
    sender: Optional[str]  # "client", "agent" or None (either side)
    params_def: Optional[str]
    result_def: Optional[str]


class Protocol:
    """The methods of one protocol version (stable, or with ``unstable`` its unstable surface)."""

    def __init__(self, version: int, unstable: bool = False):
        self.version = version
        self.unstable = unstable
        defs = load_schema(version, unstable)["$defs"]
        self.defs = defs
        requests: Dict[str, str] = {}
        results: Dict[str, str] = {}
        notifications: Dict[str, str] = {}
        sides: Dict[str, str] = {}
        for def_name, definition in defs.items():
            method = definition.get("x-method")
            if not isinstance(method, str):
                continue
            sides[method] = definition.get("x-side", "")
            if def_name.endswith("Notification"):
                notifications[method] = def_name
            elif def_name.endswith("Request"):
                requests[method] = def_name
            elif def_name.endswith("Response"):
                results[method] = def_name
        self.methods: Dict[str, Method] = {}
        for method in list(requests) + list(notifications):
            sender = {"agent": "client", "client": "agent"}.get(sides.get(method) or "")
            kind = "request" if method in requests else "notification"
            params_def = requests.get(method) or notifications.get(method)
            result_def = results.get(method) if kind == "request" else None
            self.methods[method] = Method(method, kind, sender, params_def, result_def)

    def get(self, method: str) -> Optional[Method]:
        return self.methods.get(method)


@cache
def protocol(version: int, unstable: bool = False) -> Protocol:
    return Protocol(version, unstable)
