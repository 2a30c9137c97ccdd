"""``acp_fast.proxy.examples.RedactSecrets`` (docs/PROXY.md, "Middleware"): a secret the agent
sends in any string of a frame (titles, ``rawInput`` / ``rawOutput``, content, message chunks,
diffs, locations, plan entries, ``_meta``, answers and errors, base64 terminal output and resource
blobs) reaches neither the editor's output nor the recording file; frames without one pass
byte-exact; the agent's requests the editor acts on, and the editor's frames, pass unchanged.
Directly on both backends' messages, and end to end through ``Proxy`` with real processes."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from acp_fast import arrow, recording
from acp_fast.cli import inspect as inspect_cli
from acp_fast.proxy.examples import RedactSecrets

PY = sys.executable
SECRET = "sk-" + "A1b2" * 6
PATTERN = r"sk-[A-Za-z0-9]{20,}"
R = "[REDACTED]"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def line(value: Dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def update(update: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}


def terminal(key: str) -> bytes:
    """Raw bytes around ``key`` that are not UTF-8 (kept as they are by the redaction)."""
    return b"\xff\xfe$ env\nKEY=" + key.encode() + b"\n\x80done\n"


def shapes(k: str) -> List[Dict[str, Any]]:
    """The agent's frames holding ``k`` (the secret, or what the editor must get instead)."""
    return [
        update(  # title, rawInput, locations, _meta, content text
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": f"curl -H 'Authorization: {k}'",
                "kind": "execute",
                "rawInput": {"command": ["curl", "-H", f"key={k}"], "n": 1},
                "locations": [{"path": f"/tmp/{k}.txt", "line": 3}],
                "content": [{"type": "content", "content": {"type": "text", "text": f"key={k} ok"}}],
                "_meta": {"x": {"token": k}},
            }
        ),
        update(  # rawOutput, a diff, v1 terminal output in _meta (as some agents stream it)
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "completed",
                "rawOutput": {"env": {"KEY": k}},
                "content": [{"type": "diff", "path": "/p/.env", "oldText": "KEY=\n", "newText": f"KEY={k}\n"}],
                "_meta": {"terminal_output": {"terminal_id": "t1", "data": f"KEY={k}\n"}},
            }
        ),
        # message chunks and thoughts
        update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"use {k}, {k}"}}),
        update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": k}}),
        # plan entries
        update(
            {"sessionUpdate": "plan", "entries": [{"content": f"rotate {k}", "priority": "high", "status": "pending"}]}
        ),
        # v2 terminal output: base64, decoded, redacted, encoded again (its length changes)
        update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t2", "data": b64(terminal(k))}),
        update(
            {
                "sessionUpdate": "terminal_update",
                "terminalId": "t2",
                "command": "env",
                "output": {"data": b64(terminal(k))},
            }
        ),
        update(  # an embedded resource's blob
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "resource", "resource": {"uri": "file:///p/.env", "blob": b64(f"K={k}".encode())}},
            }
        ),
        {  # a permission request's tool call and options
            "jsonrpc": "2.0",
            "id": 7,
            "method": "session/request_permission",
            "params": {
                "sessionId": "s",
                "toolCall": {"toolCallId": "c1", "title": f"send {k}"},
                "options": [{"optionId": "y", "name": f"allow {k}", "kind": "allow_once"}],
            },
        },
        # an answer and an error to the editor's requests
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s", "_meta": {"banner": f"logged in as {k}"}}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": f"bad key {k}", "data": [k]}},
    ]


#: (the agent's frame holding the secret, the frame the editor must get instead).
SECRETS = list(zip(shapes(SECRET), shapes(R)))


#: Frames without a secret, byte-exact through the proxy (odd spacing and member order on purpose).
CLEAN = [
    (
        b'{ "method":"session/update","jsonrpc":"2.0","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"sk-short \\u00e9"}}}}\n'
    ),
    line(update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t2", "data": b64(b"\xff no secret\n")})),
    line(update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "rawOutput": {"n": 1.50}})),
]

#: The agent's requests the editor acts on: passed as they are by default (``keep_methods``).
KEPT = [
    line(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "fs/write_text_file",
            "params": {"sessionId": "s", "path": "/p/.env", "content": f"KEY={SECRET}\n"},
        }
    ),
]


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, base64 ``data`` / ``blob`` members also decoded."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from strings(item)
            if k in ("data", "blob") and isinstance(item, str):
                try:
                    yield base64.b64decode(item, validate=True).decode("utf-8", "replace")
                except ValueError:
                    pass


