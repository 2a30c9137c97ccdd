"""The official ACP Python SDK with and without acp-fast (issue 6; ``python -m acp_fast.bench.sdk``).

Two benchmarks, each measured against the SDK in the same run (medians of repeated runs; progress
on stderr; a Markdown report on stdout):

* ``pipeline``:
  An SDK client (``acp.spawn_agent_process`` + ``ClientSideConnection``) receives N mixed
  ``session/update`` notifications (``acp_fast.traffic`` "mixed", filtered) that a peer process
  writes to its stdout pipe as fast as it can. Throughput counts from the first update handled
  to the last, so process start-up is left out. Run alternately without and with
  ``acp_sdk.install()``; the ratio is the ratio of the medians. Correctness: both must deliver
  the same number of updates of each type.
* ``accumulator``:
  ``acp.contrib.session_state.SessionAccumulator`` and acp-fast's drop-in replacement applying
  the same pre-validated ``SessionNotification`` models (one session, v1 "mixed" traffic). The
  SDK's is quadratic, so it runs to a few thousand updates (default 1k-4k, cumulative times
  taken in one pass); its growth exponent (slope of log time over log updates) projects it to N.
  Ours runs to N (default 100,000) with its own exponent, and is checked to end in the same
  snapshot as the SDK's at the SDK's largest size. A third row feeds ours the raw byte stream.

Refuses to run on a debug (or missing) native build: figures of an unoptimised core mean nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import acp_fast

from .. import traffic
from .state import growth_exponent

__all__ = ["accumulator_corpus", "growth_exponent", "main", "pipeline_corpus", "run_pipeline"]

#: The peer: copies a file of frames to its stdout, then waits for its stdin to close.
BLAST = (
    "import shutil, sys\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)\n"
    "sys.stdout.buffer.flush()\n"
    "sys.stdin.buffer.read()\n"
)


def _progress(message: str) -> None:
    print(f"[bench.sdk] {message}", file=sys.stderr, flush=True)


def project(points: Sequence[Tuple[int, float]], n: int) -> float:
    """Time at ``n`` from the last measured point and the fitted exponent (at least 1)."""
    last_n, last_t = points[-1]
    return float(last_t * (n / last_n) ** max(1.0, growth_exponent(points)))


# ---------------------------------------------------------------------------------------------
# Corpora


def _message(frame: bytes) -> acp_fast.Message:
    """The message of a one-message frame (the corpora hold no batches)."""
    message = acp_fast.decode(frame)
    assert isinstance(message, acp_fast.Message), frame
    return message


def pipeline_corpus(n: int, seed: int = 1) -> List[bytes]:
    """The first ``n`` ``session/update`` frames of seeded "mixed" traffic (several sessions)."""
    out: List[bytes] = []
    while len(out) < n:
        for frame in traffic.frames("mixed", 2 * (n - len(out)) + 100, seed):
            if _message(frame).method == "session/update":
                out.append(frame)
                if len(out) == n:
                    break
        seed += 1
    return out


def accumulator_corpus(n: int, seed: int = 1, session_id: str = "sess_bench") -> List[bytes]:
    """``n`` ``session/update`` frames of seeded "mixed" traffic moved to one session (the SDK's
    accumulator follows one session at a time: another session id resets it)."""
    out: List[bytes] = []
    for frame in pipeline_corpus(n, seed):
        obj = acp_fast.loads(frame)
        obj["params"]["sessionId"] = session_id
        out.append(acp_fast.dumps(obj) + b"\n")
    return out


# ---------------------------------------------------------------------------------------------
# Pipeline


class _CountingClient:
    """The client's handler: note each update's model type, time the first and the last."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.types: List[type] = []
        self.first = self.last = 0.0
        self.done = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        types = self.types
        types.append(update.__class__)
        n = len(types)
        if n == 1:
            self.first = time.perf_counter()
        elif n == self.expected:
            self.last = time.perf_counter()
            self.done.set()

    def counts(self) -> Dict[str, int]:
        return dict(collections.Counter(t.__name__ for t in self.types))

    async def request_permission(self, **kwargs: Any) -> Any:  # pragma: no cover - not in the corpus
        raise RuntimeError("the pipeline benchmark's corpus holds session/update notifications only")


