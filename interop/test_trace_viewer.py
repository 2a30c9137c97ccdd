"""`make interop`: an acp-fast trace in the official ACP trace viewer
(`agent-client-protocol-trace-viewer`, from crates.io), drawn by headless Chromium.

The proxy records a whole prompt turn of the demo agent with `--trace`; the viewer serves the
file; Chromium loads the page and the test reads the diagram it drew (the swimlanes, one arrow
per message with its method) from the DOM. `make interop` installs the viewer into
`.interop/bin` first; the test fails, saying how to install it, when the viewer or Chromium is
missing (these tests are not part of `make test`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Iterator, List

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
VIEWER = os.environ.get("ACP_FAST_TRACE_VIEWER") or str(
    ROOT / ".interop" / "bin" / "agent-client-protocol-trace-viewer"
)
CHROMIUM = os.environ.get("ACP_FAST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
#: Where the page is saved as Chromium drew it, to look at.
SHOT = Path(os.environ.get("ACP_FAST_INTEROP_OUT", ROOT / ".interop")) / "trace-viewer.png"


def _trace(tmp: Path) -> Path:
    """A trace of one prompt turn with tool calls (the demo agent, no permission asked)."""
    out = tmp / "session.jsons"
    editor = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1",'
        b'"prompt":[{"type":"text","text":"fix the greeting"}]}}\n'
    )
    run = subprocess.run(
        [PY, "-m", "acp_fast.cli", "proxy", "--trace", str(out), "--", PY, "-m", "acp_fast.cli", "demo-agent",
         "--no-permission"],
        input=editor, capture_output=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return out


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    if not os.access(VIEWER, os.X_OK):
        pytest.fail(
            f"{VIEWER} is missing: `make interop` installs it (cargo install agent-client-protocol-trace-viewer)"
        )
    trace = _trace(tmp_path)
    proc = subprocess.Popen([VIEWER, "--no-open", str(trace)], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://[0-9.]+:[0-9]+", line)
        assert found, f"the viewer said {line!r}"
        yield found.group(), trace
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_viewer_serves_every_event(viewer: tuple[str, Path]) -> None:
    url, trace = viewer
    with urllib.request.urlopen(url + "/events", timeout=10) as response:
        served = json.load(response)
    written = [json.loads(line) for line in trace.read_bytes().splitlines()]
    assert served == written  # every line read as an event: none dropped by the viewer's parser


def _dom(url: str) -> str:
    if CHROMIUM is None:
        pytest.fail("Chromium is missing (Debian: apt install chromium)")
    args: List[str] = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000"]
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(args + ["--window-size=1400,1800", f"--screenshot={SHOT}", url], capture_output=True, timeout=120)
    done = subprocess.run(args + ["--dump-dom", url], capture_output=True, timeout=120, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return re.sub(r"<script\b.*?</script>", "", done.stdout, flags=re.S)  # what was drawn, not the code


def test_the_page_draws_the_messages(viewer: tuple[str, Path]) -> None:
    url, trace = viewer
    dom = _dom(url)
    assert "Failed to load trace" not in dom
    lanes = re.findall(r'class="swimlane-header"[^>]*>([^<]+)<', dom)
    assert sorted(lanes) == ["Agent", "Client"]
    labels = re.findall(r'class="message-label"[^>]*>([^<]+)<', dom)
    events = [json.loads(line) for line in trace.read_bytes().splitlines()]
    methods = [e["method"] for e in events if e["type"] != "response"]
    assert len(labels) >= len(methods) > 5
    for method in ("initialize", "session/new", "session/prompt", "session/update"):
        assert any(method.startswith(label.rstrip(".").rstrip("…")) or label.startswith(method) for label in labels), (
            method,
            labels[:10],
        )
    arrows = dom.count('class="message-arrow')
    assert arrows == len(events), (arrows, len(events))  # one arrow per event, responses included
