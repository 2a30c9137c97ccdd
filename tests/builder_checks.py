"""The common contract of the frame builders' output, for tests/test_builders*.py.

Every frame a builder returns must: end with exactly one newline, decode (acp_fast.decode) to the
expected message, and validate against the official schema of its protocol version: the whole
frame against the schema root, and the method-specific part (params / result / error) against the
matching ``$defs`` entry, because the root ``anyOf`` also admits extension messages and so accepts
almost anything.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

import acp_fast

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_DIR = Path(acp_fast.__file__).parent / "schema"
_SCHEMAS: dict = {}
_VALIDATORS: dict = {}


def _schema(version: int) -> dict:
    if version not in _SCHEMAS:
        _SCHEMAS[version] = json.loads((SCHEMA_DIR / f"v{version}" / "schema.json").read_text("utf-8"))
    return _SCHEMAS[version]


def _validator(version: int, definition: str | None):
    key = (version, definition)
    if key not in _VALIDATORS:
        schema = _schema(version)
        if definition is not None:
            schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
        _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return _VALIDATORS[key]


@functools.cache
def _method_defs(version: int) -> dict:
    """method -> {"params": definition, "result": definition}, from the schema's ``x-method`` keys."""
    table: dict = {}
    for name, definition in _schema(version)["$defs"].items():
        method = definition.get("x-method")
        if method is not None:
            table.setdefault(method, {})["result" if name.endswith("Response") else "params"] = name
    return table


def validate(message: dict, version: int, *, answers: str | None = None) -> None:
    """Validate a decoded frame against the v1 or v2 schema (root and method-specific part).

    ``answers`` names the method a response answers (to pick the result definition).
    """
    _validator(version, None).validate(message)
    method = message.get("method")
    if method is not None:
        _validator(version, _method_defs(version)[method]["params"]).validate(message["params"])
    elif "error" in message:
        _validator(version, "Error").validate(message["error"])
    else:
        assert answers is not None, "a response needs the method it answers"
        _validator(version, _method_defs(version)[answers]["result"]).validate(message["result"])


def check(frame: bytes, expected: dict, version: int | tuple[int, ...], *, answers: str | None = None) -> None:
    """The common contract of every builder's output."""
    assert isinstance(frame, bytes)
    assert frame.endswith(b"\n") and not frame.endswith(b"\n\n")
    assert frame.count(b"\n") == 1
    body = frame[:-1]
    assert json.loads(body) == expected
    # compact, keys in the given (wire) order
    assert body == json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode()
    message = acp_fast.decode(frame)
    assert message.to_dict() == expected
    assert message.raw == body
    assert acp_fast.encode(message) == frame
    for v in (version,) if isinstance(version, int) else version:
        validate(expected, v, answers=answers)


def _session_update(session_id: str, update: dict) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
