"""Strict schema validation (issue 17): ``acp_fast.validate_schema`` and ``SchemaValidator``.

The differential test judges a generated corpus — the frames of ``acp_fast.traffic`` and
mutations of them (wrong types, missing required members, unknown enum values, extra members) —
with the reference ``jsonschema`` package and with ``validate_schema`` on both backends (the
fallback once per engine it can use: jsonschema-rs when installed, and jsonschema), and requires
the same valid / invalid verdict on every message. The reference applies the rules of
docs/API.md "Schema validation" (which definition a message is checked against) on its own, from
``meta.json`` and the schema's ``$defs``.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from functools import cache
from importlib import resources
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acp_fast
from acp_fast import builders as B
from acp_fast import traffic

jsonschema = pytest.importorskip("jsonschema")

# --------------------------------------------------------------------------------------------
# The reference: jsonschema on an envelope built here from meta.json and $defs
# --------------------------------------------------------------------------------------------


def _read(version: int, name: str) -> Dict[str, Any]:
    text = (resources.files("acp_fast") / "schema" / f"v{version}" / name).read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _protocol(version: int, unstable: bool) -> Tuple[Dict[str, Any], Dict[str, Tuple[str, str]], Dict[str, str]]:
    """(schema, {method: (params def, "request" | "notification")}, {method: result def})."""
    suffix = ".unstable.json" if unstable else ".json"
    root = _read(version, "schema" + suffix)
    meta = _read(version, "meta" + suffix)
    listed = {m for table in ("agentMethods", "clientMethods", "protocolMethods") for m in meta[table].values()}
    calls: Dict[str, Tuple[str, str]] = {}
    results: Dict[str, str] = {}
    for name, definition in root["$defs"].items():
        method = definition.get("x-method")
        if method not in listed:
            continue
        if name.endswith("Request"):
            calls[method] = (name, "request")
        elif name.endswith("Notification"):
            calls[method] = (name, "notification")
        elif name.endswith("Response"):
            results[method] = name
    assert set(calls) == listed, (version, unstable, listed - set(calls))
    return root, calls, results


@cache
def _validator(version: int, unstable: bool, envelope: str) -> Any:
    root = _protocol(version, unstable)[0]
    return jsonschema.Draft202012Validator({**json.loads(envelope), "$defs": root["$defs"]})


def _ref(name: str) -> Dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def reference_valid(msg: Any, version: int, unstable: bool = False, method: Optional[str] = None) -> bool:
    """The reference verdict on one message (or v2 batch)."""
    if isinstance(msg, list) and version >= 2:
        return bool(msg) and all(reference_valid(m, version, unstable, method) for m in msg)
    if not isinstance(msg, dict):
        return False
    root, calls, results = _protocol(version, unstable)
    props: Dict[str, Any] = {"jsonrpc": {"type": "string", "const": "2.0"}}
    required = ["jsonrpc"]
    if "method" in msg:
        name = msg["method"]
        props["method"] = {"type": "string"}
        required.append("method")
        if isinstance(name, str) and name in calls:
            params, kind = calls[name]
            props["params"] = _ref(params)
            if kind == "request":
                props["id"] = _ref("RequestId")
                required.append("id")
            else:
                props["id"] = False
            if not _validator(version, unstable, json.dumps(_ref(params))).is_valid({}):
                required.append("params")
        else:
            if isinstance(name, str) and not name.startswith("_"):
                return False  # neither a method of the protocol nor an extension
            if "id" in msg:
                props["id"] = _ref("RequestId")
                required.append("id")
    elif "result" in msg:
        props["id"] = _ref("RequestId")
        props["error"] = False
        required += ["id", "result"]
        if method is not None and method.startswith("_"):
            pass
        elif method is not None and method in results and calls.get(method, ("", ""))[1] == "request":
            props["result"] = _ref(results[method])
        else:
            props["result"] = {"anyOf": [_ref(d) for d in sorted(set(results.values()), key=_def_order(root))]}
    elif "error" in msg:
        props["id"] = _ref("RequestId")
        props["error"] = _ref("Error")
        props["result"] = False
        required += ["id", "error"]
    else:
        return False
    envelope = {"type": "object", "required": required, "properties": props}
    return bool(_validator(version, unstable, json.dumps(envelope, sort_keys=True)).is_valid(msg))


def _def_order(root: Dict[str, Any]) -> Any:
    order = {name: i for i, name in enumerate(root["$defs"])}
    return lambda name: order[name]


# --------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------


def _corpus(profile: str, n: int, seed: int) -> List[Tuple[Any, Optional[str]]]:
    """(message, method of the request a response answers) for the frames of a profile."""
    pending: Dict[str, str] = {}
    out: List[Tuple[Any, Optional[str]]] = []
    for frame in traffic.frames(profile, n, seed=seed):
        msg = json.loads(frame)
        hint = None
        if "method" in msg and "id" in msg:
            pending[json.dumps(msg["id"])] = msg["method"]
        elif "id" in msg:
            hint = pending.pop(json.dumps(msg["id"]), None)
        out.append((msg, hint))
    return out


CORPUS = {profile: _corpus(profile, 400, seed=7) for profile in ("mixed", "v2")}

_WRONG = [7, -1, 1.5, "x", None, True, [], {}, [1], {"a": 1}]


def _places(value: Any, path: Tuple[Any, ...] = ()) -> Iterator[Tuple[Any, ...]]:
    """Every path in a value."""
    yield path
    if isinstance(value, dict):
        for key, member in value.items():
            yield from _places(member, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _places(item, path + (i,))


def _get(value: Any, path: Tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def mutate(msg: Any, rng: random.Random) -> Any:
    """One mutation of a message: a wrong type, a missing member, an unknown enum value or an
    extra member, somewhere in it."""
    msg = copy.deepcopy(msg)
    places = list(_places(msg))
    path = rng.choice(places)
    kind = rng.choice(["wrong_type", "missing", "unknown_value", "extra"])
    parent_path, last = path[:-1], (path[-1] if path else None)
    if kind == "missing" and path and isinstance(_get(msg, parent_path), dict):
        del _get(msg, parent_path)[last]
    elif kind == "extra":
        target = _get(msg, path)
        if isinstance(target, dict):
            target[rng.choice(["extra", "_meta", "title", "kind", "status", "x"])] = rng.choice(_WRONG)
        elif path:
            _set(msg, path, rng.choice(_WRONG))
    elif kind == "unknown_value" and path and isinstance(_get(msg, path), str):
        _set(msg, path, rng.choice(["bogus", "_custom", "", "2.0", "tool_call", "other", "completed"]))
    elif path:
        _set(msg, path, rng.choice(_WRONG))
    else:
        msg = rng.choice(_WRONG)
    return msg


def _set(msg: Any, path: Tuple[Any, ...], value: Any) -> None:
    _get(msg, path[:-1])[path[-1]] = value


# --------------------------------------------------------------------------------------------
# The engines of the fallback
# --------------------------------------------------------------------------------------------


def _fallback_engines() -> List[str]:
    try:
        import jsonschema_rs  # noqa: F401
    except ImportError:
        return ["jsonschema"]
    return ["jsonschema-rs", "jsonschema"]


@pytest.fixture(params=["rust"] + [f"python-{e}" for e in _fallback_engines()])
def strict(request: Any, monkeypatch: Any) -> Any:
    """``validate_schema`` of one backend (and, for the fallback, one engine)."""
    from conftest import get_backend

    if request.param == "rust":
        yield get_backend("rust")
        return
    module = get_backend("python")
    from acp_fast._fallback import schema as fallback

    if request.param == "python-jsonschema":
        monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # the import then fails
    fallback.engine_name.cache_clear()
    fallback.schema.cache_clear()
    yield module
    fallback.engine_name.cache_clear()
    fallback.schema.cache_clear()


def _schema_verdict(problems: List[Any]) -> bool:
    return not [p for p in problems if p.rule == "schema"]


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_generated_traffic_is_valid(strict, profile):
    version = traffic.PROTOCOL_VERSIONS[profile]
    for msg, hint in CORPUS[profile]:
        assert reference_valid(msg, version, method=hint), msg
        assert strict.validate_schema(msg, protocol_version=version, method=hint) == [], msg


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_differential_mutations(strict, profile):
    """Seeded mutations of every frame of the corpus: the reference and acp-fast agree."""
    version = traffic.PROTOCOL_VERSIONS[profile]
    rng = random.Random(17)
    invalid = 0
    for msg, hint in CORPUS[profile]:
        for _ in range(3):
            mutated = mutate(msg, rng)
            expected = reference_valid(mutated, version, method=hint)
            problems = strict.validate_schema(acp_fast.dumps(mutated), protocol_version=version, method=hint)
            assert _schema_verdict(problems) == expected, (mutated, hint, problems)
            invalid += not expected
            for p in problems:
                assert p.message.startswith("expected") and p.severity in ("error", "warning")
                assert p.path == _render(p.location)
    assert invalid > 300  # the mutations do break messages


@settings(max_examples=150)
@given(st.data())
def test_differential_hypothesis(strict, data):
    profile = data.draw(st.sampled_from(["mixed", "v2"]))
    version = traffic.PROTOCOL_VERSIONS[profile]
    msg, hint = data.draw(st.sampled_from(CORPUS[profile]))
    for _ in range(data.draw(st.integers(1, 3))):
        msg = mutate(msg, random.Random(data.draw(st.integers(0, 2**32))))
    unstable = data.draw(st.booleans())
    expected = reference_valid(msg, version, unstable, hint)
    given = msg if isinstance(msg, (dict, list)) and data.draw(st.booleans()) else acp_fast.dumps(msg)
    problems = strict.validate_schema(given, protocol_version=version, unstable=unstable, method=hint)
    assert _schema_verdict(problems) == expected, (msg, hint, problems)


def _render(location: Tuple[Any, ...]) -> str:
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += ("." if out else "") + part
        else:
            out += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return out


def test_backends_give_the_same_problems(both_backends):
    """The same problems (paths, words, order) from both backends on the mutated corpus."""
    native, fallback = both_backends
    rng = random.Random(3)
    for profile in ("mixed", "v2"):
        version = traffic.PROTOCOL_VERSIONS[profile]
        for msg, hint in CORPUS[profile][:200]:
            mutated = mutate(msg, rng)
            frame = acp_fast.dumps(mutated)
            a = native.validate_schema(frame, protocol_version=version, method=hint)
            b = fallback.validate_schema(frame, protocol_version=version, method=hint)
            assert a == b, mutated


def test_problems_name_the_path_and_what_was_expected(backend):
    frame = B.notification(
        "session/update",
        {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "status": "done"}},
    )
    (problem,) = backend.validate_schema(frame)
    assert problem == acp_fast.SchemaProblem(
        "params.update.status",
        'expected "params.update.status" to be one of "pending", "in_progress", "completed", "failed", '
        'found string "done"',
        "error",
        "schema",
        ("params", "update", "status"),
    )
    assert backend.validate_schema(frame + b"\n") == [problem]
    assert backend.validate_schema(acp_fast.loads(frame)) == [problem]
    assert backend.validate_schema(backend.decode(frame)) == [problem]


def test_envelope_methods_and_responses(backend):
    v = backend.validate_schema
    assert [p.path for p in v(b'{"jsonrpc":"2.0","id":1,"method":"nope"}')] == ["method"]
    assert v(b'{"jsonrpc":"2.0","id":1,"method":"_ext/x","params":[1]}') == []
    assert [p.path for p in v(b'{"jsonrpc":"2.0","method":"session/cancel","id":1,"params":{"sessionId":"s"}}')] == [
        "id"
    ]
    assert [p.path for p in v(b'{"jsonrpc":"2.0","id":1,"method":"session/prompt"}')] == ["params"]
    ok = b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}'
    assert v(ok) == [] and v(ok, method="session/prompt") == []
    assert [p.path for p in v(ok, method="initialize")] == ["result.protocolVersion"]
    assert [p.path for p in v(b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}')] == ["error.code"]
    assert [p.path for p in v(b'{"jsonrpc":"2.0","id":1}')] == [""]
    assert v(b"[]")[0].message == "expected the message to hold at least 1 item (a batch), found 0"
    assert [p.message for p in v(b"[]", protocol_version=2)] == [
        "expected the message to be an object (batches exist in protocol v1 only), found array"
    ]
    with pytest.raises(acp_fast.DecodeError):
        v(b'{"jsonrpc":')
    with pytest.raises(ValueError):
        v(ok, protocol_version=3)


def test_v2_custom_values_must_begin_with_an_underscore(backend):
    def update(**fields: Any) -> bytes:
        body = {"sessionUpdate": "tool_call_update", "toolCallId": "t", "messageId": None, **fields}
        return B.notification("session/update", {"sessionId": "s", "update": body})

    assert backend.validate_schema(update(kind="_mine", status="_queued"), protocol_version=2) == []
    found = backend.validate_schema(update(kind="mine", status="queued"), protocol_version=2)
    assert [(p.path, p.rule, p.severity) for p in found] == [
        ("params.update.kind", "custom-value-prefix", "error"),
        ("params.update.status", "custom-value-prefix", "error"),
    ]
    assert found[0].message.endswith('or a custom value beginning with "_", found string "mine"')
    # v1 has no custom values: the schema itself refuses them
    assert [p.rule for p in backend.validate_schema(update(kind="mine"), protocol_version=1)] == ["schema"]


def test_schema_validator_follows_the_conversation(backend):
    sv = backend.SchemaValidator(protocol_version=1)
    assert (sv.protocol_version, sv.unstable) == (1, False)
    answer = b'{"jsonrpc":"2.0","id":5,"result":{"stopReason":7}}'
    # no request: the result is checked against every result definition (some take any object)
    assert [p.rule for p in sv.validate(answer, sender="agent")] == ["unexpected-response"]
    prompt = B.request(5, "session/prompt", {"sessionId": "s", "prompt": []})
    assert sv.validate(prompt, sender="editor") == []
    # now the answer is checked against PromptResponse
    (problem,) = sv.validate(answer, sender="agent")
    assert problem.path == "result.stopReason" and problem.rule == "schema"
    first = B.notification(
        "session/update", {"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t"}}
    )
    (warning,) = sv.validate(first, sender="agent")
    assert (warning.path, warning.severity, warning.rule) == ("params.update.title", "warning", "tool-call-title")
    assert sv.validate(first, sender="agent") == []


def _prompt(i: int) -> bytes:
    return B.request(i, "session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]})


def _titled(i: int, title: bool = False) -> bytes:
    update: Dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": f"t{i}"}
    if title:
        update["title"] = "T"
    return B.notification("session/update", {"sessionId": "s", "update": update})


def _rules(found: List[Any]) -> List[Tuple[str, str]]:
    return [(p.rule, p.severity) for p in found]


def test_schema_validator_forgets_the_oldest_pending_requests(backend):
    """Past its limit a conversation forgets the oldest pending request ids; a response to one is
    then a warning, never an error, and the kept ones are answered as before."""
    sv = backend.SchemaValidator(protocol_version=1)
    sv._set_limits(3, 10)
    for i in range(10):
        assert sv.validate(_prompt(i), sender="editor") == []
        assert sv._sizes() == (min(i + 1, 3), 0, max(i - 2, 0))
    # kept: answered against the request's result, as below the limit
    assert sv.validate(B.response(9, {"stopReason": "end_turn"}), sender="agent") == []
    (problem,) = sv.validate(b'{"jsonrpc":"2.0","id":8,"result":{"stopReason":1}}', sender="agent")
    assert (problem.path, problem.rule) == ("result.stopReason", "schema")
    # forgotten: may answer one of them, so a warning
    (warning,) = sv.validate(B.response(0, {"stopReason": "end_turn"}), sender="agent")
    assert (warning.path, warning.severity, warning.rule) == ("id", "warning", "unexpected-response")
    assert warning.message == (
        "expected a response to a request that was made, found one for id 0 (no such request pending; "
        "7 older requests were forgotten, it may answer one of them)"
    )
    # still checked against the schema (any result)
    assert ("schema", "error") in _rules(sv.validate(b'{"jsonrpc":"2.0","id":1}', sender="agent"))
    assert sv._sizes() == (1, 0, 7)
    with pytest.raises(ValueError):
        sv._set_limits(0, 1)


def test_schema_validator_below_the_limits_is_unchanged(backend):
    sv = backend.SchemaValidator(protocol_version=1)
    sv._set_limits(4, 3)  # 3 pending throughout, one more in flight
    for i in range(3):
        assert sv.validate(_prompt(i), sender="editor") == []
    (error,) = sv.validate(B.response(7, {"stopReason": "end_turn"}), sender="agent")
    assert (error.severity, error.rule) == ("error", "unexpected-response")
    assert error.message.endswith("(no such request pending)")
    # answered ids make room: thousands of request / answer pairs evict nothing
    for i in range(3, 2003):
        assert sv.validate(_prompt(i), sender="editor") == []
        assert sv.validate(B.response(i, {"stopReason": "end_turn"}), sender="agent") == []
    assert sv._sizes() == (3, 0, 0)
    for i in range(3):
        assert _rules(sv.validate(_titled(i))) == [("tool-call-title", "warning")]
        assert sv.validate(_titled(i)) == []
    assert sv._sizes() == (3, 3, 0)


def test_schema_validator_forgets_the_oldest_tool_calls(backend):
    """A tool call forgotten past the limit and reported again without a title is warned about
    again (the documented consequence); the ones kept are not."""
    sv = backend.SchemaValidator(protocol_version=1)
    sv._set_limits(10, 3)
    for i in range(10):
        assert _rules(sv.validate(_titled(i))) == [("tool-call-title", "warning")]
        assert sv.validate(_titled(i)) == []
        assert sv._sizes() == (0, min(i + 1, 3), 0)
    assert sv.validate(_titled(9)) == []
    assert _rules(sv.validate(_titled(0))) == [("tool-call-title", "warning")]
    assert sv.validate(_titled(1, title=True)) == []
    assert sv._sizes() == (0, 3, 0)


def test_conversation_default_limits(backend):
    """The defaults: 10,000 pending request ids and 100,000 tool call ids; what is past them does
    not make memory grow, and a strict decoder never refuses a response to a forgotten request."""
    sv = backend.SchemaValidator(protocol_version=1)  # v1: batches, to send many at once

    def batches(entry: bytes, n: int) -> Iterator[bytes]:
        for start in range(0, n, 1000):
            yield (
                b"["
                + b",".join(entry.replace(b"#", str(i).encode()) for i in range(start, min(start + 1000, n)))
                + b"]"
            )

    for frame in batches(_prompt(0).strip().replace(b'"id":0', b'"id":#'), 10_001):
        assert sv.validate(frame, sender="editor") == []
    assert sv._sizes() == (10_000, 0, 1)
    for frame in batches(_titled(0, title=True).strip().replace(b'"t0"', b'"t#"'), 100_001):
        assert sv.validate(frame, sender="agent") == []
    assert sv._sizes() == (10_000, 100_000, 1)
    decoder = backend.FrameDecoder(strict_schema=1)
    for i in range(10_001):
        decoder.sent(_prompt(i))
    got = decoder.feed(B.response(0, {"stopReason": "end_turn"}) + B.response(10_000, {"stopReason": "end_turn"}))
    assert [r.kind for r in got] == ["response", "response"]


def test_conversation_limits_backends_agree(both_backends):
    native, fallback = both_backends
    frames = [_prompt(i) for i in range(12)] + [B.response(i, {"stopReason": "end_turn"}) for i in (0, 11, 11, 5)]
    frames += [_titled(i % 7, title=i % 3 == 0) for i in range(30)]
    out = []
    for module in (native, fallback):
        sv = module.SchemaValidator(protocol_version=1)
        sv._set_limits(4, 3)
        out.append([(sv.validate(f, sender="editor" if b'"method"' in f else "agent"), sv._sizes()) for f in frames])
    assert out[0] == out[1]


def test_fallback_without_engines_names_the_extra(monkeypatch):
    from acp_fast._fallback import schema as fallback

    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    fallback.engine_name.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"acp-fast\[schema\]"):
            fallback.validate_schema(b"{}")
    finally:
        fallback.engine_name.cache_clear()


# --------------------------------------------------------------------------------------------
# acp-fast proxy --strict-schema
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend_name", ["rust", "python"])
def test_proxy_strict_schema(tmp_path, backend_name):
    import os
    import subprocess

    if backend_name == "rust":
        from conftest import require_native

        require_native()
    good = B.request(1, "session/prompt", {"sessionId": "s", "prompt": []})
    bad = B.request(2, "session/prompt", {"sessionId": 5, "prompt": []})
    agent_bad = B.notification("session/update", {"sessionId": "s", "update": {"sessionUpdate": "nope"}})
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import sys\n"
        "for line in sys.stdin.buffer:\n"
        "    sys.stdout.buffer.write(line)\n"
        f"    sys.stdout.buffer.write({agent_bad!r})\n"
        "    sys.stdout.buffer.flush()\n"
    )
    env = {**os.environ, "ACP_FAST_BACKEND": backend_name}
    run = [sys.executable, "-m", "acp_fast.cli", "proxy"]
    done = subprocess.run(
        [*run, "--strict-schema", "--", sys.executable, str(agent)],
        input=good + bad,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines(keepends=True)
    # the good request went to the agent (echoed back); the bad one was answered, never forwarded
    assert lines.count(good) == 1 and bad not in lines
    answers = [json.loads(line) for line in lines if b'"error"' in line]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(2, -32602)]
    assert answers[0]["error"]["message"].startswith('expected "params.sessionId" to be string, found number 5')
    # the agent's invalid notification was diverted to stderr, not forwarded
    assert agent_bad not in lines and agent_bad in done.stderr
    lax = subprocess.run(
        [*run, "--", sys.executable, str(agent)], input=good + bad, capture_output=True, env=env, timeout=60
    )
    assert lax.stdout.splitlines(keepends=True) == [good, agent_bad, bad, agent_bad]


# --------------------------------------------------------------------------------------------
# FrameDecoder(strict_schema=...)
# --------------------------------------------------------------------------------------------


def test_frame_decoder_strict_schema(backend):
    prompt_bad = B.request(3, "session/prompt", {"sessionId": 5, "prompt": []})
    stream = (
        B.request(1, "initialize", {"protocolVersion": 2})
        + B.response(1, {"protocolVersion": 2, "agentCapabilities": {}})
        + B.notification(
            "session/update",
            {"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "mine"}},
        )
        + prompt_bad
        + b'{"jsonrpc":"2.0","id":9,"result":{}}\n'
        + b"not json\n"
    )
    plain = backend.FrameDecoder().feed(stream)
    assert [type(r).__name__ for r in plain] == ["Message"] * 5 + ["DecodeError"]
    strict = backend.FrameDecoder(strict_schema=True).feed(stream)
    kinds = [(r.kind, r.code, r.line) if isinstance(r, acp_fast.DecodeError) else r.kind for r in strict]
    assert kinds == [
        "request",
        "response",
        ("schema", -32602, 3),  # v2 (from the initialize answer): custom kinds need "_"
        ("schema", -32602, 4),
        ("schema", -32602, 5),  # nothing asked for id 9
        ("unexpected_character", -32700, 6),
    ]
    assert [p.rule for p in strict[2].problems] == ["custom-value-prefix"]
    assert strict[3].raw == prompt_bad[:-1] and strict[3].problems[0].path == "params.sessionId"
    assert str(strict[3]).startswith('expected "params.sessionId" to be string, found number 5')
    # fixed at v1: the v2 custom kind is a schema error there
    fixed = backend.FrameDecoder(strict_schema=1).feed(stream)
    assert [p.rule for p in fixed[2].problems] == ["schema"]
    with pytest.raises(ValueError):
        backend.FrameDecoder(strict_schema=3)


def test_frame_decoder_strict_schema_sent(backend):
    """A decoder told what was sent reads one direction of a connection: a response read answers
    a request sent (checked against that request's result), never one read."""
    ask = B.request(0, "session/request_permission", _permission_params())
    answer = B.response(0, {"sessionId": "s1"})
    plain = backend.FrameDecoder(strict_schema=1)
    # not told: the answer pairs with the request read, and is not its result
    assert [r.kind for r in plain.feed(ask + answer)] == ["request", "schema"]
    decoder = backend.FrameDecoder(strict_schema=1)
    assert decoder.sent(B.request(0, "session/new", {"cwd": "/", "mcpServers": []})) is None
    got = decoder.feed(ask + answer + answer)
    assert [r.kind for r in got] == ["request", "response", "schema"]
    assert [p.rule for p in got[2].problems] == ["unexpected-response"]
    # what was sent is checked against the version in force: a result sent is the answer
    decoder.sent({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    decoder.sent(b"not json\n")  # nothing to learn
    assert [r.kind for r in decoder.feed(B.response(0, {"sessionId": "s2"}))] == ["schema"]
    # without strict_schema: nothing
    assert backend.FrameDecoder().sent(ask) is None


# --------------------------------------------------------------------------------------------
# ToolCallStore(strict_schema=...)
# --------------------------------------------------------------------------------------------


def _tool_call(tcid: str, **fields: Any) -> Dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": tcid, "title": tcid.upper(), **fields}


def _update(update: Dict[str, Any]) -> bytes:
    return B.notification("session/update", {"sessionId": "s", "update": update})


def _batch(*updates: Dict[str, Any]) -> bytes:
    entries = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}} for u in updates
    ]
    return acp_fast.dumps(entries) + b"\n"


