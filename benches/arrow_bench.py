"""Columnar export (issues 19, 29): how fast ``acp_fast.arrow.frames`` builds the frames table
against the engines a user would pick instead (pyarrow.json with an explicit schema, Polars
``read_ndjson`` with a schema, DuckDB ``read_ndjson`` with its columns), each building the same
routing columns (method, id, sessionId, sessionUpdate, toolCallId, status) from the same files, on
one thread and on every core; and how Dask and Ray scale from one worker to two on a corpus of
several files (benches/RESULTS.md, "Columnar export").

    python benches/arrow_bench.py                         # everything
    python benches/arrow_bench.py --only frames           # frames() against the engines
    python benches/arrow_bench.py --only frames --frames-mb 120 --repeats 7
    python benches/arrow_bench.py --only dask ray --corpus-mb 1200 --files 6
    python benches/arrow_bench.py --only ray-reserved     # Ray with its default operator reservation

frames() and the engines: two corpora of about ``--frames-mb`` MB, generated once into ``--dir``
and read from the page cache: ``mixed`` traffic (about half its frames hold non-ASCII text) and
``cjk``, the same frames with every text content in CJK and emoji (as many as make ``--frames-mb``). After a warm-up pass (which also
checks that every engine reads the same rows and statuses as frames()), ``--repeats`` passes run
the contenders interleaved (each pass times every engine at every thread count once, in a rotated
order); each figure is the median, in MB/s of the file. The thread counts are 1 and every core
(``os.cpu_count()``): frames(threads=N); pyarrow with ``pa.set_cpu_count(N)`` and
``use_threads=N > 1``; DuckDB with ``SET threads=N``; Polars in a child process per thread count
started with ``POLARS_MAX_THREADS=N`` (read before Polars starts its pool), told by a pipe when to
run. Like for like, frames() builds only the routing columns the engines build
(``frames(columns=[...])``: no ``line``, ``kind``, ``bytes``, ``error`` nor ``raw``; every line is
still parsed and checked in full); ``acp-fast-all`` is frames() with every column, reported beside
it (the report starts with what each contender builds). The ratio of a thread count is frames() of
the routing columns against the fastest engine at that count. Each
engine's CPU time (``time.process_time``: every thread of its process) is reported too, as MB per
CPU-second: on a loaded machine the wall-clock figures depend on the share of the CPUs each engine
gets (a process with more threads gets more of it), the CPU figures much less.

Dask and Ray: a worker is one process with one thread (frames(threads=1) in each); the task is a
reduction (the sum of ``bytes``), so that the rows are parsed on the workers and not shipped back.
The scaling takes the best of each, the figure least disturbed by other work on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

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


# ---------------------------------------------------------------------------------------------
# frames() against pyarrow, Polars and DuckDB

#: The routing columns every contender builds, as (name, JSON path).
ROUTING = (
    ("method", ("method",)),
    ("id", ("id",)),
    ("session_id", ("params", "sessionId")),
    ("update_kind", ("params", "update", "sessionUpdate")),
    ("tool_call_id", ("params", "update", "toolCallId")),
    ("status", ("params", "update", "status")),
)
CJK = "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u4e2d\u6587\u5185\u5bb9\U0001f680\u2705"


def _cjk(value: Any, rng: random.Random) -> Any:
    """``value`` with the text of every ``{"type": "text", "text": ...}`` in CJK and emoji (the
    same number of characters)."""
    if isinstance(value, dict):
        out = {k: _cjk(v, rng) for k, v in value.items()}
        if out.get("type") == "text" and isinstance(out.get("text"), str):
            n = len(out["text"])
            out["text"] = "".join(rng.choice(CJK) for _ in range(n))
        return out
    if isinstance(value, list):
        return [_cjk(v, rng) for v in value]
    return value


def make_frames_corpora(folder: str, mb: int) -> Dict[str, str]:
    """The ``mixed`` and ``cjk`` corpora of about ``mb`` MB each (made once, kept in ``folder``)."""
    os.makedirs(folder, exist_ok=True)
    frames = mb * 1_000_000 // 395  # mixed traffic: about 395 B per frame
    paths = {name: os.path.join(folder, f"frames-{name}-{mb}mb.ndjson") for name in ("mixed", "cjk")}
    if not os.path.exists(paths["mixed"]):
        with open(paths["mixed"] + ".tmp", "wb") as f:
            f.write(traffic.generate("mixed", frames, seed=1))
        os.replace(paths["mixed"] + ".tmp", paths["mixed"])
    if not os.path.exists(paths["cjk"]):
        rng = random.Random(1)
        with open(paths["mixed"], "rb") as src, open(paths["cjk"] + ".tmp", "wb") as f:
            written = 0
            for line in src:  # until it is as large as the mixed corpus (CJK takes 3 bytes a character)
                frame = json.dumps(_cjk(json.loads(line), rng), ensure_ascii=False, separators=(",", ":")).encode()
                f.write(frame + b"\n")
                written += len(frame) + 1
                if written >= mb * 1_000_000:
                    break
        os.replace(paths["cjk"] + ".tmp", paths["cjk"])
    return paths


def _pyarrow_schema() -> Any:
    st = pa.string()
    update = pa.struct([("sessionUpdate", st), ("toolCallId", st), ("status", st)])
    return pa.schema(
        [("method", st), ("id", pa.int64()), ("params", pa.struct([("sessionId", st), ("update", update)]))]
    )


def run_pyarrow(path: str, threads: int) -> pa.Table:
    """pyarrow.json.read_json with an explicit schema (other fields ignored), then the columns."""
    import pyarrow.json as pj

    pa.set_cpu_count(threads)
    table = pj.read_json(
        path,
        read_options=pj.ReadOptions(use_threads=threads > 1),
        parse_options=pj.ParseOptions(explicit_schema=_pyarrow_schema(), unexpected_field_behavior="ignore"),
    )
    params = table.column("params")
    columns = {"method": table.column("method"), "id": table.column("id")}
    for name, route in ROUTING[2:]:
        chunks = []
        for chunk in params.chunks:
            for key in route[1:]:
                chunk = chunk.field(key)
            chunks.append(chunk)
        columns[name] = pa.chunked_array(chunks)
    return pa.table(columns)


DUCKDB_QUERY = """SELECT method, id, params.sessionId AS session_id,
params."update".sessionUpdate AS update_kind, params."update".toolCallId AS tool_call_id,
params."update".status AS status
FROM read_ndjson({path}, columns={method: 'VARCHAR', id: 'BIGINT',
  params: 'STRUCT(sessionId VARCHAR, "update" STRUCT(sessionUpdate VARCHAR, toolCallId VARCHAR, status VARCHAR))'})"""

_DUCKDB: Dict[int, Any] = {}


def run_duckdb(path: str, threads: int) -> pa.Table:
    """DuckDB read_ndjson with its columns, the routing columns selected, as an Arrow table."""
    import duckdb

    con = _DUCKDB.get(threads)
    if con is None:
        con = _DUCKDB[threads] = duckdb.connect()
        con.execute(f"SET threads={threads}")
    quoted = "'" + path.replace("'", "''") + "'"
    return con.sql(DUCKDB_QUERY.replace("{path}", quoted)).to_arrow_table()


POLARS_CHILD = r"""
import sys, time
import polars as pl
u = pl.Struct({"sessionUpdate": pl.Utf8, "toolCallId": pl.Utf8, "status": pl.Utf8})
schema = {"method": pl.Utf8, "id": pl.Int64, "params": pl.Struct({"sessionId": pl.Utf8, "update": u})}
p = pl.col("params")
select = [pl.col("method"), pl.col("id"), p.struct.field("sessionId").alias("session_id"),
          p.struct.field("update").struct.field("sessionUpdate").alias("update_kind"),
          p.struct.field("update").struct.field("toolCallId").alias("tool_call_id"),
          p.struct.field("update").struct.field("status").alias("status")]