def leaks(data: bytes) -> bool:
    """Whether the secret is anywhere in NDJSON ``data`` (bytes, strings, decoded base64)."""
    if SECRET.encode() in data:
        return True
    return any(SECRET in s for row in data.splitlines() if row.strip() for s in strings(json.loads(row)))


# -- the middleware on its own -------------------------------------------------------------------


class Ctx:
    """What RedactSecrets asks of its context."""

    def __init__(self) -> None:
        self.reasons: List[str] = []
        self.withheld = 0

    def reason(self, text: str) -> None:
        self.reasons.append(text)

    def withhold(self) -> None:
        self.withheld += 1


@pytest.mark.parametrize("index", range(len(SECRETS)))
def test_each_place_is_redacted(backend, index):
    frame, expected = SECRETS[index]
    redact, ctx = RedactSecrets(PATTERN), Ctx()
    out = redact(backend.decode(line(frame)), "agent", ctx)
    assert out == expected
    assert ctx.withheld == 1 and len(ctx.reasons) == 1 and ctx.reasons[0].startswith("redacted ")
    assert not leaks(line(out))


def test_frames_without_a_secret_are_given_back(backend):
    redact, ctx = RedactSecrets(PATTERN), Ctx()
    for data in CLEAN:
        message = backend.decode(data.rstrip(b"\n"))
        assert redact(message, "agent", ctx) is message
    assert ctx.reasons == [] and ctx.withheld == 0 and redact.redacted == 0


def test_what_passes_unchanged_and_the_options(backend):
    frame, expected = SECRETS[2]
    redact, ctx = RedactSecrets(PATTERN), Ctx()
    # the editor's frames: its own (a prompt, a file it read, its terminal's output in v1)
    for data in (line(frame), line({"jsonrpc": "2.0", "id": 3, "result": {"output": SECRET, "truncated": False}})):
        message = backend.decode(data)
        assert redact(message, "editor", ctx) is message
    # the agent's requests the editor acts on, unless told otherwise
    message = backend.decode(KEPT[0])
    assert redact(message, "agent", ctx) is message
    assert ctx.reasons == []
    assert RedactSecrets(PATTERN, keep_methods=())(message, "agent", ctx)["params"]["content"] == f"KEY={R}\n"
    # record_original=True: replaced, the original recorded; a replacement with a group
    ctx = Ctx()
    out = RedactSecrets(r"sk-([A-Za-z0-9]{2})[A-Za-z0-9]{18,}", r"sk-\1…", record_original=True)(
        backend.decode(line(frame)), "agent", ctx
    )
    assert out["params"]["update"]["content"]["text"] == "use sk-A1…, sk-A1…" and ctx.withheld == 0
    # base64 that is not base64 is redacted as text
    bad = update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": f"!{SECRET}"})
    assert RedactSecrets(PATTERN)(backend.decode(line(bad)), "agent", Ctx())["params"]["update"]["data"] == f"!{R}"