async def _pipeline_once(path: str, n: int, fast: bool, timeout: float) -> Tuple[float, Dict[str, int]]:
    import acp

    from ..integrations import acp_sdk

    client = _CountingClient(n)
    with acp_sdk.installed() if fast else contextlib.nullcontext():
        # The client implements only what the corpus needs (session_update), not all of acp.Client.
        spawned = acp.spawn_agent_process(client, sys.executable, "-c", BLAST, path)  # type: ignore[arg-type]
        conn, _process = await spawned.__aenter__()
    try:
        expected_type = acp_sdk.FastConnection if fast else acp.connection.Connection
        if type(conn._conn) is not expected_type:  # pragma: no cover - a broken install
            raise RuntimeError(f"expected a {expected_type.__name__}, found {type(conn._conn).__name__}")
        await asyncio.wait_for(client.done.wait(), timeout)
    finally:
        await spawned.__aexit__(None, None, None)
    return (n - 1) / (client.last - client.first), client.counts()


def run_pipeline(path: str, n: int, fast: bool, timeout: float = 900.0) -> Tuple[float, Dict[str, int]]:
    """One run: (frames per second, updates received by type)."""
    gc.collect()
    return asyncio.run(_pipeline_once(path, n, fast, timeout))


def bench_pipeline(frames: int, repeats: int) -> Dict[str, Any]:
    _progress(f"pipeline: building {frames:,} mixed session updates")
    corpus = pipeline_corpus(frames)
    with tempfile.NamedTemporaryFile("wb", suffix=".ndjson", delete=False) as f:
        f.write(b"".join(corpus))
        path = f.name
    results: Dict[bool, List[float]] = {False: [], True: []}
    counts: Dict[bool, Dict[str, int]] = {}
    try:
        for i in range(repeats):
            for fast in (False, True):
                fps, seen = run_pipeline(path, frames, fast)
                results[fast].append(fps)
                counts.setdefault(fast, seen)
                if seen != counts[fast] or seen != counts[False]:
                    raise RuntimeError(f"the runs did not deliver the same updates: {seen} != {counts[False]}")
                _progress(f"pipeline run {i + 1}/{repeats} {'acp-fast' if fast else 'SDK':8s} {fps:>10,.0f} frames/s")
    finally:
        os.unlink(path)
    sdk_fps, fast_fps = statistics.median(results[False]), statistics.median(results[True])
    return {
        "frames": frames,
        "bytes": sum(map(len, corpus)),
        "repeats": repeats,
        "sdk": sdk_fps,
        "fast": fast_fps,
        "ratio": fast_fps / sdk_fps,
        "sdk_runs": results[False],
        "fast_runs": results[True],
        "counts": counts[False],
    }


# ---------------------------------------------------------------------------------------------
# Accumulator


def _accumulate(
    factory: Callable[[], Any], items: Sequence[Any], checkpoints: Sequence[int]
) -> Tuple[List[float], Any]:
    """One pass: cumulative seconds at each checkpoint, and the accumulator."""
    gc.collect()
    acc = factory()
    apply = acc.apply
    marks: List[float] = []
    stops = list(checkpoints)
    start = time.perf_counter()
    for i, item in enumerate(items[: stops[-1]], 1):
        apply(item)
        if i == stops[len(marks)]:
            marks.append(time.perf_counter() - start)
    return marks, acc