def _outcome(results: List[Any]) -> List[Any]:
    """Changes as tuples, DecodeErrors as (kind, code, line, message, raw, problem paths)."""
    out: List[Any] = []
    for r in results:
        if isinstance(r, acp_fast.DecodeError):
            paths = [p.path for p in getattr(r, "problems", [])]
            out.append((r.kind, r.code, r.line, str(r), r.raw, paths))
        else:
            out.append(r if r is None else tuple(r))
    return out


def test_tool_call_store_strict_schema(backend):
    bad_kind = _update(_tool_call("b", kind="mine"))  # v2: a custom kind must begin with "_"
    stream = (
        B.request(1, "initialize", {"protocolVersion": 2})
        + B.response(1, {"protocolVersion": 2, "agentCapabilities": {}})
        + _update(_tool_call("a", kind="read"))
        + bad_kind
        + _batch(_tool_call("c"), _tool_call("d", status="done"))
        + b'{"jsonrpc":"2.0","id":9,"result":{"protocolVersion":1}}\n'  # nothing asked for id 9
        + b"not json\n"
    )
    plain = backend.ToolCallStore()
    assert [r.kind if isinstance(r, acp_fast.DecodeError) else r.action for r in plain.feed(stream)] == [
        "negotiated",
        "created",
        "created",
        "batch_in_v2",  # line 5: v2 has no batches, for any store
        "negotiated",
        "unexpected_character",
    ]
    store = backend.ToolCallStore(strict_schema=True)
    got = store.feed(stream)
    assert [r.kind if isinstance(r, acp_fast.DecodeError) else r.action for r in got] == [
        "negotiated",
        "created",
        "schema",  # line 4
        "batch_in_v2",  # line 5: v2 has no batches, before any schema check
        "schema",  # line 6
        "unexpected_character",
    ]
    assert [(r.code, r.line) for r in got if isinstance(r, acp_fast.DecodeError)] == [
        (-32602, 4),
        (-32600, 5),
        (-32602, 6),
        (-32700, 7),
    ]
    assert got[2].raw == bad_kind[:-1] and [p.rule for p in got[2].problems] == ["custom-value-prefix"]
    assert str(got[2]).startswith('expected "params.update.kind" to be one of "read"')
    assert str(got[3]) == "expected one message, found a batch (protocol v2 has no batches) at line 5 column 1"
    assert [p.rule for p in got[4].problems] == ["unexpected-response"]
    # refused frames changed nothing: not the tool calls, not the negotiated version
    assert sorted(store.snapshot()["s"]) == ["a"]
    assert store.negotiated_version == 2 and plain.negotiated_version == 1
    assert store.line == 7
    # v1 has batches: each entry judged alone, with its own bytes and its path within the frame
    v1 = backend.ToolCallStore(strict_schema=True)
    got = v1.feed(
        B.request(1, "initialize", {"protocolVersion": 1})
        + B.response(1, {"protocolVersion": 1, "agentCapabilities": {}})
        + _batch(_tool_call("c"), _tool_call("d", status="done"))
    )
    assert [r.kind if isinstance(r, acp_fast.DecodeError) else r.action for r in got] == [
        "negotiated",
        "created",  # line 3, entry 0
        "schema",  # line 3, entry 1
    ]
    assert json.loads(got[2].raw)["params"]["update"]["toolCallId"] == "d" and got[2].line == 3
    assert [p.path for p in got[2].problems] == ["[1].params.update.status"]
    assert sorted(v1.snapshot()["s"]) == ["c"]


def test_tool_call_store_strict_schema_options(backend):
    assert backend.ToolCallStore().strict_schema is False
    for arg, shown in [(None, False), (False, False), (True, True), (1, 1), (2, 2)]:
        assert backend.ToolCallStore(strict_schema=arg).strict_schema is shown
    for arg in (3, 0, "yes", 1.0):
        with pytest.raises(ValueError, match=r"^expected strict_schema to be a bool, 1 or 2, found "):
            backend.ToolCallStore(strict_schema=arg)
    # a checkpoint keeps the option (as max_frame_bytes): the restored store checks alike
    strict = backend.ToolCallStore(strict_schema=2)
    assert backend.ToolCallStore.from_json(strict.to_json()).strict_schema == 2
    # the default store applies what strict ones refuse
    custom = _update(_tool_call("x", kind="mine"))
    assert backend.ToolCallStore(2).apply(custom).action == "created"
    with pytest.raises(acp_fast.DecodeError):
        backend.ToolCallStore(strict_schema=2).apply(custom)
    # 1 or 2 fix the version: an initialize answer does not change it
    v1 = backend.ToolCallStore(1, strict_schema=1)
    v1.apply(B.request(1, "initialize", {"protocolVersion": 2}))
    v1.apply(B.response(1, {"protocolVersion": 2, "agentCapabilities": {}}))
    (change,) = v1.feed(_batch(_tool_call("y")))  # v1 has batches
    assert change.action == "created"
    v2 = backend.ToolCallStore(strict_schema=2)
    (error,) = v2.feed(_batch(_tool_call("z")))
    assert (error.kind, error.line, error.raw) == ("schema", 1, _batch(_tool_call("z"))[:-1])
    assert str(error) == "expected the message to be an object (batches exist in protocol v1 only), found array"
    assert v2.apply(_update(_tool_call("z", kind="read", status="pending"))).action == "created"


