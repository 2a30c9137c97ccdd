"""Text from the stream never reaches a terminal as control characters (issue 28, item 4):
``acp-fast inspect``'s report, the proxy's diagnostics (``--watch``) and its ``--summary`` escape
them, so an agent cannot clear the screen, retitle the window or forge lines of a report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from acp_fast._terminal import printable

PY = sys.executable
#: What a hostile agent puts in ids, titles and statuses: an OSC title, a screen clear, a forged
#: report line, a carriage return and a right-to-left override.
HOSTILE = "x\x1b]0;owned\x07\x1b[2J\nsession forged: 0 tool calls\r\u202eY"
# Any control character but the report's own line breaks.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def update(sid: str, body: dict) -> bytes:
    msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": body}}
    return json.dumps(msg).encode() + b"\n"


def hostile_stream() -> bytes:
    return update(HOSTILE, {"sessionUpdate": "tool_call", "toolCallId": HOSTILE, "title": HOSTILE}) + update(
        "s", {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t", "status": HOSTILE}
    )


def test_printable_escapes_controls_and_keeps_the_rest() -> None:
    assert printable('plain é 中 🙂 "q"') == 'plain é 中 🙂 "q"'
    assert printable("a\x1b[2Jb\nc\td\x7f\x85\u202e") == "a\\x1b[2Jb\\nc\\td\\x7f\\x85\\u202e"


@pytest.mark.parametrize("backend", ["rust", "python"])
def test_inspect_escapes_the_streams_text(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "hostile.ndjson"
    path.write_bytes(hostile_stream())
    env = dict(os.environ, ACP_FAST_BACKEND=backend)
    done = subprocess.run(
        [PY, "-m", "acp_fast.cli", "inspect", str(path)], capture_output=True, env=env, timeout=60, text=True
    )
    assert done.returncode == 0, done.stderr
    assert not CONTROL.search(done.stdout), repr(done.stdout)
    assert "\\x1b]0;owned\\x07" in done.stdout and "\\u202e" in done.stdout
    # the forged line is part of an escaped value, never a line of its own
    assert not any(line.startswith("session forged") for line in done.stdout.splitlines())


@pytest.mark.parametrize("backend", ["rust", "python"])
def test_proxy_diagnostics_and_summary_escape_the_streams_text(tmp_path: Path, backend: str) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(f"import sys\nsys.stdout.buffer.write({hostile_stream()!r})\n")
    env = dict(os.environ, ACP_FAST_BACKEND=backend)
    cmd: List[str] = [PY, "-m", "acp_fast.cli", "proxy", "--watch", "--summary", "--", PY, str(agent)]
    done = subprocess.run(cmd, capture_output=True, env=env, timeout=60, text=True, input="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.encode() == hostile_stream()  # the editor gets the frames as they came
    assert not CONTROL.search(done.stderr), repr(done.stderr)
    assert "tool_call x\\x1b]0;owned" in done.stderr  # --watch, escaped
    assert "\\x1b[2J" in done.stderr.split("agent exited")[1]  # the summary's statuses, escaped
