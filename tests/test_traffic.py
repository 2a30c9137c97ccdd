"""The benchmark traffic generator (python/acp_fast/traffic.py).

Generated frames must be deterministic for a seed, near their profile's target size, decodable,
and valid against the official schema of their protocol version (root ``anyOf`` plus the
method-specific ``$defs`` entry, since the root alone admits any extension message).
"""

from __future__ import annotations

import base64
import functools
import json
import random
from pathlib import Path

import pytest

import acp_fast
from acp_fast import traffic

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_DIR = Path(acp_fast.__file__).parent / "schema"

SIZE_SAMPLE = {"mixed": 3000, "large": 300, "tiny": 3000, "v2": 3000}
SCHEMA_SAMPLE = 300


@functools.lru_cache(maxsize=None)
def _schema(version: int) -> dict:
    return json.loads((SCHEMA_DIR / f"v{version}" / "schema.json").read_text("utf-8"))


@functools.lru_cache(maxsize=None)
def _validator(version: int, definition: "str | None"):
    schema = _schema(version)
    if definition is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(schema)


@functools.lru_cache(maxsize=None)
def _method_defs(version: int) -> dict:
    table: dict = {}
    for name, definition in _schema(version)["$defs"].items():
        method = definition.get("x-method")
        if method is not None:
            table.setdefault(method, {})["result" if name.endswith("Response") else "params"] = name
    return table


def _validate(message: dict, version: int, requests: dict) -> None:
    _validator(version, None).validate(message)
    defs = _method_defs(version)
    if "method" in message:
        assert message["method"] in defs, f"unexpected method {message['method']!r}"
        _validator(version, defs[message["method"]]["params"]).validate(message["params"])
    elif "error" in message:
        _validator(version, "Error").validate(message["error"])
    else:
        method = requests[message["id"]]  # every response answers an earlier request
        _validator(version, defs[method]["result"]).validate(message["result"])


@functools.lru_cache(maxsize=None)
def _frames(profile: str, n: int, seed: int = 0) -> tuple:
    return tuple(traffic.frames(profile, n, seed))


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_deterministic(profile):
    a = traffic.frames(profile, 200, seed=7)
    assert a == traffic.frames(profile, 200, seed=7)
    assert a != traffic.frames(profile, 200, seed=8)
    assert traffic.generate(profile, 200, seed=7) == b"".join(a)
    assert traffic.frames(profile, 50, seed=7) == a[:50]  # a longer run extends a shorter one
    assert traffic.frames(profile, 200) == traffic.frames(profile, 200, seed=0)


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_frame_shape(profile):
    for frame in _frames(profile, SIZE_SAMPLE[profile]):
        assert isinstance(frame, bytes)
        assert frame.endswith(b"\n") and frame.count(b"\n") == 1


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_average_size(profile):
    frames = _frames(profile, SIZE_SAMPLE[profile])
    average = sum(map(len, frames)) / len(frames)
    target = traffic.TARGET_FRAME_BYTES[profile]
    assert 0.75 * target <= average <= 1.25 * target, (profile, average, target)


def test_large_frame_range():
    sizes = [len(frame) for frame in _frames("large", SIZE_SAMPLE["large"])]
    assert min(sizes) >= 2000
    assert max(sizes) <= 50 * 1024
    assert max(sizes) > 30_000  # the range is actually used
    assert min(sizes) < 4_000


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_every_frame_decodes(profile, backend):
    frames = _frames(profile, SIZE_SAMPLE[profile])
    results = backend.FrameDecoder().feed(b"".join(frames))
    assert len(results) == len(frames)
    for frame, message in zip(frames, results):
        assert not isinstance(message, acp_fast.DecodeError), message
        assert message.raw == frame[:-1]
    for frame in frames[:200]:
        message = backend.decode(frame)
        assert message.to_dict() == json.loads(frame)
        assert backend.encode(message) == frame


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_frames_validate_against_schema(profile):
    version = traffic.PROTOCOL_VERSIONS[profile]
    frames = _frames(profile, SIZE_SAMPLE[profile])
    messages = [json.loads(frame) for frame in frames]
    requests = {m["id"]: m["method"] for m in messages if "method" in m and "id" in m}
    assert len(requests) == sum(1 for m in messages if "method" in m and "id" in m), "request ids repeat"
    # the stream's first frames (initialize, session/new) and a random sample of the rest
    rng = random.Random(1234)
    indices = sorted(set(range(min(12, len(messages)))) | set(rng.sample(range(len(messages)), SCHEMA_SAMPLE)))
    for i in indices:
        try:
            _validate(messages[i], version, requests)
        except jsonschema.ValidationError as error:  # pragma: no cover - failure report
            pytest.fail(f"{profile} frame {i} is not valid v{version}: {error.message}\n{frames[i][:500]!r}")