print("READY", pl.thread_pool_size(), flush=True)
for line in sys.stdin:
    path, check = line.rstrip("\n").split("\t")
    start, cpu = time.perf_counter(), time.process_time()
    df = pl.read_ndjson(path, schema=schema).select(select)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    extra = ""
    if check == "1":
        extra = "\t" + str(df["status"].null_count()) + "\t" + str(df["method"].null_count())
    print(seconds, cpu, df.height, extra, sep="\t", flush=True)
"""


class PolarsChild:
    """Polars in a child process started with ``POLARS_MAX_THREADS=threads``."""

    def __init__(self, threads: int) -> None:
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", POLARS_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "READY":
            raise RuntimeError("the Polars child did not start")
        self.pool = int(ready[1])

    def run(self, path: str, check: bool = False) -> Tuple[float, float, int, List[int]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{path}\t{int(check)}\n")
        self.proc.stdin.flush()
        fields = self.proc.stdout.readline().rstrip("\n").split("\t")
        return float(fields[0]), float(fields[1]), int(fields[2]), [int(f) for f in fields[3:] if f]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


ENGINE_NAMES = ("acp-fast", "pyarrow", "polars", "duckdb", "acp-fast-all")
#: The engines the ratio compares frames() with.
PEERS = ("pyarrow", "polars", "duckdb")
#: What each contender builds, as the report states it.
BUILDS = {
    "acp-fast": "frames(columns=[the 6 routing columns]): the peers' columns, every line still fully checked",
    "pyarrow": "the 6 routing columns (id as int64)",
    "polars": "the 6 routing columns (id as int64)",
    "duckdb": "the 6 routing columns (id as BIGINT)",
    "acp-fast-all": "frames(): every column (line, kind, the 6 routing columns, bytes, error, raw)",
}


def bench_frames(mb: int, folder: str, repeats: int) -> Dict[str, Any]:
    assert acp_fast.BACKEND == "rust", "run with the native backend built"
    for engine in ENGINE_NAMES:
        print(f"  {engine}: {BUILDS[engine]}")
    cores = os.cpu_count() or 1
    counts = sorted({1, cores})
    paths = make_frames_corpora(folder, mb)
    polars = {n: PolarsChild(n) for n in counts}
    out: Dict[str, Any] = {
        "thread_counts": counts,
        "polars_pool": {n: polars[n].pool for n in counts},
        "builds": BUILDS,
    }
    try:

        def timed(engine: str, path: str, threads: int, check: bool = False) -> Tuple[float, float, Any]:
            """(wall seconds, CPU seconds of the process, the result)."""
            if engine == "polars":
                seconds, cpu, rows, nulls = polars[threads].run(path, check)
                return seconds, cpu, (rows, nulls)
            start, cpu = time.perf_counter(), time.process_time()
            if engine == "acp-fast":
                table = arrow.frames(path, threads=threads, columns=[name for name, _ in ROUTING])
            elif engine == "acp-fast-all":
                table = arrow.frames(path, threads=threads)
            elif engine == "pyarrow":
                table = run_pyarrow(path, threads)
            else:
                table = run_duckdb(path, threads)
            return time.perf_counter() - start, time.process_time() - cpu, table

        for corpus, path in paths.items():  # warm-up and check: the same rows everywhere
            expected = None
            for threads in counts:
                _, _, ours = timed("acp-fast", path, threads)
                if expected is None:
                    expected = ours
                    nulls = [ours.column("status").null_count, ours.column("method").null_count]
                assert ours.equals(expected), (corpus, threads)
                _, _, full = timed("acp-fast-all", path, threads)
                assert full.select(ours.column_names).equals(ours), (corpus, threads)
                for engine in PEERS:
                    _, _, got = timed(engine, path, threads, check=True)
                    if engine == "polars":
                        assert got == (expected.num_rows, nulls), (corpus, engine, got)
                    else:
                        for name, _route in ROUTING:
                            if name != "id":
                                assert got.column(name).to_pylist() == expected.column(name).to_pylist(), (engine, name)
        times: Dict[Tuple[str, str, int], List[float]] = {}
        cpus: Dict[Tuple[str, str, int], List[float]] = {}
        jobs = [(c, e, n) for c in paths for n in counts for e in ENGINE_NAMES]
        for i in range(repeats):
            shift = i % len(jobs)
            for corpus, engine, threads in jobs[shift:] + jobs[:shift]:
                seconds, cpu, _ = timed(engine, paths[corpus], threads)
                times.setdefault((corpus, engine, threads), []).append(seconds)
                cpus.setdefault((corpus, engine, threads), []).append(cpu)
    finally:
        for child in polars.values():
            child.close()
    pa.set_cpu_count(cores)
    for corpus, path in paths.items():
        size = os.path.getsize(path)
        rows: Dict[str, Any] = {"bytes": size}
        print(f"{corpus}: {size / 1e6:.0f} MB")
        for threads in counts:
            mbs = {e: size / 1e6 / statistics.median(times[(corpus, e, threads)]) for e in ENGINE_NAMES}
            best = max(PEERS, key=lambda e: mbs[e])
            ratio = mbs["acp-fast"] / mbs[best]
            per_cpu = {e: size / 1e6 / statistics.median(cpus[(corpus, e, threads)]) for e in ENGINE_NAMES}
            rows[str(threads)] = {"mb_s": mbs, "best_peer": best, "ratio": ratio, "mb_per_cpu_s": per_cpu}
            figures = ", ".join(f"{e} {mbs[e]:.0f}" for e in ENGINE_NAMES)
            print(f"  {threads} thread(s), MB/s: {figures}; frames(routing columns) / {best} x{ratio:.2f}")
            figures = ", ".join(f"{e} {per_cpu[e]:.0f}" for e in ENGINE_NAMES)
            print(f"    MB per CPU-second (all the process's threads): {figures}")
        out[corpus] = rows
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
            df = adask.read_frames(paths, blocksize=blocksize, threads=1)
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
    ds = aray.read_frames(paths, blocksize=blocksize, threads=1).map_batches(per_block, batch_format="pyarrow", batch_size=None)
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
    parser.add_argument("--frames-mb", type=int, default=120, help="MB of each frames() corpus")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dir", default="/tmp/acp-arrow-corpus", help="where the corpus is generated")
    parser.add_argument("--corpus-mb", type=int, default=1200)
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--blocksize", type=int, default=None, help="bytes per partition (default: a file each)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)
    results: Dict[str, Any] = {"cpus": os.cpu_count(), "pyarrow": pa.__version__, "load": os.getloadavg()}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (other work on the machine slows all figures)")
    if "frames" in args.only:
        results["frames"] = bench_frames(args.frames_mb, args.dir, args.repeats)
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
