"""``acp-fast proxy --answer-cancelled-permissions[=SECONDS]`` (docs/PROXY.md, "Cancellation"):
after the editor's ``session/cancel``, the pending permission requests of that session are answered
``cancelled`` by the proxy when the editor has not within the grace period, never twice. The
races, with real processes on both backends: the editor answers first, the proxy answers first
(the editor's late answer is dropped), the agent withdrew the request first ($/cancel_request)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from acp_fast import builders as B
from acp_fast import recording

PY = sys.executable
PROXY = [PY, "-m", "acp_fast.cli", "proxy"]
GRACE = 0.4


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def agent(tmp_path: Path, withdraw: bool = False) -> List[str]:
    """Asks permission twice (ids 7 and 8) in session s and once in session t (id 9), then logs
    every line it receives; with ``withdraw`` it answers the editor's session/cancel with
    ``$/cancel_request`` for request 7."""
    path = tmp_path / "agent.py"
    options = [B.permission_option("ok", "Allow", "allow_once")] if hasattr(B, "permission_option") else None
    path.write_text(
        textwrap.dedent(
            f"""
            import json, os, sys
            options = {options or [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]!r}
            def out(m):
                os.write(1, json.dumps(m).encode() + b"\\n")
            for rid, sid in ((7, "s"), (8, "s"), (9, "t")):
                out({{"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                     "params": {{"sessionId": sid, "toolCall": {{"toolCallId": "c%d" % rid}}, "options": options}}}})
            out({{"jsonrpc": "2.0", "method": "x/ready"}})
            log = open({str(tmp_path / "got.ndjson")!r}, "wb", buffering=0)
            for line in sys.stdin.buffer:
                log.write(line)
                if {withdraw!r} and json.loads(line).get("method") == "session/cancel":
                    out({{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {{"requestId": 7}}}})
            """
        )
    )
    return [PY, str(path)]


def session(tmp_path: Path, env, steps: List[Any], withdraw: bool = False, grace: float = GRACE):
    """Run the proxy; the editor waits for the agent's requests, then does ``steps`` (bytes to
    send, or seconds to wait); returns (what the agent received, the recording's records, the
    proxy's stderr)."""
    rec = tmp_path / "rec.ndjson"
    p = subprocess.Popen(
        [*PROXY, f"--answer-cancelled-permissions={grace}", "--record", str(rec), "--", *agent(tmp_path, withdraw)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    while b"x/ready" not in p.stdout.readline():
        pass
    for step in steps:
        if isinstance(step, bytes):
            p.stdin.write(step)
            p.stdin.flush()
        else:
            time.sleep(step)
    p.stdin.close()
    p.stdout.read()
    err = p.stderr.read()
    assert p.wait(timeout=30) == 0, err
    got = [json.loads(line) for line in (tmp_path / "got.ndjson").read_bytes().splitlines()]
    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    return got, records, err


CANCEL = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}\n'


def answers(got: List[Dict[str, Any]]) -> List[Any]:
    return [(m["id"], m["result"]["outcome"]["outcome"]) for m in got if "result" in m]


def test_the_editor_answers_first(tmp_path, env):
    steps = [CANCEL, B.permission_response(7, cancelled=True), B.permission_response(8, "ok"), GRACE * 2.5]
    got, records, _ = session(tmp_path, env, steps)
    assert answers(got) == [(7, "cancelled"), (8, "selected")]  # the editor's, nothing from the proxy
    assert not any(r.action == "injected" for r in records)


def test_the_proxy_answers_first_and_never_twice(tmp_path, env):
    steps = [CANCEL, B.permission_response(8, cancelled=True), GRACE * 2.5]
    steps += [CANCEL, GRACE * 2.5, B.permission_response(7, cancelled=True), 0.2]  # a second cancel, a late answer
    got, records, err = session(tmp_path, env, steps)
    # 8 by the editor, 7 by the proxy once; the editor's late answer to 7 is dropped; session t untouched
    assert answers(got) == [(8, "cancelled"), (7, "cancelled")]
    assert [m.get("method") for m in got].count("session/cancel") == 2
    injected = [json.loads(r.data) for r in records if r.action == "injected"]
    assert injected == [json.loads(B.permission_response(7, cancelled=True))]
    assert all(r.side == "editor" for r in records if r.action == "injected")
    dropped = [r for r in records if r.action == "dropped"]
    assert len(dropped) == 1 and json.loads(dropped[0].data)["id"] == 7
    assert dropped[0].reason == "the proxy already answered this permission request with 'cancelled'"
    assert b"answered 1 permission request of session s with 'cancelled'" in err


def test_the_agent_withdrew_the_request_first(tmp_path, env):
    got, records, _ = session(tmp_path, env, [CANCEL, GRACE * 2.5], withdraw=True)
    # 7 was withdrawn by the agent ($/cancel_request): only 8 is answered, by the proxy
    assert answers(got) == [(8, "cancelled")]
    assert [json.loads(r.data)["id"] for r in records if r.action == "injected"] == [8]


def test_an_answer_within_the_grace_period_of_zero_seconds_is_the_proxys(tmp_path, env):
    # grace 0: the proxy answers at once, so the editor's answer (sent after) is the one dropped
    got, records, _ = session(tmp_path, env, [CANCEL, 0.5, B.permission_response(7, "ok"), 0.2], grace=0)
    assert sorted(answers(got)) == [(7, "cancelled"), (8, "cancelled")]
    assert [json.loads(r.data)["id"] for r in records if r.action == "dropped"] == [7]
