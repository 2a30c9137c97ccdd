"""The load benchmark of ACP gateways (``python -m acp_fast.bench.serve``) runs end to end at a
tiny size against the SDK's own server (``AcpServer`` under uvicorn), over Streamable HTTP and
WebSocket, and reports every figure (not its speed). Needs the SDK 1.0 with its ``http`` extra,
uvicorn and aiohttp (pyproject's ``network`` extra; .ci/sdk-versions runs it in the SDK 1.0 venv);
skipped, with the reason, where they are missing."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from acp_fast.bench import serve


def _missing(transport: str) -> Any:
    try:
        version = importlib.metadata.version("agent-client-protocol")
    except importlib.metadata.PackageNotFoundError:
        return "agent-client-protocol is not installed"
    problem = serve.sdk_unavailable(transport)
    if problem is not None:
        return f"agent-client-protocol {version}: {problem}"
    if importlib.util.find_spec("aiohttp") is None:
        return "aiohttp (the load client) is not installed"
    return None


def bench(tmp_path: Any, connections: int, updates: int, *options: str) -> Any:
    """``python -m acp_fast.bench.serve`` against the SDK's server and ``acp-fast serve``, twice
    each: its output and the figures of ``--json``."""
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "acp_fast.bench.serve", "--connections", str(connections), "--updates", str(updates)]
        + [*options, "--repeat", "2", "--only", "sdk", "--only", "acp-fast serve", "--json", str(out)],
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done, json.loads(out.read_text())


@pytest.mark.parametrize(
    "transport",
    [
        pytest.param(t, marks=pytest.mark.skipif(_missing(t) is not None, reason=str(_missing(t))))
        for t in ("http", "ws")
    ],
)
def test_bench_serve_end_to_end_against_the_sdk_server(tmp_path: Any, transport: str) -> None:
    done, r = bench(tmp_path, 6, 4, "--transport", transport)
    assert r["workload"] == {
        "connections": 6,
        "updates": 4,
        "update_bytes": 400,
        "transport": transport,
        "interval_ms": 0.0,
    }
    sdk = r["contenders"]["sdk"]
    assert sdk["held"] == sdk["completed"] == 6 and sdk["failed"] == 0
    assert sdk["updates_received"] == 6 * 4
    assert sdk["frames"] == 6 * (4 + 1)  # the updates and the prompt's answer
    assert sdk["frames_per_s"] > 0
    assert sdk["repeat"] == 2 and sdk["frames_per_s"] in sdk["frames_per_s_runs"]
    assert sdk["held_min"] == sdk["completed_min"] == 6
    assert 0 < sdk["latency_us"]["p50"] <= sdk["latency_us"]["p99"] <= sdk["latency_us"]["max"]
    for part in ("gateway", "tree"):
        assert sdk[part]["cpu_seconds"] > 0 and sdk[part]["rss_peak_mib"] > 0
        assert sdk[part]["cpu_us_per_frame"] == pytest.approx(sdk[part]["cpu_seconds"] / sdk["frames"] * 1e6)
    assert sdk["tree"]["processes_peak"] >= 1
    serve_result = r["contenders"]["acp-fast serve"]
    if serve.serve_unavailable() is not None:  # the other contender is named, and skipped
        assert serve_result == {"skipped": "this acp-fast has no `serve` command"}
    text = done.stdout.decode()
    assert "| sdk | 6 / 6 | 6 |" in text
    assert "acp-fast serve" in text
    assert "throughput mode: updates unpaced" in text


_HTTP = pytest.mark.skipif(_missing("http") is not None, reason=str(_missing("http")))


@_HTTP
def test_bench_serve_latency_mode_paces_every_agent(tmp_path: Any) -> None:
    """``--interval MS``: the SDK's agent and the stdio agent behind ``acp-fast serve`` both wait
    MS ms before each update (so a prompt takes at least (updates - 1) × MS), every update arrives,
    and the report is in latency mode (the run of median p99 chosen)."""
    updates, interval_ms = 3, 40
    done, r = bench(tmp_path, 4, updates, "--interval", str(interval_ms))
    assert r["workload"]["interval_ms"] == interval_ms
    names = ["sdk"] + (["acp-fast serve"] if serve.serve_unavailable() is None else [])
    for name in names:
        c = r["contenders"][name]
        assert c["held"] == c["completed"] == 4 and c["failed"] == 0, name
        assert c["updates_received"] == 4 * updates, name
        assert c["prompt_seconds"] >= (updates - 1) * interval_ms / 1000, name  # paced, not a speed figure
        assert c["latency_us"]["p99"] in c["p99_us_runs"] and len(c["p99_us_runs"]) == 2, name
    assert f"latency mode: one update every {interval_ms} ms" in done.stdout.decode()
    assert "import json, sys, time" not in done.stderr.decode()  # the agent's source is not echoed


def test_interval_is_refused_below_zero() -> None:
    with pytest.raises(SystemExit):
        serve.main(["--interval", "-1", "--only", "sdk"])


def test_stderr_summary_hides_the_agent_source_and_cuts_long_lines() -> None:
    echoed = "listening; agent: python -S -c " + serve.STDIO_AGENT.replace("\n", "\\n") + " 20 400"
    text = serve.stderr_summary("\n".join(["one", "two", echoed, "x" * 500, "stopped"]), lines=4, width=100)
    assert text.split(" / ") == [
        "two",
        "listening; agent: python -S -c <bench agent> 20 400",
        "x" * 99 + "…",
        "stopped",
    ]
    assert serve.stderr_summary(serve.STDIO_AGENT) == "<bench agent>"


def test_median_run_by_frames_or_by_p99() -> None:
    runs = [
        {"held": 1, "completed": 1, "frames_per_s": fps, "latency_us": {"p99": p99}}
        for fps, p99 in ((10.0, 300.0), (30.0, 100.0), (20.0, 200.0))
    ]
    assert serve.median_run(runs)["frames_per_s"] == 20.0
    paced = serve.median_run(runs, paced=True)
    assert paced["latency_us"]["p99"] == 200.0
    assert paced["p99_us_runs"] == [300.0, 100.0, 200.0]
    assert paced["frames_per_s_runs"] == [10.0, 30.0, 20.0]


def test_process_tree_cpu_and_rss_of_this_process() -> None:
    import os

    tree = serve.process_tree(os.getpid())
    assert tree[0] == os.getpid()
    own, whole = serve.cpu(os.getpid())
    assert 0 < own <= whole
    assert serve._rss(os.getpid()) > 0