def _updates(frames) -> list:
    out = []
    for frame in frames:
        message = json.loads(frame)
        if message.get("method") == "session/update":
            out.append(message["params"]["update"])
    return out


def test_mixed_variety():
    frames = _frames("mixed", SIZE_SAMPLE["mixed"])
    data = b"".join(frames)
    messages = [json.loads(frame) for frame in frames]
    kinds = {u["sessionUpdate"] for u in _updates(frames)}
    assert {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"} <= kinds
    methods = {m.get("method") for m in messages}
    assert {"initialize", "session/new", "session/prompt", "session/update", "session/request_permission"} <= methods
    results = [m["result"] for m in messages if "result" in m]
    assert any("outcome" in r for r in results)
    assert any(r.get("stopReason") == "end_turn" for r in results)
    updates = _updates(frames)
    tool_updates = [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert any(item["type"] == "diff" for u in tool_updates for item in u.get("content", []))
    assert any("locations" in u for u in updates)
    assert any("rawInput" in u for u in updates)
    assert any("rawOutput" in u for u in updates)
    assert any(u.get("status") == "failed" for u in updates)
    assert len({m["params"]["sessionId"] for m in messages if m.get("method") == "session/update"}) >= 3
    # Unicode written raw, and escapes
    assert "日本語".encode() in data and "🚀".encode() in data
    assert b'\\"' in data and b"\\\\" in data and b"\\n" in data and b"\\t" in data


def test_v2_variety():
    frames = _frames("v2", SIZE_SAMPLE["v2"])
    updates = _updates(frames)
    kinds = {u["sessionUpdate"] for u in updates}
    assert {
        "tool_call_update",
        "tool_call_content_chunk",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
        "state_update",
        "agent_message_chunk",
    } <= kinds
    assert not kinds & {"tool_call", "plan"}  # v1-only variants
    assert any(
        u["sessionUpdate"] == "tool_call_update" and any(v is None for v in u.values()) for u in updates
    ), "no explicit null in a v2 tool_call_update"
    for u in updates:
        if u["sessionUpdate"] == "terminal_output_chunk":
            base64.b64decode(u["data"], validate=True)
        if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk"):
            assert isinstance(u["messageId"], str)
    messages = [json.loads(frame) for frame in frames]
    permission = [m for m in messages if m.get("method") == "session/request_permission"]
    assert permission and all("title" in m["params"] and "subject" in m["params"] for m in permission)


def test_tiny_is_message_chunks():
    kinds = {u["sessionUpdate"] for u in _updates(_frames("tiny", 500))}
    assert kinds <= {"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"}
    assert "agent_message_chunk" in kinds


def test_arguments():
    assert traffic.frames("mixed", 0) == []
    assert traffic.generate("tiny", 0) == b""
    with pytest.raises(ValueError, match="profile"):
        traffic.frames("huge", 10)
    with pytest.raises(ValueError, match="n_frames"):
        traffic.frames("mixed", -1)
    assert set(traffic.PROFILES) == set(traffic.TARGET_FRAME_BYTES) == set(traffic.PROTOCOL_VERSIONS)
