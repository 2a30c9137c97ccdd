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


@pytest.mark.parametrize(
    "transport",
    [
        pytest.param(t, marks=pytest.mark.skipif(_missing(t) is not None, reason=str(_missing(t))))
        for t in ("http", "ws")
    ],
)
def test_bench_serve_end_to_end_against_the_sdk_server(tmp_path: Any, transport: str) -> None:
    out = tmp_path / "r.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_fast.bench.serve",
            "--connections",
            "6",
            "--updates",
            "4",
            "--transport",
            transport,
            "--repeat",
            "2",
            "--only",
            "sdk",
            "--only",
            "acp-fast serve",
            "--json",
            str(out),
        ],
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    r = json.loads(out.read_text())
    assert r["workload"] == {"connections": 6, "updates": 4, "update_bytes": 400, "transport": transport}
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
    assert sdk["tree"]["processes_peak"] >= 1
    serve_result = r["contenders"]["acp-fast serve"]
    if serve.serve_unavailable() is not None:  # the other contender is named, and skipped
        assert serve_result == {"skipped": "this acp-fast has no `serve` command"}
    text = done.stdout.decode()
    assert "| sdk | 6 / 6 | 6 |" in text
    assert "acp-fast serve" in text


def test_process_tree_cpu_and_rss_of_this_process() -> None:
    import os

    tree = serve.process_tree(os.getpid())
    assert tree[0] == os.getpid()
    own, whole = serve.cpu(os.getpid())
    assert 0 < own <= whole
    assert serve._rss(os.getpid()) > 0