def bench_accumulator(updates: int, sdk_sizes: Sequence[int], repeats: int, sdk_repeats: int) -> Dict[str, Any]:
    from acp.contrib.session_state import SessionAccumulator as SdkAccumulator
    from acp.schema import SessionNotification

    from ..integrations.session_state import SessionAccumulator

    _progress(f"accumulator: building {updates:,} single-session updates")
    frames = accumulator_corpus(updates)
    notifications = [SessionNotification.model_validate(_message(f).params) for f in frames]
    ours_sizes = sorted({*sdk_sizes, *(s for s in (10_000, 20_000, 50_000) if s < updates), updates})

    sdk_marks: List[List[float]] = []
    for i in range(sdk_repeats):
        marks, reference = _accumulate(SdkAccumulator, notifications, sorted(sdk_sizes))
        sdk_marks.append(marks)
        _progress(
            f"accumulator SDK run {i + 1}/{sdk_repeats}: "
            + ", ".join(f"{n:,}: {t:.2f} s" for n, t in zip(sorted(sdk_sizes), marks))
        )
    ours_marks: List[List[float]] = []
    for i in range(repeats):
        marks, ours = _accumulate(SessionAccumulator, notifications, ours_sizes)
        ours_marks.append(marks)
        _progress(
            f"accumulator acp-fast run {i + 1}/{repeats}: "
            + ", ".join(f"{n:,}: {t:.3f} s" for n, t in zip(ours_sizes, marks))
        )
    # correctness: the same snapshot as the SDK's at the SDK's largest size
    check = SessionAccumulator()
    for n in notifications[: max(sdk_sizes)]:
        check.apply(n)
    same = check.snapshot() == reference.snapshot()
    # reading the whole final snapshot once (the lazy fields built from scratch)
    materialize_runs = []
    for i in range(repeats):
        fresh = ours if i == 0 else SessionAccumulator()  # views are cached once built: a fresh one each time
        if i:
            for n in notifications:
                fresh.apply(n)
        gc.collect()
        start = time.perf_counter()
        fresh.snapshot().materialize()
        materialize_runs.append(time.perf_counter() - start)
    # ours fed the raw byte stream
    data = b"".join(frames)
    feed_runs = []
    for _ in range(repeats):
        gc.collect()
        acc = SessionAccumulator()
        start = time.perf_counter()
        errors = acc.feed(data) + acc.finish()
        feed_runs.append(time.perf_counter() - start)
        if errors:  # pragma: no cover
            raise RuntimeError(f"the corpus has bad frames: {errors[:3]}")
    sdk_points = [(n, statistics.median(m[j] for m in sdk_marks)) for j, n in enumerate(sorted(sdk_sizes))]
    ours_points = [(n, statistics.median(m[j] for m in ours_marks)) for j, n in enumerate(ours_sizes)]
    return {
        "updates": updates,
        "repeats": repeats,
        "sdk_repeats": sdk_repeats,
        "sdk": sdk_points,
        "ours": ours_points,
        "feed": statistics.median(feed_runs),
        "materialize": statistics.median(materialize_runs),
        "sdk_exponent": growth_exponent(sdk_points),
        "ours_exponent": growth_exponent(ours_points),
        "sdk_projected": project(sdk_points, updates),
        "sdk_projected_quadratic": sdk_points[-1][1] * (updates / sdk_points[-1][0]) ** 2,
        "same_snapshot": same,
    }


# ---------------------------------------------------------------------------------------------
# Report


def _seconds(t: float) -> str:
    if t >= 3600:
        return f"{t / 3600:.1f} h"
    if t >= 60:
        return f"{t / 60:.1f} min"
    if t >= 1:
        return f"{t:.2f} s"
    return f"{t * 1e3:.1f} ms"


def _ratio(x: float) -> str:
    return f"{x:,.0f}×" if x >= 100 else f"{x:.1f}×"


def _machine() -> str:
    try:
        from importlib.metadata import version

        sdk_version = version("agent-client-protocol")
    except Exception:  # noqa: BLE001  # pragma: no cover - any failure means "not installed" here
        sdk_version = "?"
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                cwd=os.path.dirname(os.path.abspath(__file__)),
            ).stdout.strip()
            or "?"
        )
    except Exception:  # noqa: BLE001  # pragma: no cover - no git, or not a checkout: the report says "?"
        commit = "?"
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"acp-fast backend {acp_fast.BACKEND} ({_build_profile()}), agent-client-protocol {sdk_version}, commit {commit}"
    )


def _build_profile() -> Optional[str]:
    try:
        from .. import _native
    except ImportError:
        return None
    return getattr(_native, "build_profile", None)


