"""Columnar export (issue 19): how fast ``acp_fast.arrow.frames`` builds the frames table, against
orjson + ``pyarrow.Table.from_pylist`` building the same columns, and how Dask and Ray scale from
one worker to two on a corpus of several files (benches/RESULTS.md, "Columnar export").

    python benches/arrow_bench.py                         # everything (~2 min here)
    python benches/arrow_bench.py --only frames           # frames() against the baseline
    python benches/arrow_bench.py --only dask ray --corpus-mb 1200 --files 6
    python benches/arrow_bench.py --only ray-reserved     # Ray with its default operator reservation

frames() figures are medians (and the best) of ``--repeats`` runs after a warm-up pass (which
also checks the row count against the baseline's); the scaling takes the best of
each, the figure least disturbed by other work on a shared machine. The corpus (``mixed`` traffic, generated once into
``--dir``) is read from the page cache: the scaling measures parsing, not the disk. A worker is one
process with one thread; the task is a reduction (the sum of `bytes`), so that the rows are
parsed on the workers and not shipped back.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

import orjson
import pyarrow as pa

import acp_fast
from acp_fast import arrow, traffic


def _times(fn: Callable[[], Any], repeats: int) -> List[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    return statistics.median(_times(fn, repeats))


def baseline(data: bytes) -> pa.Table:
    """The frames columns with orjson and ``pyarrow.Table.from_pylist`` (valid lines only, no
    JSON-RPC checks: what a quick script would do)."""
    rows: List[Dict[str, Any]] = []
    append = rows.append
    loads, dumps = orjson.loads, orjson.dumps
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            m = loads(line)
        except orjson.JSONDecodeError as exc:
            append({"line": number, "kind": "invalid", "bytes": len(line), "error": str(exc), "raw": line})
            continue
        params = m.get("params") if type(m) is dict else None
        params = params if type(params) is dict else {}
        update = params.get("update")
        update = update if type(update) is dict else {}
        method = m.get("method")
        if method is not None:
            kind = "request" if "id" in m else "notification"
        else:
            kind = "error" if "error" in m else "response"
        append(
            {
                "line": number,
                "kind": kind,
                "method": method,
                "id": dumps(m["id"]).decode() if "id" in m else None,
                "session_id": params.get("sessionId"),
                "update_kind": update.get("sessionUpdate"),
                "tool_call_id": update.get("toolCallId"),
                "status": update.get("status"),
                "bytes": len(line),
                "error": None,
                "raw": line,
            }
        )
    return pa.Table.from_pylist(rows, schema=arrow.frames_schema())


def bench_frames(frames: int, repeats: int) -> Dict[str, Any]:
    data = traffic.generate("mixed", frames, seed=1)
    assert acp_fast.BACKEND == "rust", "run with the native backend built"
    rows = arrow.frames(data).num_rows  # also the warm-up pass: the first passes map fresh memory
    assert baseline(data).num_rows == rows
    rust = _times(lambda: arrow.frames(data), repeats)
    t_rust, t_best = statistics.median(rust), min(rust)
    sample = data[: len(data) // 4]
    t_base = _median_seconds(lambda: baseline(sample), max(1, repeats // 2)) * len(data) / len(sample)
    out = {
        "bytes": len(data),
        "frames": rows,
        "rust_s": t_rust,
        "rust_gb_s": len(data) / t_rust / 1e9,
        "rust_best_gb_s": len(data) / t_best / 1e9,
        "baseline_s": t_base,
        "baseline_gb_s": len(data) / t_base / 1e9,
        "speedup": t_base / t_rust,
    }
    print(
        f"frames(): {len(data) / 1e6:.0f} MB mixed, {out['rust_gb_s']:.2f} GB/s (best {out['rust_best_gb_s']:.2f}) "
        f"({out['frames'] / t_rust / 1e6:.2f} M frames/s); orjson + from_pylist {out['baseline_gb_s'] * 1000:.0f} MB/s; "
        f"x{out['speedup']:.1f}"
    )
    return out


def make_corpus(folder: str, total_mb: int, files: int) -> List[str]:
    """``files`` files of ``mixed`` traffic adding up to ``total_mb`` MB (each file is a generated
    stream repeated; made once, kept in ``folder``)."""
    os.makedirs(folder, exist_ok=True)
    per_file = total_mb * 1_000_000 // files
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"mixed-{i}.ndjson")
        paths.append(path)
        if os.path.exists(path) and os.path.getsize(path) >= per_file:
            continue
        chunk = traffic.generate("mixed", 40_000, seed=100 + i)
        with open(path, "wb") as f:
            written = 0
            while written < per_file:
                f.write(chunk)
                written += len(chunk)
    return paths


def _warm(paths: List[str]) -> int:
    """Read the corpus once (into the page cache); its size."""
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            while chunk := f.read(1 << 24):
                total += len(chunk)
    return total


def dask_run(paths: List[str], workers: int, blocksize: Optional[int], repeats: int) -> float:
    from dask.distributed import Client, LocalCluster

    import acp_fast.dask as adask

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cluster, Client(cluster):

        def task() -> Any:
            df = adask.read_frames(paths, blocksize=blocksize)
            return df["bytes"].sum().compute()

        task()  # workers started and warm
        return min(_times(task, repeats))


RAY_CHILD = r"""
import json, statistics, sys, time
import pyarrow as pa, pyarrow.compute as pc
import ray
import acp_fast.ray as aray
paths, workers, blocksize, repeats, RESERVATION = json.loads(sys.argv[1])
ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
# Ray Data reserves part of the CPUs for each operator and grants the rest as tasks finish: on two
# CPUs the read runs one task at a time for most of a pass (docs/ANALYTICS.md, "Dask and Ray").
ray.data.DataContext.get_current().op_resource_reservation_enabled = RESERVATION
def per_block(table):
    return pa.table({"bytes": [pc.sum(table["bytes"]).as_py()]})
