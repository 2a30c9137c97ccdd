"""The proxy's Python API (``acp_fast.proxy.Proxy`` with middleware, docs/PROXY.md "Middleware"),
with real processes and pipes on both backends: frames given back are forwarded byte-exact,
replaced, dropped (with a reason in the recording) and injected in either direction; the two
examples (``acp_fast.proxy.examples``): auto-approval by tool kind and redaction of secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

import acp_fast
from acp_fast import builders as B
from acp_fast import recording, traffic
from acp_fast.cli import inspect as inspect_cli

PY = sys.executable
PROXY = [PY, "-m", "acp_fast.cli", "proxy"]


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def runner(tmp_path: Path, source: str, name: str = "runner") -> List[str]:
    """A program running ``Proxy(agent, middleware=MIDDLEWARE, **OPTIONS)`` (``source`` defines
    both); the agent command follows ``--``."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import sys, re\n"
        "from acp_fast.proxy import Proxy, Drop\n"
        "from acp_fast.proxy.examples import AutoApprove, RedactSecrets\n"
        "OPTIONS = {}\n"
        + textwrap.dedent(source)
        + "\nsys.exit(Proxy(sys.argv[sys.argv.index('--') + 1:], middleware=MIDDLEWARE, **OPTIONS).run())\n"
    )
    return [PY, str(path)]


def script(tmp_path: Path, name: str, source: str) -> List[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import os, sys, time, json\n"
        "def out(b):\n"
        "    v = memoryview(b)\n"
        "    while v:\n"
        "        v = v[os.write(1, v):]\n" + textwrap.dedent(source)
    )
    return [PY, str(path)]


def run(env, proxy: List[str], agent: List[str], stdin: bytes = b"", timeout: float = 60):
    return subprocess.run([*proxy, "--", *agent], input=stdin, capture_output=True, env=env, timeout=timeout)


def records(path: Path) -> List[recording.Record]:
    return [r for r in recording.read(path.read_bytes()) if isinstance(r, recording.Record)]