def report(pipeline: Optional[Dict[str, Any]], accumulator: Optional[Dict[str, Any]]) -> str:
    lines = ["# acp-fast with the ACP Python SDK", "", _machine(), ""]
    if pipeline is not None:
        p = pipeline
        lines += [
            (
                f"## SDK client receiving {p['frames']:,} mixed session updates over a pipe "
                f"({p['bytes'] / p['frames']:.0f} B/frame; median of {p['repeats']} runs each, alternating)"
            ),
            "",
            "| client | frames/s | ratio |",
            "|---|---:|---:|",
            f"| SDK alone | {p['sdk']:,.0f} | 1.0× |",
            f"| SDK + acp-fast (`acp_sdk.install()`) | {p['fast']:,.0f} | {_ratio(p['ratio'])} |",
            "",
            "Every run delivered the same updates: "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(p["counts"].items()))
            + ".",
            "",
        ]
    if accumulator is not None:
        a = accumulator
        sdk = dict(a["sdk"])
        ours = dict(a["ours"])
        sizes = sorted(sdk)
        n = a["updates"]
        head = (
            "| accumulator | " + " | ".join(f"{s:,} updates" for s in sizes) + f" | {n:,} updates | growth exponent |"
        )
        lines += [
            (
                f"## SessionAccumulator: the same {n:,} single-session updates (SDK models; median of {a['sdk_repeats']} SDK "
                f"runs, {a['repeats']} acp-fast runs)"
            ),
            "",
            head,
            "|---|" + "---:|" * (len(sizes) + 2),
            "| SDK `acp.contrib.session_state` | "
            + " | ".join(_seconds(sdk[s]) for s in sizes)
            + f" | {_seconds(a['sdk_projected'])} (projected) | {a['sdk_exponent']:.2f} |",
            "| acp-fast `integrations.session_state` | "
            + " | ".join(_seconds(ours[s]) for s in sizes)
            + f" | {_seconds(ours[n])} | {a['ours_exponent']:.2f} |",
            "| ratio | "
            + " | ".join(_ratio(sdk[s] / ours[s]) for s in sizes)
            + f" | {_ratio(a['sdk_projected'] / ours[n])} (projected) | |",
            f"| acp-fast, `feed()` of the raw byte stream | {'| ' * len(sizes)}{_seconds(a['feed'])} | |",
            "",
            (
                f"Projection of the SDK with exponent 2.0 instead of the fitted one: {_seconds(a['sdk_projected_quadratic'])} "
                f"({_ratio(a['sdk_projected_quadratic'] / ours[n])}). Reading every field of acp-fast's final snapshot once "
                f"(after {n:,} updates: every tool-call view and message model built): {_seconds(a['materialize'])}."
            ),
            "",
            (
                f"Cost per update at the end: SDK {(sdk[sizes[-1]] - sdk[sizes[-2]]) / (sizes[-1] - sizes[-2]) * 1e3:.1f} ms "
                f"(between {sizes[-2]:,} and {sizes[-1]:,} updates), acp-fast "
                f"{(ours[n] - ours[sorted(ours)[-2]]) / (n - sorted(ours)[-2]) * 1e6:.1f} µs (between {sorted(ours)[-2]:,} and {n:,}). "
                f"acp-fast's snapshot equals the SDK's after {sizes[-1]:,} updates: {'yes' if a['same_snapshot'] else 'NO'}."
            ),
            "",
        ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m acp_fast.bench.sdk [--frames N] [--repeats R] [--updates N] [--sdk-sizes 1000,2000,4000]
    [--sdk-repeats R] [--only pipeline|accumulator] [--quick]``"""
    ap = argparse.ArgumentParser(
        prog="python -m acp_fast.bench.sdk", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--frames", type=int, default=100_000, help="session updates of the pipeline benchmark")
    ap.add_argument("--repeats", type=int, default=5, help="runs per contender (median reported)")
    ap.add_argument("--updates", type=int, default=100_000, help="updates applied by acp-fast's accumulator")
    ap.add_argument("--sdk-sizes", default="1000,2000,4000", help="checkpoints of the SDK accumulator's pass")
    ap.add_argument("--sdk-repeats", type=int, default=3, help="passes of the SDK accumulator (median reported)")
    ap.add_argument("--only", choices=("pipeline", "accumulator"), default=None)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run (figures not meaningful)")
    args = ap.parse_args(argv)
    profile = _build_profile()
    if profile != "release":
        print(
            f"acp_fast.bench.sdk: refusing to run on a {'missing' if profile is None else profile} native build "
            "(acp_fast._native.build_profile must be 'release'; build with `pip install -e .` or `maturin develop --release`)",
            file=sys.stderr,
        )
        return 2
    if args.quick:
        args.frames, args.repeats, args.updates, args.sdk_sizes, args.sdk_repeats = 5_000, 1, 5_000, "250,500,1000", 1
    sdk_sizes = sorted(int(s) for s in args.sdk_sizes.split(",") if s)
    if len(sdk_sizes) < 2 or sdk_sizes[-1] > args.updates:
        ap.error("--sdk-sizes needs at least two sizes, none above --updates")
    warnings.simplefilter("ignore", DeprecationWarning)
    pipeline = bench_pipeline(args.frames, args.repeats) if args.only in (None, "pipeline") else None
    accumulator = (
        bench_accumulator(args.updates, sdk_sizes, args.repeats, args.sdk_repeats)
        if args.only in (None, "accumulator")
        else None
    )
    print(report(pipeline, accumulator))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
