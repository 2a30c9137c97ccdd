"""The eviction benchmark (``python -m acp_fast.bench.eviction``) and its traffic
(:func:`acp_fast.traffic.tool_calls`): what they produce and count, not their speed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acp_fast import traffic
from acp_fast.bench import eviction


@pytest.mark.parametrize("mix", traffic.TOOL_CALL_MIXES)
def test_tool_calls_traffic(backend, mix):
    frames = traffic.tool_calls(500, mix, seed=3)
    assert frames == traffic.tool_calls(500, mix, seed=3)
    assert frames != traffic.tool_calls(500, mix, seed=4)
    assert all(frame.endswith(b"\n") and frame.count(b"\n") == 1 for frame in frames)
    store = backend.ToolCallStore(1)
    store.feed(b"".join(frames), changes=False)
    assert len(store) == 500
    statuses = [call["status"] for session in store.snapshot().values() for call in session.values()]
    finished = sum(s in ("completed", "failed") for s in statuses)
    if mix == "pending":
        assert (len(frames), finished) == (500, 0)
    elif mix == "finished":
        assert (len(frames), finished) == (500, 500)
    else:
        assert len(frames) == 500 + finished and 150 < finished < 350


def test_tool_calls_arguments():
    assert traffic.tool_calls(0, "pending") == []
    with pytest.raises(ValueError, match="mix must be one of"):
        traffic.tool_calls(10, "done")
    with pytest.raises(ValueError, match="n_tool_calls must be a non-negative int"):
        traffic.tool_calls(-1)


def test_run_counts_agree_between_backends():
    results = eviction.run(["rust", "python"], traffic.TOOL_CALL_MIXES, [400, None], 1_000, 1, progress=False)
    cells = {(c["backend"], c["mix"], c["bound"]): c for c in results["cells"]}
    assert len(cells) == 2 * 3 * 2
    for mix in traffic.TOOL_CALL_MIXES:
        rust, python = cells["rust", mix, 400], cells["python", mix, 400]
        assert (rust["retained"], rust["evicted"]) == (python["retained"], python["evicted"]) == (400, 600)
        assert cells["rust", mix, None]["retained"] == 1_000 and cells["rust", mix, None]["evicted"] == 0
        assert rust["frames_per_s"] > 0
    text = eviction.report(results)
    assert "| rust | pending | 1,000 |" in text and "bound 400" in text and "unbounded" in text


def test_command_end_to_end(tmp_path):
    out = tmp_path / "e.json"
    args = ["--tool-calls", "2000", "--bounds", "1000", "10000", "--repeat", "1", "--json", str(out)]
    done = subprocess.run([sys.executable, "-m", "acp_fast.bench.eviction", *args], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert "Target: ≥ 500,000 frames/s on rust, 2,000 pending tool calls at bound 10,000" in done.stdout.decode()
    assert len(json.loads(out.read_text())["cells"]) == 2 * 3 * 2


@pytest.mark.parametrize("bad", [["--bounds", "0"], ["--bounds", "x"], ["--tool-calls", "-5"], ["--repeat", "0"]])
def test_command_usage_errors(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        eviction.main(bad)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err
