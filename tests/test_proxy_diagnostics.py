"""One diagnostics format for ``acp-fast proxy``, whichever loop runs (docs/PROXY.md): the core's
relay (rust/relay.rs, on the native backend when nothing per frame needs Python) and the Python
loop (``ACP_FAST_PROXY_RELAY=python``, ``--record``, ``--watch``, a middleware), on both backends,
give the same stderr and the same answers to the editor for the same noisy agent and editor:

- the side's own line number (the lines of that side only, not both directions);
- a batch with no valid message: its first bad entry, at its position in the line;
- positions and columns as ``acp_fast.decode`` gives them for that line, at the side's line
  (a bad state update's: its offset in the line, also for a batch entry);
- in the order of the lines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

PROXY = [
    sys.executable,
    "-m",
    "acp_fast.cli",
    "proxy",
    "--max-frame-bytes",
    "2000",
    "--strict",
    "--agent-invalid",
    "drop",
]

# Prints its lines once the editor's input is closed, so that the editor's diagnostics come first.
AGENT = r"""
import sys

sys.stdin.buffer.read()
update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call"%s}}}'
no_id, bad_id = update % b"", update % b',"toolCallId":7'
note = b'{"jsonrpc":"2.0","method":"m"}'
lines = [
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}',
    b"not json",
    b'{"a":1}',
    b"",
    b"   ",
    b'[1,{"x":1}]',
    b'  [ {"x":1}, 2]',
    b"[" + note + b",1]",
    no_id,
    b"[" + no_id + b"," + note + b"," + bad_id + b"]",
    b"  [" + bad_id + b", " + no_id + b"]",
    b"x" * 3000,
    b"\xff\xfe",
    b'{"jsonrpc":"2.0","id":1,"result":{}}\r',
    b"[]",
    b'{"jsonrpc":"2.0","method":"m"',
]
sys.stdout.buffer.write(b"\n".join(lines) + b"\ntrailing")
"""

EDITOR = b"\n".join(
    [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}',
        b"not json from editor",
        b"[1,2]",
        b"",
        b'{"jsonrpc":"2.0","id":5}',
        b'  [{"x":1}, {"jsonrpc":"2.0","id":"e","method":"m"}]',
        b' [{"x":1},{"y":2}]',
        b"y" * 2500,
        b'{"jsonrpc":"2.0","id":6,"method":"m","params":[}',
        b"",
    ]
)

P = "acp-fast proxy:"
TOOL_CALL_ID = 'expected "params.update.toolCallId" to be a string'
NO_JSONRPC = 'expected "jsonrpc": "2.0", found no "jsonrpc" member'
EXPECTED_STDERR = [
    f"{P} editor line 2 column 2: expected 'null', found 'o' (answered with an error, not forwarded)",
    f"{P} editor line 3 column 2: expected a JSON-RPC message object, found number (answered with an error, not forwarded)",
    f'{P} editor line 5 column 1: expected a "method", "result" or "error" member, found none (answered with an error, not forwarded)',
    f"{P} editor line 7 column 3: {NO_JSONRPC} (answered with an error, not forwarded)",
    f"{P} editor line 8: expected a frame of at most 2000 bytes, found 2501 bytes; not forwarded",
    f"{P} editor line 9 column 48: expected a JSON value, found '}}' (answered with an error, not forwarded)",
    f"{P} agent line 2 column 2: expected 'null', found 'o' (dropped)",
    f"{P} agent line 3 column 1: {NO_JSONRPC} (dropped)",
    f"{P} agent line 6 column 2: expected a JSON-RPC message object, found number (dropped)",
    f"{P} agent line 7 column 5: {NO_JSONRPC} (dropped)",
    f"{P} agent line 9 column 79: {TOOL_CALL_ID}, found none (forwarded)",
    f"{P} agent line 10 column 80: {TOOL_CALL_ID}, found none (forwarded)",
    f"{P} agent line 10 column 263: {TOOL_CALL_ID}, found number 7 (forwarded)",
    f"{P} agent line 11 column 124: {TOOL_CALL_ID}, found number 7 (forwarded)",
    f"{P} agent line 11 column 208: {TOOL_CALL_ID}, found none (forwarded)",
    f"{P} agent line 12: expected a frame of at most 2000 bytes, found 3001 bytes; not forwarded",
    f"{P} agent line 13 column 1: invalid UTF-8 byte 0xFF (dropped)",
    f"{P} agent line 15 column 1: expected at least one message in the batch, found an empty array (dropped)",
    f"{P} agent line 16 column 30: expected ',' or '}}', found end of input (dropped)",
    f"{P} agent line 17 column 3: expected 'true', found 'a' (dropped)",
]

# The editor's answers (--strict): the data of each is its line and position, as in the message.
EXPECTED_ANSWERS = [
    (None, -32700, 2, 1),
    (None, -32600, 3, 1),
    (5, -32600, 5, 0),
    (None, -32600, 7, 2),
    (None, -32700, 9, 47),
]

#: How each loop is chosen: the core's relay (on the native backend), or the Python loop.
MODES: Dict[str, List[str]] = {
    "relay": [],
    "python-loop": [],
    "record": ["--record", "{tmp}/rec.ndjson"],
    "watch": ["--watch"],
    "middleware": ["--answer-cancelled-permissions"],
}


def _run(backend_id: str, mode: str, tmp: Path) -> subprocess.CompletedProcess:
    agent = tmp / "noisy_agent.py"
    agent.write_text(AGENT)
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("ACP_FAST_PROXY_RELAY", None)
    if mode == "python-loop":
        env["ACP_FAST_PROXY_RELAY"] = "python"
    options = [o.format(tmp=tmp) for o in MODES[mode]]
    command = [*PROXY, *options, "--", sys.executable, str(agent)]
    return subprocess.run(command, input=EDITOR, capture_output=True, env=env, timeout=60)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_same_diagnostics_whichever_loop_runs(backend_id: str, mode: str, tmp_path: Path) -> None:
    done = _run(backend_id, mode, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().splitlines() == EXPECTED_STDERR
    # one line number per note: the line's own on its side (issue 32), never a second one
    assert all(note.count(" line ") == 1 for note in done.stderr.decode().splitlines())
    out = done.stdout.split(b"\n")
    answers = [json.loads(line) for line in out[: len(EXPECTED_ANSWERS)]]
    assert [
        (a["id"], a["error"]["code"], a["error"]["data"]["line"], a["error"]["data"]["position"]) for a in answers
    ] == EXPECTED_ANSWERS
    # each answer's message is the diagnostic's error, with its position as the decoder words it
    notes = [re.match(r".* line (\d+) column (\d+): (.*) \(answered", n) for n in EXPECTED_STDERR if "(answered" in n]
    assert [a["error"]["message"] for a in answers] == [f"{m[3]} at line {m[1]} column {m[2]}" for m in notes if m]
    # the agent's frames (and blank lines) forwarded byte-exact, in order
    forwarded = out[len(EXPECTED_ANSWERS) :]
    assert forwarded[0] == b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
    assert forwarded[1:3] == [b"", b"   "]
    assert forwarded[-2:] == [b'{"jsonrpc":"2.0","id":1,"result":{}}\r', b""]
    assert len(forwarded) == 9
