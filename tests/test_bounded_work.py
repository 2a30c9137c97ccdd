"""Work per frame bounded (issue 28, item 3), on both backends.

* ``strict_schema`` (so ``proxy --strict-schema``) stops the check of a message at its
  ``MAX_PROBLEMS + 1``th error: a frame with 200,000 bad items gives the same first problems as
  a small frame with the same leading items, then the ``problem-limit`` marker, and its message
  says ``(and at least N more)`` (docs/API.md "Schema validation").
* ``--answer-cancelled-permissions`` runs one timer thread, however many ``session/cancel``
  arrive, and answers every cancelled permission request once.
* Every late answer from the editor after the proxy's ``cancelled`` is dropped, not only the first
  (the middleware moves the relay to the Python loop, whichever backend: docs/PROXY.md
  "Performance").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import acp_fast
from acp_fast import DecodeError, recording
from acp_fast import builders as B
from acp_fast.proxy.cancel import CancelledPermissions

MAX_PROBLEMS = 100  # rust/schema/mod.rs MAX_PROBLEMS, _fallback/schema/__init__.py


def bad_items(n: int) -> bytes:
    """A tool call whose content holds ``n`` items of an unknown type (each one problem)."""
    items = b",".join(b'{"type":"bogus%d"}' % i for i in range(n))
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[' + items + b"]}}}"
    )


def refusal(backend, frame: bytes) -> Any:
    (error,) = backend.FrameDecoder(strict_schema=1).feed(frame + b"\n")
    assert isinstance(error, DecodeError) and error.kind == "schema"
    return error


def item_problem(i: int) -> str:
    return (
        f'expected "params.update.content[{i}].type" to be one of "content", "diff", "terminal", "session", '
        f'found string "bogus{i}"'
    )


# -- strict schema ---------------------------------------------------------------------------


def test_a_huge_bad_frame_gives_the_first_problems_and_stops(backend):
    small = refusal(backend, bad_items(MAX_PROBLEMS))
    assert [p.message for p in small.problems] == [item_problem(i) for i in range(MAX_PROBLEMS)]
    assert str(small).startswith(item_problem(0) + f" (and {MAX_PROBLEMS - 1} more)")  # all counted: exact

    huge = refusal(backend, bad_items(200_000))
    assert huge.problems[:MAX_PROBLEMS] == small.problems  # the same first problems, in order
    (marker,) = huge.problems[MAX_PROBLEMS:]  # then the marker, nothing after it
    assert (marker.path, marker.rule, marker.severity) == ("", "problem-limit", "error")
    assert marker.message == f"stopped checking the message after {MAX_PROBLEMS} problems"
    assert str(huge).startswith(item_problem(0) + f" (and at least {MAX_PROBLEMS} more)")


def test_one_error_past_the_limit_stops_and_exactly_the_limit_does_not(backend):
    over = refusal(backend, bad_items(MAX_PROBLEMS + 1))
    assert [p.rule for p in over.problems][-2:] == ["schema", "problem-limit"]
    assert len(over.problems) == MAX_PROBLEMS + 1
    exact = refusal(backend, bad_items(MAX_PROBLEMS))
    assert "problem-limit" not in [p.rule for p in exact.problems]


def test_the_limit_is_per_entry_of_a_batch(backend):
    # each entry of a v1 batch is judged on its own: a huge bad entry stops at the limit, the
    # next entry is still checked (and refused by itself), a valid entry still passes
    good = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'
    batch = b"[" + bad_items(5_000) + b"," + good + b"," + bad_items(3) + b"]"
    store = backend.ToolCallStore(strict_schema=1)
    results = store.feed(batch + b"\n", source="agent")
    refused = [r for r in results if isinstance(r, DecodeError) and r.kind == "schema"]
    assert len(refused) == 2
    assert [p.rule for p in refused[0].problems][-1] == "problem-limit"
    assert refused[0].problems[-1].message == f'stopped checking "[0]" after {MAX_PROBLEMS} problems'
    assert [p.path for p in refused[1].problems] == [f"[2].params.update.content[{i}].type" for i in range(3)]


def test_validate_schema_still_lists_every_problem(backend):
    assert len(backend.validate_schema(bad_items(300))) == 300


# -- one timer for every cancel ----------------------------------------------------------------


class FakeContext:
    """What CancelledPermissions uses of the proxy's Context."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.lock = threading.RLock()
        self.injected: List[bytes] = []
        self.reasons: List[str] = []
        self.notes: List[str] = []

    def inject(self, frame: bytes, *, to: str) -> None:
        assert to == "agent"
        with self.lock:
            self.injected.append(frame)
            self.store.apply(frame, source="client")  # the proxy tracks what it injects

    def reason(self, text: str) -> None:
        self.reasons.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)


OPTIONS = [B.permission_option("ok", "Allow", "allow_once")]
SESSIONS, PER_SESSION = 100, 100


