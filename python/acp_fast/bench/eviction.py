"""Benchmark of the ``max_tool_calls`` bound: ``python -m acp_fast.bench.eviction``.

A ``ToolCallStore`` with a bound evicts a tool call each time a frame creates one past the bound
(DESIGN §7.8: the oldest finished one, else the oldest one). This times ``ToolCallStore.feed`` on
streams that create ``--tool-calls`` tool calls ([`acp_fast.traffic.tool_calls`][acp_fast.traffic.tool_calls]), for each
mix (``pending``: nothing ever finishes, so the victim is always the oldest; ``finished``: every
tool call is finished when created; ``mixed``: tool calls finish later, out of creation order) and
each bound, on both backends, with the unbounded store beside them as the reference. Each cell is
the median of ``--repeat`` passes (a fresh store per pass, collector off while timing), in frames
per second. The issue's target: at least 500,000 frames/s on the Rust backend with 100,000
pending tool calls at bound 10,000.

The ``permissions`` stream times the ``max_permissions`` bound the same way (``--permission-bounds``,
default 100, 1,000 and 10,000, and unbounded): ``--permission-requests`` permission requests in one
session (``permission_frames``), most answered out of order a few hundred frames later, one in
a hundred never answered, so the session always holds pending records before its resolved ones and
the bound drops the oldest resolved record on nearly every request. Its cost per frame should not
grow with the bound. ``--permission-requests 0`` leaves it out.

Prints Markdown tables (stdout) and progress (stderr); ``--json FILE`` writes the figures.
Refuses to time a debug build of the native module.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import importlib
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import builders as B
from .. import traffic
from .._outputs import check_target
from ..cli._usage import Parser, integer

BACKENDS = {"rust": "acp_fast._native", "python": "acp_fast._fallback"}
BOUNDS = (1_000, 10_000, 100_000)
PERMISSION_BOUNDS = (100, 1_000, 10_000)
_OPTIONS = [B.permission_option("allow_once", "Allow", "allow_once"), B.permission_option("no", "No", "reject_once")]
#: The target: (backend, mix, bound) -> frames/s at least.
TARGET = ("rust", "pending", 10_000, 500_000.0)


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _bound(text: str) -> Optional[int]:
    if text.lower() in ("none", "unbounded"):
        return None
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of tool calls or 'none', found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a bound is at least 1, found {text!r}")
    return value


def time_feed(module: Any, data: bytes, bound: Optional[int], repeat: int, changes: bool) -> Dict[str, Any]:
    """Median seconds of ``repeat`` passes of a fresh ``ToolCallStore(1, max_tool_calls=bound)``
    fed ``data`` in one call, with what the last store retained and evicted."""
    times: List[float] = []
    retained = evicted = 0
    for _ in range(repeat):
        store = module.ToolCallStore(1, max_tool_calls=bound)
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            store.feed(data, changes=changes)
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
        retained, evicted = len(store), store.evicted
        del store
    return {"seconds": statistics.median(times), "min": min(times), "retained": retained, "evicted": evicted}


def permission_frames(n_requests: int, seed: int = 0) -> List[bytes]:
    """Frames of one session: ``n_requests`` permission requests (ids 0, 1, ...; each names one of
    64 tool calls) and the client's answers: 99 in 100 requests are answered after 0 to 511 further
    requests (out of request order, selected or cancelled), the others never."""
    rng = random.Random(seed)
    due: List[Tuple[int, int]] = []
    out: List[bytes] = []
    for rid in range(n_requests):
        out.append(B.request_permission(rid, "sess-perm", f"tc-{rid % 64}", _OPTIONS))
        if rng.random() < 0.99:
            heapq.heappush(due, (rid + rng.randrange(512), rid))
        while due and due[0][0] <= rid:
            answered = heapq.heappop(due)[1]
            if rng.random() < 0.9:
                out.append(B.permission_response(answered, "allow_once"))
            else:
                out.append(B.permission_response(answered, cancelled=True))
    return out


def time_permissions(module: Any, data: bytes, bound: Optional[int], repeat: int) -> Dict[str, Any]:
    """Median seconds of ``repeat`` passes of a fresh ``ToolCallStore(1, max_permissions=bound)``
    fed ``data`` in one call, with the records the last store kept and its droppedPermissions."""
    times: List[float] = []
    kept = dropped = 0
    for _ in range(repeat):
        store = module.ToolCallStore(1, max_permissions=bound)
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            store.feed(data, changes=False)
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
        kept = len(store.permissions("sess-perm"))
        marker = store.state()["sessions"]["sess-perm"].get("_truncated", {})
        dropped = marker.get("droppedPermissions", 0)
        del store
    return {"seconds": statistics.median(times), "min": min(times), "kept": kept, "dropped": dropped}


def run_permissions(
    backends: Sequence[str],
    bounds: Sequence[Optional[int]],
    n_requests: int,
    repeat: int,
    seed: int = 0,
    progress: bool = True,
) -> List[Dict[str, Any]]:
    """Every (backend, bound) cell of the ``permissions`` stream: frames, frames/s, kept, dropped."""
    frames = permission_frames(n_requests, seed)
    data = b"".join(frames)
    cells: List[Dict[str, Any]] = []
    for name in backends:
        module = importlib.import_module(BACKENDS[name])
        for bound in bounds:
            if progress:
                _progress(f"{name}, permissions, bound {bound if bound is not None else 'none'}")
            timing = time_permissions(module, data, bound, repeat)
            cells.append(
                {
                    "backend": name,
                    "mix": "permissions",
                    "bound": bound,
                    "frames": len(frames),
                    "bytes": len(data),
                    "frames_per_s": len(frames) / timing["seconds"],
                    **timing,
                }
            )
    return cells


def run(
    backends: Sequence[str],
    mixes: Sequence[str],
    bounds: Sequence[Optional[int]],
    n_tool_calls: int,
    repeat: int,
    changes: bool = False,
    seed: int = 0,
    progress: bool = True,
) -> Dict[str, Any]:
    """Every (backend, mix, bound) cell: frames, frames/s, retained, evicted."""
    modules = {name: importlib.import_module(BACKENDS[name]) for name in backends}
    cells: List[Dict[str, Any]] = []
    for mix in mixes:
        frames = traffic.tool_calls(n_tool_calls, mix, seed=seed)
        data = b"".join(frames)
        for name, module in modules.items():
            for bound in bounds:
                if progress:
                    _progress(f"{name}, {mix}, bound {bound if bound is not None else 'none'}")
                timing = time_feed(module, data, bound, repeat, changes)
                cells.append(
                    {
                        "backend": name,
                        "mix": mix,
                        "bound": bound,
                        "frames": len(frames),
                        "bytes": len(data),
                        "frames_per_s": len(frames) / timing["seconds"],
                        **timing,
                    }
                )
    return {"tool_calls": n_tool_calls, "repeat": repeat, "changes": changes, "seed": seed, "cells": cells}


def _rate(value: float) -> str:
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:.0f} k"


def report(results: Dict[str, Any]) -> str:
    """Markdown: one row per (backend, mix), one column per bound; the target's verdict below."""
    cells = results["cells"]
    bounds: List[Optional[int]] = []
    for cell in cells:
        if cell["bound"] not in bounds:
            bounds.append(cell["bound"])
    heads = [f"bound {b:,}" if b is not None else "unbounded" for b in bounds]
    lines = [
        (
            f"`ToolCallStore.feed(changes={results['changes']})`, {results['tool_calls']:,} tool calls, "
            f"frames/s (median of {results['repeat']} passes):"
        ),
        "",
        "| backend | mix | frames | " + " | ".join(heads) + " |",
        "|---|---|---:|" + "---:|" * len(heads),
    ]
    rows: Dict[Tuple[str, str, int], Dict[Optional[int], Dict[str, Any]]] = {}
    for cell in cells:
        rows.setdefault((cell["backend"], cell["mix"], cell["frames"]), {})[cell["bound"]] = cell
    for (backend, mix, frames), by_bound in rows.items():
        values = [_rate(by_bound[b]["frames_per_s"]) if b in by_bound else "–" for b in bounds]
        lines.append(f"| {backend} | {mix} | {frames:,} | " + " | ".join(values) + " |")
    backend, mix, bound, floor = TARGET
    hit = next((c for c in cells if (c["backend"], c["mix"], c["bound"]) == (backend, mix, bound)), None)
    if hit is not None:
        verdict = "met" if hit["frames_per_s"] >= floor else "NOT met"
        lines += [
            "",
            (
                f"Target: ≥ {floor:,.0f} frames/s on {backend}, {results['tool_calls']:,} {mix} tool calls at bound "
                f"{bound:,}: {hit['frames_per_s']:,.0f} frames/s, {verdict}."
            ),
        ]
    return "\n".join(lines)


