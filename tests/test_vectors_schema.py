"""The valid frame vectors are real ACP: each marked one validates against the official schema.

This checks the vectors themselves (no backend involved), so a typo in a hand-written vector
cannot make the conformance tests assert something about a frame that is not ACP.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

import vectors

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "python" / "acp_fast" / "schema"
VALID = vectors.load("frames_valid")
MARKED = [c for c in VALID if c.get("schema")]


def _schema(version: int) -> dict:
    with (SCHEMA_DIR / f"v{version}" / "schema.json").open(encoding="utf-8") as f:
        return json.load(f)


SCHEMAS = {1: _schema(1), 2: _schema(2)}
URIS = {1: "urn:acp:v1", 2: "urn:acp:v2"}


def _validator(version: int, definition: str | None):
    root = dict(SCHEMAS[version])
    root["$id"] = URIS[version]
    registry = Registry().with_resource(URIS[version], Resource.from_contents(root))
    if definition is None:
        target = root
    else:
        assert definition in root["$defs"], f"no $defs/{definition} in v{version} schema"
        target = {"$ref": f"{URIS[version]}#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(root)
    return cls(target, registry=registry, format_checker=cls.FORMAT_CHECKER)


def test_every_session_update_kind_of_both_versions_has_a_vector():
    kinds = {1: set(), 2: set()}
    for case in MARKED:
        if case["method"] == "session/update":
            kinds[case["schema"]["version"]].add(case["update_kind"])
    v1 = {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
    v2 = {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message",
        "agent_message",
        "agent_thought",
        "state_update",
        "tool_call_update",
        "tool_call_content_chunk",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
    assert v1 <= kinds[1], sorted(v1 - kinds[1])
    assert v2 <= kinds[2], sorted(v2 - kinds[2])
    assert any(k.startswith("_") for k in kinds[2]) and (kinds[2] - v2 - {k for k in kinds[2] if k.startswith("_")})


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in MARKED])
def test_vector_validates_against_schema(case):
    marker = case["schema"]
    frame = json.loads(case["frame"])
    part = frame[marker["part"]]
    errors = sorted(_validator(marker["version"], marker["def"]).iter_errors(part), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])
    # and the whole frame is an ACP message of that version (root anyOf)
    errors = list(_validator(marker["version"], None).iter_errors(frame))
    assert not errors, "\n".join(e.message for e in errors[:5])


@pytest.mark.parametrize("version", [1, 2])
def test_schema_validation_is_not_vacuous(version):
    # a session/update without its required sessionId must be rejected by the same machinery
    definition = "SessionNotification" if version == 1 else "UpdateSessionNotification"
    bad = {"update": {"sessionUpdate": "usage_update", "used": 1, "size": 2}}
    assert list(_validator(version, definition).iter_errors(bad))
    bad_v1_update = {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": -1, "size": 2}}
    assert list(_validator(version, definition).iter_errors(bad_v1_update))
