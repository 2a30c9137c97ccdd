"""The soak test of ``acp-fast proxy`` (``benches/soak.py``; ``make soak`` relays 1 GB), short: about
25 MB of mixed agent traffic with 1 % garbage lines through the proxy on each backend. Every good
frame arrives byte-exact and in order, every garbage line is diverted to stderr in order, and the
proxy's RSS stays flat; and the checker notices when a garbage line is let through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
