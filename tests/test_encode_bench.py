"""benches/encode_bench.py (acp-fast's writer and reader against orjson) stays runnable: every row
and task on tiny passes, each contender's output checked against orjson's before it is timed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson

SCRIPT = Path(__file__).resolve().parent.parent / "benches" / "encode_bench.py"


def bench_module():
    spec = importlib.util.spec_from_file_location("encode_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_row_and_task_runs_and_agrees_with_orjson(backend_id):
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    args = ["--rounds", "1", "--kb", "1", "--min-frames", "3"]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"backend: {backend_id};")
    rows = [line.split() for line in lines[2:]]
    names = [f"{c} {s}" for s in ("200B", "16KB") for c in ("ascii", "latin", "cjk", "emoji", "escapes")]
    names += ["mixed corpus", "tools corpus"]
    tasks = ["dumps", "encode", "loads", "materialize"]
    assert [(r[0], f"{r[1]} {r[2]}") for r in rows] == [(t, n) for n in names for t in tasks]
    assert all(r[-1].endswith("x") and float(r[-1][:-1]) >= 0 and float(r[-3]) > 0 for r in rows)


def test_corpora_are_deterministic_and_shaped_as_documented():
    bench = bench_module()
    mixed = bench.corpus("mixed", 2000, seed=0)
    assert mixed == bench.corpus("mixed", 2000, seed=0)
    sizes = [len(orjson.dumps(f)) for f in mixed]
    assert 300 < sum(sizes) / len(sizes) < 500
    assert 0.35 < bench.non_ascii_share(mixed) < 0.65
    kinds = {f["params"]["update"]["sessionUpdate"] for f in mixed if f.get("method") == "session/update"}
    assert {"agent_message_chunk", "tool_call", "tool_call_update", "plan"} <= kinds
    assert any("result" in f for f in mixed) and any(f.get("method") == "session/request_permission" for f in mixed)
    tools = bench.corpus("tools", 100, seed=0)
    sizes = [len(orjson.dumps(f)) for f in tools]
    assert 10_000 < sum(sizes) / len(sizes) < 25_000
    for cls in bench.CLASSES:
        for size in bench.SIZES.values():
            frame = orjson.dumps(bench.synthetic(cls, size, 1)[0])
            assert size * 0.9 < len(frame) < size * 1.4, (cls, size, len(frame))
            assert frame.isascii() == (cls in ("ascii", "escapes"))