def task():
    # The sum of each block in the reading task (Ray fuses the two maps): the rows stay there.
    ds = aray.read_frames(paths, blocksize=blocksize).map_batches(per_block, batch_format="pyarrow", batch_size=None)
    return sum(row["bytes"] for row in ds.take_all())
task()
times = []
for _ in range(repeats):
    start = time.perf_counter(); task(); times.append(time.perf_counter() - start)
print("SECONDS", min(times))
ray.shutdown()
"""


def ray_run(paths: List[str], workers: int, blocksize: Optional[int], repeats: int, reservation: bool = False) -> float:
    """In a child process: Ray is started once per process. ``reservation``: Ray Data's operator
    reservation as Ray sets it by default (on), or off (see RAY_CHILD)."""
    done = subprocess.run(
        [sys.executable, "-c", RAY_CHILD, json.dumps([paths, workers, blocksize, repeats, reservation])],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    for line in done.stdout.splitlines():
        if line.startswith("SECONDS "):
            return float(line.split()[1])
    raise RuntimeError(f"the Ray run failed: {done.stderr[-2000:]}")


def bench_scaling(engine: str, paths: List[str], size: int, blocksize: Optional[int], repeats: int) -> Dict[str, Any]:
    """``engine``: dask, ray (Ray Data's operator reservation off) or ray-reserved (Ray's default)."""

    def run(paths: List[str], workers: int, blocksize: Optional[int], repeats: int) -> float:
        if engine == "dask":
            return dask_run(paths, workers, blocksize, repeats)
        return ray_run(paths, workers, blocksize, repeats, reservation=engine == "ray-reserved")

    one = run(paths, 1, blocksize, repeats)
    two = run(paths, 2, blocksize, repeats)
    out = {"bytes": size, "files": len(paths), "one_s": one, "two_s": two, "speedup": one / two}
    print(
        f"{engine}: {size / 1e9:.2f} GB in {len(paths)} files; 1 worker {one:.2f} s ({size / one / 1e9:.2f} GB/s), "
        f"2 workers {two:.2f} s ({size / two / 1e9:.2f} GB/s): x{one / two:.2f}"
    )
    return out


ENGINES = ("frames", "dask", "ray", "ray-reserved")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--frames", type=int, default=200_000, help="frames of mixed traffic for frames() (~80 MB)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", default="/tmp/acp-arrow-corpus", help="where the corpus is generated")
    parser.add_argument("--corpus-mb", type=int, default=1200)
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--blocksize", type=int, default=None, help="bytes per partition (default: a file each)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)
    results: Dict[str, Any] = {"cpus": os.cpu_count(), "pyarrow": pa.__version__, "load": os.getloadavg()}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (other work on the machine slows all figures)")
    if "frames" in args.only:
        results["frames"] = bench_frames(args.frames, args.repeats)
    engines = [e for e in ENGINES[1:] if e in args.only]
    if engines:
        paths = make_corpus(args.dir, args.corpus_mb, args.files)
        size = _warm(paths)
        for engine in engines:
            results[engine] = bench_scaling(engine, paths, size, args.blocksize, max(1, args.repeats // 2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
