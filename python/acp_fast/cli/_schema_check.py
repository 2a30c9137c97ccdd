"""The official schema of ``acp-fast validate`` (private): :func:`load_schema` reads the documents
shipped in ``acp_fast/schema/``, and :class:`SchemaChecker` validates messages against them with
:func:`acp_fast.validate_schema` (which finds and reports the failing branch of a union).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Dict, List, Optional

import acp_fast

from ._spec import Issue


def _schema_text(version: int, name: str) -> str:
    return (resources.files("acp_fast") / "schema" / f"v{version}" / name).read_text(encoding="utf-8")


@cache
def load_schema(version: int, unstable: bool = False) -> Dict[str, Any]:
    """The official schema document shipped in the package (``acp_fast/schema/v{N}/``)."""
    schema: Dict[str, Any] = json.loads(_schema_text(version, "schema.unstable.json" if unstable else "schema.json"))
    return schema


# ---------------------------------------------------------------------------------------------
# Validation against the official schema (acp_fast.validate_schema)


class SchemaUnavailable(RuntimeError):
    """The pure-Python backend runs and neither jsonschema-rs nor jsonschema is installed."""


class SchemaChecker:
    """Validates messages against the official schema with :func:`acp_fast.validate_schema` (the
    Rust core, or the fallback's jsonschema-rs / jsonschema), keeping the problems of one part."""

    def __init__(self, version: int, unstable: bool = False):
        self.version = version
        self.unstable = unstable
        try:
            acp_fast.validate_schema(
                b'{"jsonrpc":"2.0","method":"_probe"}', protocol_version=version, unstable=unstable
            )
        except ImportError as exc:  # the fallback without an engine
            raise SchemaUnavailable(f"--schema {exc}") from exc

    def check(self, raw: bytes, part: str, method: Optional[str] = None) -> List[Issue]:
        """Issues of the message ``raw`` inside its ``part`` (``params``, ``result`` or ``error``);
        ``method``: the request a response answers."""
        problems = acp_fast.validate_schema(raw, protocol_version=self.version, unstable=self.unstable, method=method)
        return [Issue(p.location, p.message) for p in problems if p.location[:1] == (part,) and p.rule == "schema"]
