"""The soak test of ``acp-fast proxy`` (``benches/soak.py``; ``make soak`` relays 1 GB), short: about
25 MB of mixed agent traffic with 1 % garbage lines through the proxy on each backend. Every good
frame arrives byte-exact and in order, every garbage line is diverted to stderr in order, and the
proxy's RSS stays flat; and the checker notices when a garbage line is let through.

Sessions mode (``make soak-sessions`` relays 1,000,000 sessions), short: thousands of distinct
sessions through the plain proxy and through ``--bridge 1:2``, every frame checked (against the
bridge's own conversion with a bridge); the renaming keeps the frames valid and the sessions
distinct; and the checker notices a frame the bridged proxy did not deliver."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fast import traffic

SOAK = Path(__file__).resolve().parent.parent / "benches" / "soak.py"
SHORT = ["--mb", "25", "--block-frames", "5000", "--interval", "0.005", "--no-progress"]


def soak(*options: str, backend: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ACP_FAST_BACKEND": backend}
    return subprocess.run([sys.executable, str(SOAK), *options], capture_output=True, text=True, env=env, timeout=300)


def test_soak_short(backend_id, tmp_path):
    out = tmp_path / "soak.json"
    done = soak(*SHORT, "--json", str(out), backend=backend_id)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["backend"] == backend_id and report["problems"] == [] and report["status"] == 0
    assert report["bytes"] >= 25e6 and report["copies"] >= 10
    assert 0.005 < report["garbage_lines"] / report["frames"] < 0.02
    assert report["rss_samples"] > 0 and report["rss_growth_mib"] is not None
    assert "every check passed" in done.stdout


def test_soak_notices_garbage_let_through(backend_id):
    done = soak("--mb", "2", "--block-frames", "2000", "--no-progress", "--proxy-args", "--agent-invalid", "pass",
                backend=backend_id)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED: stdout: copy 0" in done.stdout and "FAILED: stderr: expected" in done.stdout


def soak_module():
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_sessions_renamed_per_copy(backend, profile):
    """Every copy names its sessions s{copy}-{i}, in params.sessionId and in session/new's answer,
    and stays the same traffic otherwise."""
    soak = soak_module()
    frames = traffic.frames(profile, 24, seed=3)
    corpus = soak.Sessions(b"".join(frames))
    assert len(corpus.ids) >= 2
    for copy in (0, 7, 123456):
        lines = corpus.fill(copy).splitlines(keepends=True)
        assert len(lines) == len(frames)
        seen = set()
        for line, original in zip(lines, frames):
            message, source = backend.loads(line), backend.loads(original)
            for part in ("params", "result"):
                if isinstance(source.get(part), dict) and "sessionId" in source[part]:
                    renamed = message[part].pop("sessionId")
                    i = corpus.ids.index(b'"%s"' % source[part].pop("sessionId").encode())
                    assert renamed == f"s{copy}-{i}"
                    seen.add(renamed)
            assert message == source
        assert seen == {f"s{copy}-{i}" for i in range(len(corpus.ids))}


@pytest.mark.parametrize("proxy_args", [[], ["--bridge", "1:2"]], ids=["proxy", "bridge"])
def test_soak_sessions(backend_id, proxy_args, tmp_path):
    """Thousands of fresh sessions: every frame arrives as expected (byte for byte; through the
    bridge, as the bridge's own conversion of the same frames), the garbage lines on stderr, exit 0,
    and the report gives the sessions and the RSS at 10, 50 and 90 % of the run."""
    # The fallback is slower than the Rust core, the bridge (Python over either) slower than the proxy;
    # a few MB at least, so that both halves of the run have RSS samples.
    sessions = {"rust": 20_000, "python": 4_000}[backend_id] // (5 if proxy_args else 1)
    sessions = max(sessions, 2_000)
    out = tmp_path / "soak.json"
    options = ["--sessions", str(sessions), "--interval", "0.005", "--no-progress", "--json", str(out)]
    done = soak(*options, "--proxy-args", *proxy_args, backend=backend_id)
    report = json.loads(out.read_text())
    # Every check passes, the RSS flat included: the store keeps 1,000 sessions (max_sessions) and
    # the bridge its own bounds, whatever the number of sessions relayed.
    assert report["problems"] == [] and report["status"] == 0, done.stdout + done.stderr
    assert done.returncode == 0
    assert sessions <= report["sessions"] <= sessions + 3
    assert report["proxy_args"] == proxy_args and report["copies"] * 2 <= report["sessions"]
    assert report["sessions_planned"] == report["sessions"] and report["garbage_lines"] > 0
    assert report["frames"] > 5 * report["sessions"]
    assert set(report["rss_at"]) == {"10", "50", "90"}
    at = [report["rss_at"][percent]["sessions"] for percent in ("10", "50", "90")]
    assert 0 < at[0] <= at[1] <= at[2] <= report["sessions"]
    assert report["rss_growth_mib"] is not None and len(report["rss_kib_by_sessions"]) == report["rss_samples"]
    assert f"{report['sessions']:,} sessions" in done.stdout and "proxy RSS at 10 %" in done.stdout


def test_soak_sessions_notices_a_frame_not_delivered(backend_id):
    """Through the bridge, a frame the proxy does not deliver (over --max-frame-bytes) is a failure."""
    done = soak("--sessions", "50", "--no-progress", "--proxy-args", "--bridge", "1:2", "--max-frame-bytes", "600",
                backend=backend_id)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED: stdout: copy" in done.stdout and " of 50 sessions" in done.stdout


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--sessions", "10", "--mb", "1"], "give --mb or --sessions, not both"),
        (["--mb", "1", "--proxy-args", "--bridge", "1:2"], "--bridge needs --sessions"),
        (["--sessions", "10", "--proxy-args", "--bridge", "one:two"], "expected EDITOR:AGENT"),
    ],
)
def test_soak_sessions_usage(backend_id, options, message):
    done = soak(*options, "--no-progress", backend=backend_id)
    assert done.returncode == 2 and message in done.stderr, done.stdout + done.stderr