def report_permissions(cells: List[Dict[str, Any]], n_requests: int, repeat: int) -> str:
    """Markdown: one row per backend, one column per ``max_permissions`` bound."""
    bounds: List[Optional[int]] = []
    for cell in cells:
        if cell["bound"] not in bounds:
            bounds.append(cell["bound"])
    heads = [f"bound {b:,}" if b is not None else "unbounded" for b in bounds]
    lines = [
        (
            f"`ToolCallStore.feed(changes=False)`, {n_requests:,} permission requests in one session "
            f"(`max_permissions`), frames/s (median of {repeat} passes):"
        ),
        "",
        "| backend | stream | frames | " + " | ".join(heads) + " |",
        "|---|---|---:|" + "---:|" * len(heads),
    ]
    rows: Dict[Tuple[str, int], Dict[Optional[int], Dict[str, Any]]] = {}
    for cell in cells:
        rows.setdefault((cell["backend"], cell["frames"]), {})[cell["bound"]] = cell
    for (backend, frames), by_bound in rows.items():
        values = [_rate(by_bound[b]["frames_per_s"]) if b in by_bound else "–" for b in bounds]
        lines.append(f"| {backend} | permissions | {frames:,} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def _check_release() -> Optional[str]:
    try:
        from .. import _native
    except ImportError as e:
        return f"the native module is not built ({e})"
    if _native.build_profile != "release":
        return f"the native module is a {_native.build_profile} build; benchmarks time release builds only"
    return None


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m acp_fast.bench.eviction", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--tool-calls", type=integer(1), default=100_000, metavar="N", help="tool calls per stream (default 100000)"
    )
    p.add_argument(
        "--bounds",
        nargs="+",
        type=_bound,
        default=[*BOUNDS, None],
        metavar="N",
        help="max_tool_calls values; 'none' for the unbounded reference (default: 1000 10000 100000 none)",
    )
    p.add_argument(
        "--mixes", nargs="+", choices=traffic.TOOL_CALL_MIXES, default=list(traffic.TOOL_CALL_MIXES), metavar="MIX"
    )
    p.add_argument(
        "--permission-requests",
        type=integer(0),
        default=100_000,
        metavar="N",
        help="permission requests of the permissions stream; 0 leaves it out (default 100000)",
    )
    p.add_argument(
        "--permission-bounds",
        nargs="+",
        type=_bound,
        default=[*PERMISSION_BOUNDS, None],
        metavar="N",
        help="max_permissions values; 'none' for the unbounded reference (default: 100 1000 10000 none)",
    )
    p.add_argument("--backends", nargs="+", choices=list(BACKENDS), default=list(BACKENDS), metavar="NAME")
    p.add_argument("--repeat", type=integer(1), default=5, help="timed passes per cell (default 5)")
    p.add_argument("--changes", action="store_true", help="feed(changes=True) instead of changes=False")
    p.add_argument("--seed", type=integer(), default=0)
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    problem = check_target(args.json) if args.json else None
    if problem is not None:
        p.error(f"--json {args.json}: {problem}")
    if "rust" in args.backends:
        problem = _check_release()
        if problem:
            print(f"acp-fast bench eviction: {problem}", file=sys.stderr)
            return 2
    results = run(
        args.backends,
        args.mixes,
        args.bounds,
        args.tool_calls,
        args.repeat,
        changes=args.changes,
        seed=args.seed,
        progress=not args.no_progress,
    )
    if args.permission_requests:
        results["permission_requests"] = args.permission_requests
        results["permission_cells"] = run_permissions(
            args.backends,
            args.permission_bounds,
            args.permission_requests,
            args.repeat,
            seed=args.seed,
            progress=not args.no_progress,
        )
    print(report(results))
    if args.permission_requests:
        print()
        print(report_permissions(results["permission_cells"], args.permission_requests, args.repeat))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
