"""The bound on terminals per session (issue 16, item 3: bounded memory for everything a long
session grows): ``max_terminals``, the oldest exited terminals dropped first, else the oldest,
counted in the session's ``droppedTerminals``; in the store, ``state()``, the checkpoint and
``acp-fast proxy --max-terminals`` (tests/test_state_limits.py, tests/test_cli_usage.py). Both
backends."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from state_helpers import empty_state, terminal_frame
from state_model import assert_record, change_of, session_update


def out_chunk(sid: str, tid: str, data: bytes = b"x") -> bytes:
    return session_update(
        sid, {"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": base64.b64encode(data).decode()}
    )


def exited(sid: str, tid: str, code: int = 0) -> bytes:
    return terminal_frame(sid, tid, exitStatus={"exitCode": code})


def ids(store, sid="s1"):
    return list(store.terminals(sid))


def dropped(store, sid="s1"):
    return store.state()["sessions"][sid].get("_truncated", {}).get("droppedTerminals", 0)


def test_the_default_keeps_1000_terminals_per_session(backend):
    s = backend.ToolCallStore()
    assert s.max_terminals == 1000
    for i in range(1003):
        assert change_of(backend, s.apply(out_chunk("s1", f"t{i}")))[3] == "created"
    s.apply(out_chunk("s2", "t0"))
    assert ids(s) == [f"t{i}" for i in range(3, 1003)]
    assert s.terminal("s1", "t2") is None and s.terminal("s1", "t3") is not None
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedTerminals": 3}
    # per session: another session's terminals are not counted
    assert ids(s, "s2") == ["t0"] and "_truncated" not in s.state()["sessions"]["s2"]
    assert b'"_truncated":{"droppedTerminals":3}' in s.to_json()


def test_exited_terminals_are_dropped_first(backend):
    s = backend.ToolCallStore(max_terminals=3)
    steps = [
        (terminal_frame("s1", "a"), ["a"]),
        (exited("s1", "b"), ["a", "b"]),
        (out_chunk("s1", "c"), ["a", "b", "c"]),
        # b has exited: dropped before the older a
        (terminal_frame("s1", "d"), ["a", "c", "d"]),
        # a new b, running: nothing has exited, the oldest goes
        (terminal_frame("s1", "b", exitStatus=None), ["c", "d", "b"]),
        # a new terminal that has exited is never the one dropped
        (exited("s1", "e", 1), ["d", "b", "e"]),
        (out_chunk("s1", "f"), ["d", "b", "f"]),
        # an exit status set on a retained terminal queues it
        (exited("s1", "d", 2), ["d", "b", "f"]),
        (out_chunk("s1", "g"), ["b", "f", "g"]),
        (out_chunk("s1", "h"), ["f", "g", "h"]),
    ]
    for i, (frame, expected) in enumerate(steps):
        s.apply(frame)
        assert ids(s) == expected, i
    assert dropped(s) == 6
    # frames on retained terminals drop nothing
    s.apply(out_chunk("s1", "f"))
    s.apply(exited("s1", "g"))
    assert (ids(s), dropped(s)) == (["f", "g", "h"], 6)


def test_an_exit_status_unset_is_no_longer_exited(backend):
    s = backend.ToolCallStore(max_terminals=2)
    s.apply(out_chunk("s1", "a"))
    s.apply(exited("s1", "b"))
    s.apply(terminal_frame("s1", "b", exitStatus=None))  # running again
    s.apply(out_chunk("s1", "c"))
    assert ids(s) == ["b", "c"]
    s.apply(exited("s1", "b"))  # exits again: queued again
    s.apply(terminal_frame("s1", "c", exitStatus={"exitCode": 0}))
    s.apply(terminal_frame("s1", "c", exitStatus=None))
    s.apply(out_chunk("s1", "d"))
    assert ids(s) == ["c", "d"]
    s.apply(out_chunk("s1", "e"))
    assert (ids(s), dropped(s)) == (["d", "e"], 3)


def test_no_bound_keeps_every_terminal(backend):
    s = backend.ToolCallStore(max_terminals=None)
    assert s.max_terminals is None
    for i in range(1500):
        s.apply(exited("s1", f"t{i}"))
    assert len(ids(s)) == 1500 and dropped(s) == 0
    assert b'"maxTerminals":null,' in s.to_json()


def test_long_churn_stays_bounded(backend):
    # terminals created and exited in and out of creation order, a few never exiting
    s = backend.ToolCallStore(max_terminals=10)
    for i in range(5000):
        s.apply(out_chunk("s1", f"t{i}"))
        if i % 7 == 3:
            s.apply(exited("s1", f"t{i - 2}"))
    kept = ids(s)
    assert len(kept) == 10 and dropped(s) == 4990 and kept[-1] == "t4999"
    if backend.__name__ == "acp_fast._fallback":
        # the fallback's heap of exited terminals holds at most one entry per terminal retained
        assert len(s._sessions["s1"].exited) <= 10


def test_argument(backend):
    for bad in (0, -1, True, "2", 2.0, 2**63):
        with pytest.raises(ValueError) as info:
            backend.ToolCallStore(max_terminals=bad)
        assert str(info.value) == f"expected max_terminals to be a positive integer or None, found {bad!r}"
    assert backend.ToolCallStore(max_terminals=1).max_terminals == 1


# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------


def _session(**extra):
    return {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": [], **extra}


def test_checkpoint_keeps_the_bound_and_the_marker(backend):
    s = backend.ToolCallStore(max_terminals=2)
    for tid in ("a", "b", "c"):
        s.apply(out_chunk("s1", tid))
    doc = s.to_json()
    assert doc.startswith(
        b'{"format":"acp-fast-state/2","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":1000,'
        b'"maxTerminals":2,"evicted":0,'
    )
    assert doc.endswith(b'"permissions":[],"_truncated":{"droppedTerminals":1}}},"permissionOrder":[]}')
    restored = backend.ToolCallStore.from_json(doc)
    assert restored.max_terminals == 2 and restored.to_json() == doc
    assert_record(restored.state(), s.state())
    # the default is not written; a checkpoint without it reads with the default
    assert b"maxTerminals" not in backend.ToolCallStore().to_json()
    assert backend.ToolCallStore.from_json(backend.ToolCallStore().to_json()).max_terminals == 1000


def test_a_restored_store_drops_what_the_original_drops(backend):
    frames = [exited("s1", "a"), out_chunk("s1", "b"), exited("s1", "c"), terminal_frame("s1", "d")]
    s = backend.ToolCallStore(max_terminals=4)
    for f in frames:
        s.apply(f)
    s.apply(terminal_frame("s1", "c", exitStatus=None))
    restored = backend.ToolCallStore.from_json(s.to_json())
    for store in (s, restored):
        for tid in ("e", "f", "g"):
            store.apply(out_chunk("s1", tid))
    # a (exited) went first, then c is no longer exited: the oldest, b and c
    assert ids(s) == ids(restored) == ["d", "e", "f", "g"]
    assert s.to_json() == restored.to_json()


def test_a_checkpoint_beyond_its_bound_is_restored_as_it_is(backend):
    terminals = {t: {"terminalId": t, "output": ""} for t in ("a", "b", "c")}
    doc = {**empty_state(sessions={"s1": _session(terminals=terminals)}), "maxTerminals": 1}
    s = backend.ToolCallStore.from_json(json.dumps(doc))
    assert ids(s) == ["a", "b", "c"]
    s.apply(out_chunk("s1", "d"))
    assert (ids(s), dropped(s)) == (["d"], 3)


BAD = [
    ({"maxTerminals": 0}, 'expected "state.maxTerminals" to be a positive integer or null, found number'),
    ({"maxTerminals": -1}, 'expected "state.maxTerminals" to be a positive integer or null, found number'),
    ({"maxTerminals": 2**63}, 'expected "state.maxTerminals" to be a positive integer or null, found number'),
    ({"maxTerminals": "5"}, 'expected "state.maxTerminals" to be a positive integer or null, found string'),
    ({"maxTerminals": True}, 'expected "state.maxTerminals" to be a positive integer or null, found boolean'),
    (
        {"maxTerminals": None, "_truncated": {"droppedTerminals": 1}},
        'expected "state.sessions.s1._truncated.droppedTerminals" to be absent (state.maxTerminals is null), found number',
    ),
    (
        {"_truncated": {"droppedTerminals": 0}},
        'expected "state.sessions.s1._truncated.droppedTerminals" to be a positive integer, found number',
    ),
    (
        {"_truncated": {"droppedTerminals": 1.5}},
        'expected "state.sessions.s1._truncated.droppedTerminals" to be a positive integer, found number',
    ),
]


@pytest.mark.parametrize(("changes", "message"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_from_json_checks_the_bound_and_the_marker(backend, changes, message):
    changes = dict(changes)
    marker = changes.pop("_truncated", None)
    session = _session() if marker is None else _session(_truncated=marker)
    doc = {**empty_state(sessions={"s1": session}), **changes}
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert type(info.value) is ValueError
    assert str(info.value) == message


# ------------------------------------------------------------------------------------------
# both backends alike, on random terminal traffic
# ------------------------------------------------------------------------------------------

TIDS = st.sampled_from(["a", "b", "c", "d", "e"])
FRAMES = st.one_of(
    st.builds(out_chunk, st.sampled_from(["s1", "s2"]), TIDS),
    st.builds(lambda s, t, c: exited(s, t, c), st.sampled_from(["s1", "s2"]), TIDS, st.integers(0, 2)),
    st.builds(lambda s, t: terminal_frame(s, t, exitStatus=None), st.sampled_from(["s1", "s2"]), TIDS),
)


@given(bound=st.sampled_from([1, 2, 3, None]), frames=st.lists(FRAMES, max_size=40), cut=st.integers(0, 40))
def test_both_backends_and_a_restored_store_agree(both_backends, bound, frames, cut):
    stores = [b.ToolCallStore(max_terminals=bound) for b in both_backends]
    for i, f in enumerate(frames):
        if i == cut:
            # a checkpoint in the middle: the restored stores go on exactly as the originals
            stores = [b.ToolCallStore.from_json(s.to_json()) for b, s in zip(both_backends, stores)]
        note(f"frame {i}: {f!r}")
        got = [tuple(s.apply(f)) for s in stores]
        assert got[0] == got[1]
        assert stores[0].to_json() == stores[1].to_json()
