"""One nesting limit (docs/DESIGN.md sections 2, 4 and 7.8): whatever the decoder accepts (1024
levels) is written by ``dumps`` / ``encode``, kept by the store, carried by its checkpoint
(``to_json`` / ``from_json``) and by every output of the command-line tools; one level more is
refused, by the decoder and by ``dumps`` alike. Both backends, on a small thread stack too."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, List

import pytest

from acp_fast import DecodeError, EncodeError
from conftest import get_backend
from test_inspect import inspect
from test_proxy import env, proxy, script  # noqa: F401 - `env` is the proxy tests' fixture

LIMIT = 1024
#: A checkpoint nests a record's members 5 levels deep, a frame its `result` 1 (docs/DESIGN.md 7.8).
CHECKPOINT_LIMIT = LIMIT + 4
DEPTHS = [254, 255, 300, LIMIT]
KINDS = ["list", "dict", "mixed"]
KEY = {"dict": "k", "mixed": "é k"}


def _kind_at(kind: str, level: int) -> str:
    """The container at `level` (0: the outermost) of a value of `kind`."""
    return kind if kind != "mixed" else ("list" if level % 2 == 0 else "mixed")


def text(depth: int, kind: str) -> bytes:
    """The compact JSON text of a value nested `depth` levels deep, with 1 in the innermost."""
    opens, closes = [], []
    for level in range(depth):
        if _kind_at(kind, level) == "list":
            opens.append(b"[")
            closes.append(b"]")
        else:
            opens.append(json.dumps(KEY[kind], ensure_ascii=False).encode().join([b"{", b":"]))
            closes.append(b"}")
    return b"".join(opens) + b"1" + b"".join(reversed(closes))


def value(depth: int, kind: str) -> Any:
    """The Python value whose text is ``text(depth, kind)``."""
    v: Any = 1
    for level in reversed(range(depth)):
        v = [v] if _kind_at(kind, level) == "list" else {KEY[kind]: v}
    return v


def path_to(depth: int, kind: str) -> str:
    """The error path of the container `depth` levels deep in ``value(...)`` (``$`` for the
    outermost)."""
    steps = ["$"]
    for level in range(depth - 1):
        steps.append("[0]" if _kind_at(kind, level) == "list" else (".k" if kind == "dict" else '["é k"]'))
    return "".join(steps)


def nesting(data: bytes) -> int:
    """How deep the JSON text `data` nests (its strings hold no brackets)."""
    depth = deepest = 0
    for c in data:
        if c in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in b"]}":
            depth -= 1
    return deepest


def bracket(data: bytes, n: int) -> int:
    """The offset of the first opening bracket of `data` that is `n` levels deep (its strings hold
    no brackets)."""
    depth = 0
    for i, c in enumerate(data):
        if c in b"[{":
            depth += 1
            if depth == n:
                return i
        elif c in b"]}":
            depth -= 1
    raise AssertionError(n)


def frame(depth: int, kind: str) -> bytes:
    """A notification nested `depth` levels deep in all (its params one less)."""
    return b'{"jsonrpc":"2.0","method":"x","params":' + text(depth - 1, kind) + b"}"


def tool_call(depth: int, kind: str) -> bytes:
    """A tool_call update nested `depth` levels deep in all: its rawInput ``depth - 3``."""
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","rawInput":' + text(depth - 3, kind) + b"}}}\n"
    )


def run_on_small_stack(fn: Callable[[], None]) -> None:
    """Run `fn` in a thread with a 256 KiB stack (the recursion limit left as it is)."""
    errors: List[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    old = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=target)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    if errors:
        raise errors[0]


# --------------------------------------------------------------------------------------------
# loads / dumps / decode / encode
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_values_round_trip_up_to_the_limit(backend, depth, kind):
    raw = text(depth, kind)
    assert backend.dumps(value(depth, kind)) == raw
    assert backend.dumps(backend.loads(raw)) == raw
    assert backend.dumps(backend.loads(raw.decode())) == raw


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_frames_round_trip_up_to_the_limit(backend, depth, kind):
    raw = frame(depth, kind)
    m = backend.decode(raw)
    assert bytes(m) == raw and backend.encode(m) == raw + b"\n"
    assert backend.dumps(m.params) == text(depth - 1, kind)
    assert backend.encode(m.to_dict()) == raw + b"\n"
    assert backend.encode({"jsonrpc": "2.0", "method": "x", "params": value(depth - 1, kind)}) == raw + b"\n"
    assert backend.dumps([m]) == b"[" + raw + b"]"  # a Message is written as it is
    [again] = backend.FrameDecoder().feed(backend.encode(m.to_dict()))
    assert bytes(again) == raw


@pytest.mark.parametrize("kind", KINDS)
def test_one_level_more_is_refused_by_the_decoder(backend, kind):
    raw = text(LIMIT + 1, kind)
    with pytest.raises(DecodeError) as info:
        backend.loads(raw)
    e = info.value
    assert (e.kind, e.position) == ("depth_limit", bracket(raw, LIMIT + 1))
    assert e.msg == f"nesting deeper than {LIMIT} levels"
    with pytest.raises(DecodeError) as info:
        backend.decode(frame(LIMIT + 1, kind))
    assert (info.value.code, info.value.kind) == (-32700, "depth_limit")


@pytest.mark.parametrize("kind", KINDS)
def test_one_level_more_is_refused_by_dumps_and_encode(backend, kind):
    for write in (backend.dumps, backend.encode):
        with pytest.raises(EncodeError) as info:
            write(value(LIMIT + 1, kind))
        e = info.value
        assert (e.kind, e.msg) == ("depth_limit", f"nesting deeper than {LIMIT} levels")
        assert e.path == path_to(LIMIT + 1, kind)
    with pytest.raises(EncodeError) as info:
        backend.encode({"jsonrpc": "2.0", "method": "x", "params": value(LIMIT, kind)})
    assert info.value.kind == "depth_limit"
    assert info.value.path == "$.params" + path_to(LIMIT, kind)[1:]


def test_the_walk_writes_what_orjson_refuses_at_any_depth(backend):
    # Beyond orjson's 254 levels the fallback writes with its own walk: the same bytes and the same
    # errors as the native writer, whatever the leaves.
    class Sub(list):
        pass

    leaf = [2**70, Sub([1.5, "é"]), (None, True), {"a": -0.0}]
    v: Any = leaf
    for _ in range(LIMIT - 3):  # with the leaf and Sub: 1 level less than the limit
        v = [v]
    written = b'[1180591620717411303424,[1.5,"\xc3\xa9"],[null,true],{"a":-0.0}]'
    assert backend.dumps(v) == b"[" * (LIMIT - 3) + written + b"]" * (LIMIT - 3)
    assert backend.dumps([v]) == b"[" * (LIMIT - 2) + written + b"]" * (LIMIT - 2)
    for bad, kind in ((float("nan"), "non_finite_float"), ({1: 2}, "non_str_key"), ("\ud800", "invalid_str")):
        with pytest.raises(EncodeError) as info:
            backend.dumps([v, [[bad]]])
        assert (info.value.kind, info.value.path) == (kind, "$[1][0][0]")


def test_cycles_stop_at_the_limit(backend):
    loop: List[Any] = []
    loop.append(loop)
    with pytest.raises(EncodeError) as info:
        backend.dumps({"a": loop})
    assert (info.value.kind, info.value.path) == ("depth_limit", "$.a" + "[0]" * (LIMIT - 1))


# --------------------------------------------------------------------------------------------
# the store and its checkpoint
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_store_and_checkpoint_carry_a_frame_at_any_depth(backend, depth, kind):
    raw_input = text(depth - 3, kind)
    store = backend.ToolCallStore()
    [change] = store.feed(tool_call(depth, kind))
    assert (change.target, change.action) == ("tool_call", "created")
    assert backend.dumps(store.get("s", "c")["rawInput"]) == raw_input
    state = store.state()
    assert backend.dumps(state["sessions"]["s"]["toolCalls"]["c"]["rawInput"]) == raw_input
    doc = store.to_json()
    assert nesting(doc) == depth + 2
    assert b',"rawInput":' + raw_input + b"}}," in doc
    if depth + 2 <= LIMIT:
        assert backend.dumps(state) == doc
    else:  # the checkpoint nests the record 2 levels deeper than the frame did: beyond dumps' limit
        with pytest.raises(EncodeError):
            backend.dumps(state)
    again = backend.ToolCallStore.from_json(doc)
    assert again.to_json() == doc
    assert backend.ToolCallStore.from_json(doc.decode()).to_json() == doc
    assert backend.dumps(again.get("s", "c")["rawInput"]) == raw_input
    assert backend.dumps(again.snapshot()["s"]["c"]["rawInput"]) == raw_input


def test_store_refuses_one_level_more(backend):
    store = backend.ToolCallStore()
    [err] = store.feed(tool_call(LIMIT + 1, "mixed"))
    assert isinstance(err, DecodeError) and err.kind == "depth_limit"
    assert store.snapshot() == {}
    assert backend.ToolCallStore.from_json(store.to_json()).to_json() == store.to_json()


def _deepest_checkpoint(backend) -> bytes:
    """The checkpoint of a permission request whose response's `result` holds a frame at the limit:
    the deepest a frame can make a checkpoint."""
    store = backend.ToolCallStore()
    store.feed(
        b'{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s",'
        b'"toolCall":{"toolCallId":"c"},"options":[{"optionId":"a","name":"A","kind":"allow_once"}]}}\n',
        source="agent",
    )
    response = b'{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"a"},"x":'
    [change] = store.feed(response + text(LIMIT - 2, "list") + b"}}\n", source="client")
    assert change.action == "resolved"
    return store.to_json()


def test_checkpoint_limit_is_the_frame_limit_and_its_own_levels(backend):
    doc = _deepest_checkpoint(backend)
    assert nesting(doc) == CHECKPOINT_LIMIT
    again = backend.ToolCallStore.from_json(doc)
    assert again.to_json() == doc
    assert backend.dumps(again.permissions("s")[0]["response"]["x"]) == text(LIMIT - 2, "list")
    deeper = doc.replace(text(LIMIT - 2, "list"), text(LIMIT - 1, "list"))
    with pytest.raises(DecodeError) as info:
        backend.ToolCallStore.from_json(deeper)
    assert (info.value.kind, info.value.msg) == ("depth_limit", f"nesting deeper than {CHECKPOINT_LIMIT} levels")
    assert info.value.position == bracket(deeper, CHECKPOINT_LIMIT + 1)


# --------------------------------------------------------------------------------------------
# a small thread stack, the recursion limit as it is
# --------------------------------------------------------------------------------------------


def test_the_limit_on_a_small_thread_stack(backend):
    assert sys.getrecursionlimit() < LIMIT  # the walks do not recurse in Python

    def work() -> None:
        for kind in KINDS:
            raw = text(LIMIT, kind)
            assert backend.dumps(value(LIMIT, kind)) == raw
            assert backend.dumps(backend.loads(raw)) == raw
            with pytest.raises(EncodeError):
                backend.dumps(value(LIMIT + 1, kind))
            store = backend.ToolCallStore()
            store.feed(tool_call(LIMIT, kind))
            doc = store.to_json()
            assert backend.ToolCallStore.from_json(doc).to_json() == doc
        doc = _deepest_checkpoint(backend)
        assert backend.ToolCallStore.from_json(doc).to_json() == doc

    run_on_small_stack(work)


# --------------------------------------------------------------------------------------------
# the command-line tools
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw_input_depth", [300, LIMIT - 3, LIMIT])
def test_proxy_and_inspect_outputs_carry_deep_frames(tmp_path: Path, env, raw_input_depth):  # noqa: F811
    """A rawInput 300 deep, one that makes its frame as deep as a frame may be (1024 levels), and a
    1024-deep one (its frame is refused and not kept; the outputs are written all the same)."""
    backend = get_backend(env["ACP_FAST_BACKEND"])
    sent = tool_call(raw_input_depth + 3, "mixed")
    agent = script(tmp_path, "deep", f"out({sent!r})\n")
    state_json, summary_json, rec = tmp_path / "state.json", tmp_path / "summary.json", tmp_path / "rec.ndjson"
    done = proxy(
        env, "--state-json", str(state_json), "--summary-json", str(summary_json), "--record", str(rec), agent=agent
    )
    assert done.returncode == 0, done.stderr
    kept = raw_input_depth + 3 <= LIMIT
    assert done.stdout == (sent if kept else b"")  # an agent's line that is not JSON goes to stderr
    store = backend.ToolCallStore(max_tool_calls=None, max_sessions=None)  # as inspect's
    store.feed(sent)
    checkpoint = store.to_json()
    assert (b'"rawInput":' in checkpoint) == kept
    written = state_json.read_bytes()  # the proxy's store has a bound (maxToolCalls): the sessions are the same
    assert written.split(b',"sessions":')[1] == checkpoint.split(b',"sessions":')[1]
    assert backend.ToolCallStore.from_json(written).to_json() == written
    summary = json.loads(summary_json.read_bytes())
    assert (summary["tool_calls"], summary["status"]) == (int(kept), 0)

    backend_id = env["ACP_FAST_BACKEND"]
    for source, stdin in (("-", sent), (str(rec), None)):
        report = inspect(source, "--json", backend_id=backend_id, stdin=stdin)
        assert report.returncode == 0, report.stderr
        head, state = report.stdout.split(b',"state":')
        assert state == checkpoint + b"}\n"
        head = json.loads(head + b"}")
        assert (head["summary"]["toolCalls"], head["summary"]["errors"]) == (int(kept), int(not kept))
        text_report = inspect(source, backend_id=backend_id, stdin=stdin)
        assert text_report.returncode == 0 and (b"1 tool call" in text_report.stdout) == kept
        checked = _validate(env, source, stdin)
        assert checked.returncode == int(not kept), checked.stderr
        assert json.loads(checked.stdout)["problemCount"] == int(not kept)


def _validate(env, source: str, stdin) -> subprocess.CompletedProcess:  # noqa: F811
    return subprocess.run(
        [sys.executable, "-m", "acp_fast.cli", "validate", "--format", "json", source],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )
