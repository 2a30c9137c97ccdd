"""benches/arrow_bench.py end to end on a tiny corpus: frames() (the routing columns, and every
column) and every contender (pyarrow.json, Polars, DuckDB) at one thread and at every core, each
checked against frames() in the warm-up pass, the report saying what each builds. No timing assertions: the figures are for benches/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import acp_fast

ROOT = Path(__file__).resolve().parent.parent
PYTHONPATH = str(Path(acp_fast.__file__).resolve().parent.parent)


def test_arrow_bench_runs_every_engine(tmp_path: Path) -> None:
    out = tmp_path / "arrow.json"
    argv = ["--only", "frames", "--frames-mb", "1", "--repeats", "2", "--dir", str(tmp_path), "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "arrow_bench.py"), *argv],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=PYTHONPATH),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())["frames"]
    counts = sorted({1, os.cpu_count() or 1})
    assert figures["thread_counts"] == counts
    assert figures["polars_pool"] == {str(n): n for n in counts}  # POLARS_MAX_THREADS was honoured
    # frames() is timed building the peers' routing columns, and with every column beside it
    assert "columns=[the 6 routing columns]" in figures["builds"]["acp-fast"]
    assert "every column" in figures["builds"]["acp-fast-all"]
    assert "frames(columns=[the 6 routing columns])" in done.stdout
    for corpus in ("mixed", "cjk"):
        assert figures[corpus]["bytes"] > 900_000
        for n in counts:
            row = figures[corpus][str(n)]
            assert set(row["mb_s"]) == {"acp-fast", "pyarrow", "polars", "duckdb", "acp-fast-all"}
            assert all(v > 0 for v in row["mb_s"].values())
            assert row["best_peer"] in ("pyarrow", "polars", "duckdb")
    assert "orjson" not in done.stdout and "from_pylist" not in (ROOT / "benches" / "arrow_bench.py").read_text()