def test_tool_call_store_strict_schema_apply(backend):
    store = backend.ToolCallStore(strict_schema=1)  # v1: batches
    bad = _update(_tool_call("b", status="done"))
    # every form of apply refuses a frame that fails, raising as for any bad frame
    for frame in (bad, bad.decode(), json.loads(bad), backend.decode(bad)):
        with pytest.raises(acp_fast.DecodeError) as info:
            store.apply(frame)
        assert (info.value.kind, info.value.code, info.value.line) == ("schema", -32602, None)
        assert info.value.raw == bad[:-1]
        assert [p.path for p in info.value.problems] == ["params.update.status"]
    # a batch: one result per entry, the refused entry's DecodeError returned
    frame = _batch(_tool_call("a"), _tool_call("b", status="done"), _tool_call("c"))
    results = store.apply(frame)
    assert [type(r).__name__ for r in results] == ["Change", "DecodeError", "Change"]
    assert results[1].kind == "schema" and json.loads(results[1].raw)["params"]["update"]["toolCallId"] == "b"
    # a decoded batch: each entry checked alone
    entries = store.apply(backend.decode(_batch(_tool_call("d"), _tool_call("e", kind="mine"))))
    assert [type(r).__name__ for r in entries] == ["Change", "DecodeError"]
    assert [p.path for p in entries[1].problems] == ["params.update.kind"]
    assert sorted(store.snapshot()["s"]) == ["a", "c", "d"]
    # with changes=False, the errors still come
    (quiet,) = store.feed(bad, changes=False)
    assert quiet.kind == "schema" and quiet.line == 1


def test_tool_call_store_strict_schema_source(backend):
    """``source`` names the sender: a response answers a request from the other side."""
    asked = B.request(7, "session/request_permission", _permission_params())
    answer = B.response(7, {"outcome": {"outcome": "selected", "optionId": "ok"}})
    for source, refused in [(None, False), ("client", False), ("agent", True)]:
        store = backend.ToolCallStore(strict_schema=1)
        assert store.apply(asked, source="agent").action == "requested"
        if refused:
            with pytest.raises(acp_fast.DecodeError, match="expected a response to a request that was made"):
                store.apply(answer, source=source)
            assert store.pending_permissions("s") != []
        else:
            assert store.apply(answer, source=source).action == "resolved"
            assert store.pending_permissions("s") == []


def _permission_params() -> Dict[str, Any]:
    return {
        "sessionId": "s",
        "toolCall": {"toolCallId": "t", "title": "T"},
        "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
    }


def _mutated_stream(profile: str, seed: int) -> bytes:
    """The frames of a profile, every third one mutated."""
    rng = random.Random(seed)
    out = []
    for i, frame in enumerate(traffic.frames(profile, 300, seed=seed)):
        if i % 3 == 2:
            frame = acp_fast.dumps(mutate(json.loads(frame), rng)) + b"\n"
        out.append(frame)
    return b"".join(out)


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_tool_call_store_strict_schema_on_mutated_traffic(backend, profile):
    """The store refuses the frames a strict FrameDecoder refuses (those it does not refuse for a
    reason of its own first, such as a batch entry that is not a message), and ends in the state
    of a default store fed only the others."""
    version = traffic.PROTOCOL_VERSIONS[profile]
    stream = _mutated_stream(profile, 17)
    refused = {
        r.line
        for r in backend.FrameDecoder(strict_schema=version).feed(stream)
        if isinstance(r, acp_fast.DecodeError) and r.kind == "schema"
    }
    assert len(refused) > 20
    store = backend.ToolCallStore(strict_schema=version)
    results = store.feed(stream)
    errors = {r.line: r.kind for r in results if isinstance(r, acp_fast.DecodeError)}
    schema = {line for line, kind in errors.items() if kind == "schema"}
    assert schema <= refused and refused <= set(errors) and len(schema) > 20
    lines = stream.splitlines(keepends=True)
    kept = b"".join(line for n, line in enumerate(lines, 1) if n not in refused)
    plain = backend.ToolCallStore()
    plain.feed(kept)
    # the same state; the strict store's checkpoint also names its option
    assert store.state() == {**plain.state(), "strictSchema": version}


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_tool_call_store_strict_schema_backends_agree(both_backends, profile):
    native, fallback = both_backends
    stream = _mutated_stream(profile, 23)
    stores = [b.ToolCallStore(strict_schema=True) for b in (native, fallback)]
    outcomes = [_outcome(s.feed(stream, source="agent")) for s in stores]
    assert outcomes[0] == outcomes[1]
    assert stores[0].state() == stores[1].state()