def test_a_no_op_middleware_is_byte_exact(tmp_path, env):
    data = traffic.generate("mixed", 3000, seed=5) + b"\r\n\n" + B.message_chunk("s", "last").rstrip(b"\n")
    calls = tmp_path / "calls.txt"
    proxy = runner(
        tmp_path,
        f"""
        seen = []
        def noop(message, sender, ctx):
            seen.append(sender)
            return message
        MIDDLEWARE = [noop]
        OPTIONS = dict(record={str(tmp_path / "rec.ndjson")!r}, state_json={str(tmp_path / "state.json")!r}, force=True)
        import atexit
        atexit.register(lambda: open({str(calls)!r}, "w").write(str(len(seen))))
        """,
    )
    done = run(env, proxy, ["cat"], data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == data
    rec = (tmp_path / "rec.ndjson").read_bytes()
    assert recording.extract(rec, "editor") == data == recording.extract(rec, "agent")
    assert all(r.action is None for r in records(tmp_path / "rec.ndjson"))
    # each message, both ways, met the middleware once (blank lines are not messages)
    assert int(calls.read_text()) == 2 * acp_fast.FrameDecoder().feed(data + b"\n").__len__()
    # the state is the same as without middleware (one direction: two would interleave by chance)
    corpus = tmp_path / "corpus.ndjson"
    corpus.write_bytes(data)
    for options in ([], ["--state-json", str(tmp_path / "plain.json")]):
        command = [*proxy] if not options else [*PROXY, *options]
        done = run(env, command, ["cat", str(corpus)])
        assert done.returncode == 0 and done.stdout == data
    assert json.loads((tmp_path / "state.json").read_bytes()) == json.loads((tmp_path / "plain.json").read_bytes())


CHANGER = """
def change(message, sender, ctx):
    if message.method == "x/drop":
        return Drop("told to")
    if message.method == "x/none":
        ctx.reason("silently")
        return None
    if message.method == "x/replace":
        return {"jsonrpc": "2.0", "method": "x/replaced", "params": {"by": sender}}
    if message.method == "x/more":
        ctx.inject({"jsonrpc": "2.0", "method": "x/back", "params": {"to": sender}}, to=sender)
        return [message, b'{"jsonrpc":"2.0","method":"x/extra"}\\n']
    if message.method == "x/raise":
        raise RuntimeError("boom")
    return message
MIDDLEWARE = [change]
"""


def _frame(method: str) -> bytes:
    return b'{"jsonrpc":"2.0","method":"%s"}\n' % method.encode()


def test_replace_drop_and_inject_in_both_directions(tmp_path, env):
    rec = tmp_path / "rec.ndjson"
    proxy = runner(tmp_path, CHANGER + f"\nOPTIONS = dict(record={str(rec)!r})\n")
    # The agent: its own frames first, then what it receives, one line per frame, in a file.
    agent = script(
        tmp_path,
        "agent",
        f"""
        for m in ["a", "x/drop", "x/replace", "x/more", "x/raise", "z"]:
            out(b'{{"jsonrpc":"2.0","method":"%s"}}\\n' % m.encode())
        open({str(tmp_path / "got.bin")!r}, "wb").write(sys.stdin.buffer.read())
        """,
    )
    editor = b"".join(_frame(m) for m in ["b", "x/none", "x/replace", "x/more", "y"])
    done = run(env, proxy, agent, editor)
    assert done.returncode == 0, done.stderr
    got = (tmp_path / "got.bin").read_bytes()
    assert got.splitlines() == [
        _frame("b").rstrip(),
        b'{"jsonrpc":"2.0","method":"x/replaced","params":{"by":"editor"}}',
        _frame("x/more").rstrip(),
        b'{"jsonrpc":"2.0","method":"x/extra"}',
        _frame("y").rstrip(),
    ] or sorted(got.splitlines()) == sorted(  # the agent's own injection may come first
        [
            _frame("b").rstrip(),
            b'{"jsonrpc":"2.0","method":"x/replaced","params":{"by":"editor"}}',
            _frame("x/more").rstrip(),
            b'{"jsonrpc":"2.0","method":"x/extra"}',
            _frame("y").rstrip(),
            b'{"jsonrpc":"2.0","method":"x/back","params":{"to":"agent"}}',
        ]
    )
    editor_got = [line for line in done.stdout.splitlines()]
    assert _frame("a").rstrip() in editor_got and _frame("z").rstrip() in editor_got
    assert b'{"jsonrpc":"2.0","method":"x/replaced","params":{"by":"agent"}}' in editor_got
    assert b'{"jsonrpc":"2.0","method":"x/back","params":{"to":"editor"}}' in editor_got
    assert not any(b"x/drop" in line or b"x/raise" in line for line in editor_got)
    assert b"middleware change raised RuntimeError: boom; the frame is dropped" in done.stderr
    # The recording: what each side sent (extract), and what the middleware did, with reasons.
    data = rec.read_bytes()
    assert recording.extract(data, "editor") == editor
    rs = records(rec)
    by = {(r.side, r.data): r for r in rs}
    assert by[("editor", _frame("x/none").rstrip())].action == "dropped"
    assert by[("editor", _frame("x/none").rstrip())].reason == "silently"
    assert by[("agent", _frame("x/drop").rstrip())].reason == "told to"
    assert by[("agent", _frame("x/raise").rstrip())].reason == "change raised RuntimeError: boom"
    assert by[("agent", _frame("x/replace").rstrip())].action == "replaced"
    injected = [(r.side, r.data) for r in rs if r.action == "injected"]
    assert ("agent", b'{"jsonrpc":"2.0","method":"x/replaced","params":{"by":"agent"}}') in injected
    assert ("editor", b'{"jsonrpc":"2.0","method":"x/back","params":{"to":"agent"}}') in injected
    assert ("agent", b'{"jsonrpc":"2.0","method":"x/back","params":{"to":"editor"}}') in injected
    assert all(r.forwarded == (r.action in (None, "injected")) for r in rs)
    # acp-fast validate reads the new records (its protocol checks refuse the made-up methods)
    checked = subprocess.run([*PROXY[:-1], "validate", str(rec)], capture_output=True, env=env)
    assert b": recording, " in checked.stdout and b"[recording]" not in checked.stdout, checked.stdout


def _inspect_state(path: Path) -> Dict:
    # the proxy's default bounds (inspect keeps every session by default)
    bounds = {"max_tool_calls": 1000, "max_sessions": 1000}
    return inspect_cli.replay_file(str(path), **bounds, forwarded_only=True).store.state()


PERMISSION_AGENT = """
tool_calls = [
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"r1","title":"Read","kind":"read"}}}\\n',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit","kind":"edit"}}}\\n',
]
options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}, {"optionId": "always", "name": "Always", "kind": "allow_always"}, {"optionId": "no", "name": "No", "kind": "reject_once"}]
for f in tool_calls:
    out(f)
for rid, call in ((1, "r1"), (2, "e1")):
    out(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                    "params": {"sessionId": "s", "toolCall": {"toolCallId": call}, "options": options}}).encode() + b"\\n")
answers = {}
for line in sys.stdin.buffer:
    m = json.loads(line)
    answers[m["id"]] = m["result"]
    if len(answers) == 2:
        break
out(json.dumps({"jsonrpc": "2.0", "method": "x/answers", "params": {str(k): v for k, v in sorted(answers.items())}}).encode() + b"\\n")
"""


def test_auto_approve_answers_reads_and_passes_edits_on(tmp_path, env):
    rec = tmp_path / "rec.ndjson"
    proxy = runner(
        tmp_path,
        f"""
        MIDDLEWARE = [AutoApprove({{"read", "search"}})]
        OPTIONS = dict(record={str(rec)!r}, state_json={str(tmp_path / "state.json")!r})
        """,
    )
    agent = script(tmp_path, "agent", PERMISSION_AGENT)
    p = subprocess.Popen(
        [*proxy, "--", *agent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    lines = []
    while True:  # the editor answers what reaches it: the edit's request only
        line = p.stdout.readline()
        assert line
        lines.append(json.loads(line))
        if lines[-1].get("method") == "session/request_permission":
            assert lines[-1]["id"] == 2
            p.stdin.write(B.permission_response(2, "no"))
            p.stdin.flush()
        if lines[-1].get("method") == "x/answers":
            break
    p.stdin.close()
    assert p.wait(timeout=30) == 0
    answers = lines[-1]["params"]
    assert answers["1"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}  # by the proxy
    assert answers["2"] == {"outcome": {"outcome": "selected", "optionId": "no"}}  # by the editor
    assert [m["id"] for m in lines if m.get("method") == "session/request_permission"] == [2]
    rs = records(rec)
    dropped = [r for r in rs if r.action == "dropped"]
    assert len(dropped) == 1 and json.loads(dropped[0].data)["id"] == 1
    assert dropped[0].reason == "auto-approved: read tool call r1, option yes"
    assert [json.loads(r.data)["id"] for r in rs if r.action == "injected"] == [1]
    # the live state (the editor's view plus the proxy's answers) is what the recording replays to
    live = json.loads((tmp_path / "state.json").read_bytes())
    assert _inspect_state(rec) == live


def test_redact_secrets_in_tool_output_and_message_chunks(tmp_path, env):
    secret = "sk-" + "A1b2" * 6
    frames = [
        B.tool_call("s", "c1", "Run", kind="execute"),
        B.tool_call_update("s", "c1", status="completed", content=[B.text_content(f"key={secret} ok")]),
        B.tool_call_update("s", "c1", raw_output={"env": {"KEY": secret, "n": 1}}),
        B.message_chunk("s", f"not tool output: {secret}"),
    ]
    agent = script(tmp_path, "agent", f"for f in {frames!r}: out(f)\n")
    rec = tmp_path / "rec.ndjson"
    proxy = runner(
        tmp_path,
        f"""
        MIDDLEWARE = [RedactSecrets(r"sk-[A-Za-z0-9]{{20,}}")]
        OPTIONS = dict(record={str(rec)!r})
        """,
    )
    done = run(env, proxy, agent)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines(keepends=True)
    assert out[0] == frames[0]  # nothing to redact: byte-exact
    assert json.loads(out[1])["params"]["update"]["content"][0]["content"]["text"] == "key=[REDACTED] ok"
    assert json.loads(out[2])["params"]["update"]["rawOutput"] == {"env": {"KEY": "[REDACTED]", "n": 1}}
    assert json.loads(out[3])["params"]["update"]["content"]["text"] == "not tool output: [REDACTED]"
    assert secret.encode() not in done.stdout
    rs = records(rec)
    assert [r.action for r in rs] == [None, "replaced", "injected", "replaced", "injected", "replaced", "injected"]
    assert rs[1].reason == "redacted 1 match of 'sk-[A-Za-z0-9]{20,}'"
    # the agent's lines that held the secret are recorded without their bytes (tests/test_redact.py)
    assert [r.withheld for r in rs if r.action == "replaced"] == [len(f) - 1 for f in frames[1:]]
    assert recording.extract(rec.read_bytes(), "agent") == frames[0]
    assert secret.encode() not in rec.read_bytes()


def test_recordings_with_and_without_the_new_records_read():
    old = (
        b'{"acp-fast-recording":1,"t":1.0,"argv":["a"],"version":"0"}\n'
        b'{"t":1.5,"from":"agent","text":"junk","action":"diverted"}\n'
        b'{"t":2.0,"from":"agent","frame":{"jsonrpc":"2.0","method":"a"}}\n'
        b'{"t":3.0,"event":"exit","status":0}\n'
    )
    new = old.replace(
        b'{"t":3.0,',
        b'{"t":2.1,"from":"agent","frame":{"jsonrpc":"2.0","method":"b"},"action":"replaced","reason":"why"}\n'
        b'{"t":2.1,"from":"agent","frame":{"jsonrpc":"2.0","method":"c"},"action":"injected"}\n'
        b'{"t":3.0,',
    )
    rs = [r for r in recording.read(new) if isinstance(r, recording.Record)]
    assert [(r.action, r.reason, r.forwarded) for r in rs] == [
        ("diverted", None, False),
        (None, None, True),
        ("replaced", "why", False),
        ("injected", None, True),
    ]
    assert recording.extract(old, "agent") == b"junk\n" + _frame("a")
    assert recording.extract(new, "agent") == b"junk\n" + _frame("a") + _frame("b")  # not the injected one
    parsed = [r for _, r in recording.parse_lines([new], 1 << 20)]
    assert [r.forwarded for r in parsed[1:-1]] == [False, True, False, True]
    with pytest.raises(recording.RecordingError, match='"reason" to be a string'):
        list(recording.read(new.replace(b'"reason":"why"', b'"reason":5')))
    with pytest.raises(recording.RecordingError, match='"replaced", "injected" or "coalesced"'):
        list(recording.read(new.replace(b'"action":"injected"', b'"action":"eaten"')))
