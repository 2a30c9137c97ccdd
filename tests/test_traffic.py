"""The benchmark traffic generator (python/acp_fast/traffic.py).

Generated frames must be deterministic for a seed, near their profile's target size, in the
profile's stated mix, decodable, and valid against the official schema of their protocol version
(root ``anyOf`` plus the method-specific ``$defs`` entry, since the root alone admits any
extension message). The schema test validates every frame of a contiguous stream, and a second
test shows that stream holds every structure (member paths, JSON types, tag values) that a much
longer stream of the profile shows; a sample of another seed validates too.
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


@functools.cache
def _schema(version: int) -> dict:
    return json.loads((SCHEMA_DIR / f"v{version}" / "schema.json").read_text("utf-8"))


@functools.cache
def _validator(version: int, definition: str | None):
    schema = _schema(version)
    if definition is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(schema)


@functools.cache
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


@functools.cache
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


#: A contiguous stream of this many frames (seed 0) holds every structural feature that
#: FEATURE_STREAM frames of the profile show (test_validated_window_covers_the_profile).
VALIDATED_WINDOW = {"mixed": 1500, "large": 60, "tiny": 100, "v2": 1500}
FEATURE_STREAM = {"mixed": 10000, "large": 1000, "tiny": 10000, "v2": 10000}
#: Short string members whose value selects a schema branch (an enum, a tag).
_TAGS = {
    "sessionUpdate",
    "status",
    "kind",
    "stopReason",
    "outcome",
    "type",
    "operation",
    "fileType",
    "format",
    "priority",
    "state",
    "method",
    "optionId",
}


def _features(message, path="", out=None) -> set:
    """The frame's structure: every member path with its JSON type (and the value of tag
    members), array items under ``[]``."""
    out = set() if out is None else out
    if isinstance(message, dict):
        for key, value in message.items():
            _features(value, f"{path}.{key}", out)
    elif isinstance(message, list):
        out.add(path + ("[]" if message else "[empty]"))
        for value in message:
            _features(value, path + "[]", out)
    else:
        tag = "=" + message if isinstance(message, str) and path.rsplit(".", 1)[-1] in _TAGS else ""
        out.add(f"{path}:{type(message).__name__}{tag}")
    return out


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_every_frame_validates_against_the_schema(profile):
    """Every frame of a contiguous stream (the handshake, then whole prompt turns) validates
    against the official schema of the profile's protocol version: the root schema, and the
    definition of its method's params (or, for a response, of the result of the request it
    answers). The next test shows the stream holds every structure the profile produces."""
    version = traffic.PROTOCOL_VERSIONS[profile]
    frames = _frames(profile, VALIDATED_WINDOW[profile])
    messages = [json.loads(frame) for frame in frames]
    requests = {m["id"]: m["method"] for m in messages if "method" in m and "id" in m}
    assert len(requests) == sum(1 for m in messages if "method" in m and "id" in m), "request ids repeat"
    for i, message in enumerate(messages):
        try:
            _validate(message, version, requests)
        except jsonschema.ValidationError as error:  # pragma: no cover - failure report
            pytest.fail(f"{profile} frame {i} is not valid v{version}: {error.message}\n{frames[i][:500]!r}")


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_validated_window_covers_the_profile(profile):
    window = set().union(*(_features(json.loads(f)) for f in _frames(profile, VALIDATED_WINDOW[profile])))
    stream = set().union(*(_features(json.loads(f)) for f in _frames(profile, FEATURE_STREAM[profile])))
    assert stream - window == set(), f"{profile}: structures the validated window never shows"
    assert len(window) > 20 or profile == "tiny"


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_other_seeds_validate_too(profile):
    # a sample of another seed's stream, far from its start
    version = traffic.PROTOCOL_VERSIONS[profile]
    n = {"large": 300}.get(profile, 3000)
    frames = traffic.frames(profile, n, seed=11)
    messages = [json.loads(frame) for frame in frames]
    requests = {m["id"]: m["method"] for m in messages if "method" in m and "id" in m}
    for i in random.Random(1234).sample(range(n // 3, n), 40):
        _validate(messages[i], version, requests)


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
    assert any(u["sessionUpdate"] == "tool_call_update" and any(v is None for v in u.values()) for u in updates), (
        "no explicit null in a v2 tool_call_update"
    )
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


def _mix(profile: str, n: int) -> dict:
    """Shares of the frames of ``profile`` by category (JSON-RPC requests and responses other
    than ``session/update``, message chunks, tool calls, tool-call content chunks, terminals)."""
    counts: dict = {}
    for frame in _frames(profile, n):
        message = json.loads(frame)
        if message.get("method") != "session/update":
            category = "rpc"
        else:
            kind = message["params"]["update"]["sessionUpdate"]
            category = {
                "agent_message_chunk": "chunks",
                "agent_thought_chunk": "chunks",
                "user_message_chunk": "chunks",
                "user_message": "chunks",
                "tool_call": "tool calls",
                "tool_call_update": "tool calls",
                "tool_call_content_chunk": "content chunks",
                "terminal_update": "terminals",
                "terminal_output_chunk": "terminals",
            }.get(kind, "other updates")
        counts[category] = counts.get(category, 0) + 1
    return {category: count / n for category, count in counts.items()}


#: The stated mix of each profile (traffic.py's docstring): (low, high) share of frames.
STATED_MIX = {
    # streaming traffic: mostly message / thought chunks and tool calls, with the requests,
    # responses, permissions and plans of whole prompt turns
    "mixed": {"chunks": (0.40, 0.65), "tool calls": (0.25, 0.45), "rpc": (0.08, 0.25), "other updates": (0.002, 0.03)},
    # big tool results only
    "large": {"tool calls": (1.0, 1.0)},
    # message chunks only
    "tiny": {"chunks": (1.0, 1.0)},
    # v2 tool traffic: upserts, content chunks, terminals (plus chunks, state and plan updates)
    "v2": {
        "tool calls": (0.18, 0.35),
        "content chunks": (0.05, 0.15),
        "terminals": (0.08, 0.20),
        "chunks": (0.20, 0.45),
        "rpc": (0.05, 0.20),
        "other updates": (0.04, 0.12),
    },
}


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_stated_mix(profile):
    mix = _mix(profile, SIZE_SAMPLE[profile])
    assert set(mix) == set(STATED_MIX[profile]), mix
    for category, (low, high) in STATED_MIX[profile].items():
        assert low <= mix[category] <= high, (profile, category, mix[category])


def test_v2_tool_traffic():
    updates = _updates(_frames("v2", SIZE_SAMPLE["v2"]))
    tool = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
    with_nulls = [u for u in tool if any(v is None for v in u.values())]
    assert 0.15 <= len(with_nulls) / len(tool) <= 0.5  # upserts that clear members with explicit nulls
    cleared = {k for u in with_nulls for k, v in u.items() if v is None}
    assert {"rawOutput", "content", "title"} <= cleared
    terminal_output = [u for u in updates if u["sessionUpdate"] == "terminal_update" and "output" in u]
    assert terminal_output, "no terminal_update with output"
    for u in terminal_output:
        base64.b64decode(u["output"]["data"], validate=True)
    assert any(u.get("exitStatus") for u in updates if u["sessionUpdate"] == "terminal_update")