def test_ten_thousand_cancels_use_one_timer_and_answer_every_request(backend):
    store = backend.ToolCallStore()
    ctx = FakeContext(store)
    middleware = CancelledPermissions(0.05)
    for s in range(SESSIONS):
        for r in range(PER_SESSION):
            rid = s * PER_SESSION + r
            frame = B.request_permission(rid, f"s{s}", f"c{rid}", OPTIONS)
            store.apply(frame, source="agent")
            assert middleware(backend.decode(frame), "agent", ctx) is not None
    threads = threading.active_count()
    peak = threads
    for _ in range(PER_SESSION):  # 10,000 cancels, each naming every pending request of its session
        for s in range(SESSIONS):
            cancel = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s%d"}}' % s
            with ctx.lock:
                assert middleware(backend.decode(cancel), "editor", ctx) is not None
        peak = max(peak, threading.active_count())
    deadline = time.monotonic() + 30
    while len(ctx.injected) < SESSIONS * PER_SESSION and time.monotonic() < deadline:
        time.sleep(0.02)
        peak = max(peak, threading.active_count())
    time.sleep(0.2)  # nothing more comes
    assert peak <= threads + 1  # one timer thread, not one per cancel
    answered = sorted(json.loads(f)["id"] for f in ctx.injected)
    assert answered == list(range(SESSIONS * PER_SESSION))  # every request, once
    assert all(json.loads(f)["result"]["outcome"] == {"outcome": "cancelled"} for f in ctx.injected)
    assert middleware.answered == SESSIONS * PER_SESSION
    assert all(store.pending_permissions(f"s{s}") == [] for s in range(SESSIONS))
    assert len(ctx.notes) == SESSIONS  # one per session: its requests were due together
    # late answers from the editor: every one dropped, however many
    for rid in (0, 0, 0, 9_999, 9_999):
        assert middleware(backend.decode(B.permission_response(rid, "ok")), "editor", ctx) is None
    middleware.cancel()


CANCEL = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'


def one_permission_asked(backend: Any, seconds: float) -> Tuple[Any, CancelledPermissions]:
    """A store and a ``CancelledPermissions(seconds)`` that saw the agent ask permission 1 in session s."""
    store = backend.ToolCallStore()
    ctx = FakeContext(store)
    middleware = CancelledPermissions(seconds)
    frame = B.request_permission(1, "s", "c1", OPTIONS)
    store.apply(frame, source="agent")
    middleware(backend.decode(frame), "agent", ctx)
    return ctx, middleware


def test_a_request_owed_by_several_cancels_is_answered_at_the_first_deadline_only(backend):
    ctx, middleware = one_permission_asked(backend, 0.2)
    started = time.monotonic()
    for _ in range(3):
        middleware(backend.decode(CANCEL), "editor", ctx)
        time.sleep(0.05)
    while not ctx.injected and time.monotonic() - started < 10:
        time.sleep(0.01)
    time.sleep(0.4)  # past the later cancels' deadlines: nothing more
    assert [json.loads(f)["id"] for f in ctx.injected] == [1]


def test_cancel_stops_the_timer(backend):
    ctx, middleware = one_permission_asked(backend, 0.1)
    middleware(backend.decode(CANCEL), "editor", ctx)
    middleware.cancel()
    time.sleep(0.3)
    assert ctx.injected == []


# -- every late answer dropped, through the proxy --------------------------------------------

PY = sys.executable
GRACE = 0.3
CANCEL = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}\n'


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def test_every_late_answer_after_the_proxys_is_dropped(tmp_path: Path, env: Dict[str, str]) -> None:
    path = tmp_path / "agent.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import os, sys
            os.write(1, {B.request_permission(7, "s", "c7", OPTIONS)!r})
            os.write(1, b'{{"jsonrpc":"2.0","method":"x/ready"}}\\n')
            log = open({str(tmp_path / "got.ndjson")!r}, "wb", buffering=0)
            for line in sys.stdin.buffer:
                log.write(line)
            """
        )
    )
    rec = tmp_path / "rec.ndjson"
    p = subprocess.Popen(
        [PY, "-m", "acp_fast.cli", "proxy", f"--answer-cancelled-permissions={GRACE}", "--record", str(rec)]
        + ["--", PY, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    while b"x/ready" not in p.stdout.readline():
        pass
    p.stdin.write(CANCEL)
    p.stdin.flush()
    time.sleep(GRACE * 3)  # the proxy answers 7
    late = [B.permission_response(7, cancelled=True), B.permission_response(7, "ok")] * 2
    late.append(b'{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"late"}}\n')
    for frame in late:
        p.stdin.write(frame)
        p.stdin.flush()
    p.stdin.write(b'{"jsonrpc":"2.0","method":"x/done"}\n')
    p.stdin.close()
    p.stdout.read()
    err = p.stderr.read()
    assert p.wait(timeout=30) == 0, err
    got = [json.loads(line) for line in (tmp_path / "got.ndjson").read_bytes().splitlines()]
    # the agent got the cancel, the proxy's one answer, and nothing of the editor's five late answers
    assert [m.get("method") for m in got] == ["session/cancel", None, "x/done"]
    assert got[1] == {"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}}
    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    dropped = [r for r in records if r.action == "dropped"]
    assert [json.loads(r.data)["id"] for r in dropped] == [7] * 5
    assert {r.reason for r in dropped} == {"the proxy already answered this permission request with 'cancelled'"}


def test_a_request_right_behind_initialize_is_checked_by_the_version_asked(backend: Any) -> None:
    """An editor that sends ``session/new`` (v2: no ``mcpServers``) before the ``initialize``
    answer arrives is checked by the version its ``initialize`` asked for, as ``validate`` does;
    the other side, and the same editor once the answer says v1, by the version in force."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 2, "clientCapabilities": {}},
    }
    new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp"}}
    data = b"".join(acp_fast.dumps(m) + b"\n" for m in (init, new))
    assert [type(x).__name__ for x in backend.FrameDecoder(strict_schema=True).feed(data)] == ["Message", "Message"]
    v1 = {**init, "params": {"protocolVersion": 1, "clientCapabilities": {}}}
    data = b"".join(acp_fast.dumps(m) + b"\n" for m in (v1, new))
    out = backend.FrameDecoder(strict_schema=True).feed(data)
    assert isinstance(out[1], acp_fast.DecodeError) and "mcpServers" in str(out[1])
