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


def test_permission_frames():
    frames = eviction.permission_frames(3000, seed=5)
    assert frames == eviction.permission_frames(3000, seed=5)
    requests = [f for f in frames if b"session/request_permission" in f]
    assert len(requests) == 3000
    assert 2600 < len(frames) - 3000 < 2970  # answers: 99 in 100, less the last ones still due
    answered = [json.loads(f)["id"] for f in frames if b"session/request_permission" not in f]
    assert answered != sorted(answered) and len(set(answered)) == len(answered)


def test_run_permissions_counts_agree_between_backends():
    cells = eviction.run_permissions(["rust", "python"], [100, 1000, None], 3000, 1, progress=False)
    by = {(c["backend"], c["bound"]): c for c in cells}
    assert len(by) == 6
    for bound in (100, 1000, None):
        rust, python = by["rust", bound], by["python", bound]
        assert (rust["kept"], rust["dropped"]) == (python["kept"], python["dropped"])
        assert rust["frames_per_s"] > 0
    assert by["rust", None]["dropped"] == 0 and by["rust", None]["kept"] == 3000
    # every record is kept or dropped
    assert by["rust", 100]["kept"] + by["rust", 100]["dropped"] == 3000
    assert by["rust", 100]["dropped"] > by["rust", 1000]["dropped"] > 0
    text = eviction.report_permissions(cells, 3000, 1)
    assert "| rust | permissions |" in text and "bound 100 |" in text and "unbounded" in text


def test_command_end_to_end(tmp_path):
    out = tmp_path / "e.json"
    args = ["--tool-calls", "2000", "--bounds", "1000", "10000", "--repeat", "1", "--json", str(out)]
    args += ["--permission-requests", "2000", "--permission-bounds", "100", "1000"]
    done = subprocess.run([sys.executable, "-m", "acp_fast.bench.eviction", *args], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert "Target: ≥ 500,000 frames/s on rust, 2,000 pending tool calls at bound 10,000" in done.stdout.decode()
    assert "2,000 permission requests in one session" in done.stdout.decode()
    figures = json.loads(out.read_text())
    assert len(figures["cells"]) == 2 * 3 * 2
    assert len(figures["permission_cells"]) == 2 * 2


@pytest.mark.parametrize(
    "bad",
    [
        ["--bounds", "0"],
        ["--bounds", "x"],
        ["--tool-calls", "-5"],
        ["--repeat", "0"],
        ["--permission-requests", "-1"],
        ["--permission-bounds", "0"],
    ],
)
def test_command_usage_errors(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        eviction.main(bad)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err