# -- end to end: the editor's output and the recording -------------------------------------------


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def program(tmp_path: Path, name: str, source: str) -> List[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return [PY, str(path)]


def test_secrets_reach_neither_the_editor_nor_the_recording(tmp_path, env):
    frames = [line(f) for f, _ in SECRETS]
    sent = [CLEAN[0], frames[0], CLEAN[1], *frames[1:], KEPT[0], CLEAN[2]]
    # a batch line, one entry of which holds the secret (its entries come one per line)
    batch = b"[" + CLEAN[2].rstrip(b"\n") + b"," + frames[2].rstrip(b"\n") + b"]\n"
    sent.append(batch)
    inbox = tmp_path / "inbox"
    # The agent: writes its frames once the editor's prompt came, keeps what it receives.
    agent = program(
        tmp_path,
        "agent",
        f"""
        import os, sys
        got = sys.stdin.buffer.readline()
        open({str(inbox)!r}, "wb").write(got)
        data = b"".join({sent!r})
        v = memoryview(data)
        while v:
            v = v[os.write(1, v):]
        """,
    )
    rec, state = tmp_path / "rec.ndjson", tmp_path / "state.json"
    proxy = program(
        tmp_path,
        "proxy",
        f"""
        import sys
        from acp_fast.proxy import Proxy
        from acp_fast.proxy.examples import RedactSecrets
        proxy = Proxy(sys.argv[1:], middleware=[RedactSecrets({PATTERN!r})], record={str(rec)!r},
                      state_json={str(state)!r})
        sys.exit(proxy.run())
        """,
    )
    prompt = line(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": f"my key is {SECRET}"}]},
        }
    )
    done = subprocess.run([*proxy, *agent], input=prompt, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines(keepends=True)
    n = len(SECRETS)
    # the editor: the redacted frames, the clean ones byte-exact, the kept request as it came,
    # the batch's entries one per line
    redacted = [line(e) for _, e in SECRETS]
    assert len(out) == len(sent) + 1
    assert [out[0], out[2], out[n + 2], out[n + 3], out[n + 4]] == [CLEAN[0], CLEAN[1], KEPT[0], CLEAN[2], CLEAN[2]]
    assert [json.loads(x) for x in [out[1], *out[3 : n + 2], out[n + 5]]] == [
        json.loads(x) for x in [*redacted, redacted[2]]
    ]
    assert not leaks(b"".join(out[: n + 2] + out[n + 3 :]))
    # the editor's frame passed unchanged to the agent
    assert inbox.read_bytes() == prompt
    # the recording: each agent line with a secret withheld (its length, the reason), then the
    # redacted frame the editor got; the secret only in the two lines that passed unchanged
    data = rec.read_bytes()
    rows = [r for r in recording.read(data) if isinstance(r, recording.Record)]
    from_agent = [r for r in rows if r.side == "agent"]
    withheld = [r for r in from_agent if r.withheld is not None]
    assert [r.withheld for r in withheld] == [len(f) - 1 for f in frames] + [len(batch) - 1]
    assert all(r.action == "replaced" and r.data == b"" and r.reason.startswith("redacted ") for r in withheld)
    assert b"".join(r.data + b"\n" for r in from_agent if r.action != "replaced") == b"".join(out)
    assert recording.extract(data, "agent") == CLEAN[0] + CLEAN[1] + KEPT[0] + CLEAN[2]
    assert recording.extract(data, "editor") == prompt
    assert [r.data + b"\n" for r in rows if SECRET.encode() in r.data] == [prompt, KEPT[0]]
    assert not leaks(b"".join(x for x in data.splitlines(keepends=True) if b'"id":5,' not in x and b'"id":9,' not in x))
    # the recording reads: validate counts the withheld lines, and replays to the live state
    done = subprocess.run(
        [PY, "-m", "acp_fast.cli", "validate", "--format", "json", str(rec)], capture_output=True, env=env
    )
    summary = json.loads(done.stdout)
    assert summary["recording"]["withheld"] == n + 1, done.stdout
    assert summary["recording"]["notForwarded"] == {"replaced": n + 1}
    assert not [p for p in summary["problems"] if p["kind"] == "recording"]
    replay = inspect_cli.replay_file(str(rec), max_tool_calls=1000, forwarded_only=True)
    assert replay.skipped == n + 1
    assert replay.store.state() == inspect_cli.replay_file(str(rec), max_tool_calls=1000).store.state()
    assert not leaks(state.read_bytes())


# -- Context.withhold and the "withheld" record ----------------------------------------------------

WITHHOLDER = """
import sys
from acp_fast.proxy import Proxy, Drop
def middleware(message, sender, ctx):
    method = message.method or ""
    if method.startswith("x/hide"):
        ctx.withhold()
        ctx.reason("hidden")
        return Drop() if method == "x/hide-drop" else {"jsonrpc": "2.0", "method": "x/shown"}
    if method == "x/replace":  # after a withheld one: recorded with its bytes (nothing carried over)
        return {"jsonrpc": "2.0", "method": "x/replaced"}
    if method == "x/keep":  # withhold without a change: nothing is withheld
        ctx.withhold()
    return message
sys.exit(Proxy(sys.argv[2:], middleware=[middleware], record=sys.argv[1]).run())
"""


def test_withhold_records_the_length_only(tmp_path, env):
    frames = [
        b'{"jsonrpc":"2.0","method":"x/%s","params":{"s":"%s"}}\n' % (m, SECRET.encode())
        for m in (b"hide", b"replace", b"hide-drop", b"keep", b"other")
    ]
    agent = program(tmp_path, "agent", f"import sys\nsys.stdout.buffer.write(b''.join({frames!r}))\n")
    proxy = program(tmp_path, "withholder", WITHHOLDER)
    rec = tmp_path / "rec.ndjson"
    done = subprocess.run([*proxy, str(rec), *agent], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines(keepends=True) == [
        b'{"jsonrpc":"2.0","method":"x/shown"}\n',
        b'{"jsonrpc":"2.0","method":"x/replaced"}\n',
        frames[3],
        frames[4],
    ]
    rows = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    assert [(r.action, r.withheld, r.reason) for r in rows] == [
        ("replaced", len(frames[0]) - 1, "hidden"),
        ("injected", None, None),
        ("replaced", None, "replaced by middleware"),
        ("injected", None, None),
        ("dropped", len(frames[2]) - 1, "hidden"),
        (None, None, None),
        (None, None, None),
    ]
    assert rows[0].data == b"" and rows[0].wire == b"" and rows[2].data + b"\n" == frames[1]
    assert recording.extract(rec.read_bytes(), "agent") == frames[1] + frames[3] + frames[4]


HEAD = b'{"acp-fast-recording":1,"t":1.0,"argv":["a"],"version":"0"}\n'


@pytest.mark.parametrize(
    ("record", "error"),
    [
        (b'{"t":2,"from":"agent","withheld":10,"action":"replaced","reason":"r"}', None),
        (b'{"t":2,"from":"agent","withheld":10,"action":"dropped"}', None),
        (b'{"t":2,"from":"agent","withheld":10}', 'expected "action": "dropped" or "replaced" with "withheld"'),
        (b'{"t":2,"from":"agent","withheld":10,"action":"injected"}', '"dropped" or "replaced" with "withheld"'),
        (b'{"t":2,"from":"agent","withheld":-1,"action":"dropped"}', 'expected "withheld" to be a byte count'),
        (b'{"t":2,"from":"agent","withheld":true,"action":"dropped"}', 'expected "withheld" to be a byte count'),
        (b'{"t":2,"from":"agent","withheld":3,"frame":{},"action":"dropped"}', 'no payload with "withheld"'),
        (b'{"t":2,"from":"agent","withheld":3,"too_large":3,"action":"dropped"}', '"too_large" and "withheld"'),
    ],
)
def test_withheld_records_read_and_are_checked(record, error):
    data = HEAD + record + b'\n{"t":3.0,"event":"exit","status":0}\n'
    if error is None:
        (row,) = [r for r in recording.read(data) if isinstance(r, recording.Record)]
        assert row.withheld == 10 and row.data == b"" and not row.forwarded
        assert recording.extract(data, "agent") == b""
        assert arrow.frames(data).num_rows == 0  # no bytes, no row
    else:
        with pytest.raises(recording.RecordingError, match=re.escape(error)):
            list(recording.read(data))


def test_with_coalesce_nothing_of_the_secret_is_held_or_merged(tmp_path, env):
    """``--coalesce`` holds and merges the redacted updates, never the agent's lines."""
    frames = [
        line(update({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Run", "status": "in_progress"})),
        *(
            line(
                update(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "c",
                        "content": [{"type": "content", "content": {"type": "text", "text": f"{i}: {SECRET}"}}],
                    }
                )
            )
            for i in range(5)
        ),
        line(update({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"})),
    ]
    agent = program(tmp_path, "agent", f"import sys\nsys.stdout.buffer.write(b''.join({frames!r}))\n")
    rec, state = tmp_path / "rec.ndjson", tmp_path / "state.json"
    proxy = program(
        tmp_path,
        "proxy",
        f"""
        import sys
        from acp_fast.proxy import Proxy
        from acp_fast.proxy.examples import RedactSecrets
        sys.exit(Proxy(sys.argv[1:], middleware=[RedactSecrets({PATTERN!r})], record={str(rec)!r},
                       state_json={str(state)!r}, coalesce=50).run())
        """,
    )
    done = subprocess.run([*proxy, *agent], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) < len(frames)  # merged
    assert not leaks(done.stdout) and not leaks(rec.read_bytes()) and not leaks(state.read_bytes())
    call = json.loads(state.read_bytes())["sessions"]["s"]["toolCalls"]["c"]
    assert call["content"][0]["content"]["text"] == f"4: {R}" and call["status"] == "completed"
