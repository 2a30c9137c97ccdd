"""State-accumulation benchmark (issue 3; ``python -m acp_fast.bench.state``).

Applies a seeded ACP stream (``acp_fast.traffic``) to a ``ToolCallStore`` straight from bytes and
compares it, in the same run, with what people write today: ``orjson.loads`` per line plus a
plain-dict accumulator that follows the same v1/v2 rules. Reports medians and ratios, the time per
frame at growing stream lengths with the growth exponent (slope of log time against log frames),
and the memory held per retained tool call.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import orjson

from .. import traffic

__all__ = ["dict_accumulator", "growth_exponent", "main"]

_DEFAULTS = {"status": "pending", "kind": "other"}


def dict_accumulator(lines: Sequence[bytes], version: int = 1) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """The baseline: ``orjson.loads`` each line, keep ``{session: {toolCallId: record}}`` with the
    API.md rules (what a careful hand-written Python client does)."""
    state: Dict[str, Dict[str, Dict[str, Any]]] = {}
    loads = orjson.loads
    for line in lines:
        msg = loads(line)
        if msg.get("method") != "session/update":
            continue
        params = msg["params"]
        update = params["update"]
        kind = update.get("sessionUpdate")
        if kind == "tool_call_update":
            calls = state.setdefault(params["sessionId"], {})
            tcid = update["toolCallId"]
            rec = calls.get(tcid)
            if rec is None:
                rec = calls[tcid] = {"toolCallId": tcid, "status": "pending", "kind": "other", "content": [], "locations": []}
            for k, v in update.items():
                if k == "sessionUpdate" or k == "toolCallId":
                    continue
                if v is None:
                    if version == 2:
                        if k in _DEFAULTS:
                            rec[k] = _DEFAULTS[k]
                        elif k == "content" or k == "locations":
                            rec[k] = []
                        else:
                            rec.pop(k, None)
                else:
                    rec[k] = list(v) if k == "content" else v
        elif kind == "tool_call":
            tcid = update["toolCallId"]
            rec = {"toolCallId": tcid, "status": "pending", "kind": "other", "content": [], "locations": []}
            for k, v in update.items():
                if k != "sessionUpdate" and v is not None:
                    rec[k] = list(v) if k == "content" else v
            state.setdefault(params["sessionId"], {})[tcid] = rec
        elif kind == "tool_call_content_chunk":
            calls = state.setdefault(params["sessionId"], {})
            tcid = update["toolCallId"]
            rec = calls.get(tcid)
            if rec is None:
                rec = calls[tcid] = {"toolCallId": tcid, "status": "pending", "kind": "other", "content": [], "locations": []}
            rec["content"].append(update["content"])
    return state


def growth_exponent(points: Sequence[Tuple[int, float]]) -> float:
    """Least-squares slope of log(total time) against log(frames): 1.0 is linear."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den


def _timed(fn: Callable[[], Any], rounds: int) -> List[float]:
    out = []
    for _ in range(rounds):
        gc.collect()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _contenders(data: bytes, lines: List[bytes]) -> Dict[str, Callable[[], Any]]:
    from .. import _fallback

    runs: Dict[str, Callable[[], Any]] = {}
    try:
        from .. import _native

        runs["acp-fast rust: ToolCallStore.feed"] = lambda: _native.ToolCallStore().feed(data)
    except ImportError:
        pass
    if "acp-fast rust: ToolCallStore.feed" in runs:
        runs["acp-fast rust: ToolCallStore.feed(changes=False)"] = lambda: _native.ToolCallStore().feed(data, changes=False)
    runs["acp-fast python: ToolCallStore.feed"] = lambda: _fallback.ToolCallStore().feed(data)
    runs["orjson.loads + dict accumulator"] = lambda: dict_accumulator(lines)
    return runs


_MEMORY_PROBE = r"""
import gc, sys
from acp_fast import traffic
backend = __import__("acp_fast." + sys.argv[1], fromlist=["x"])
data = traffic.generate("mixed", int(sys.argv[2]), seed=7)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
store = backend.ToolCallStore()
store.feed(data[: len(data) // 100])  # warm up allocator pools and caches
gc.collect()
before = rss()
store.feed(data[len(data) // 100 :])
gc.collect()
print(rss() - before, len(store))
"""


def memory_per_tool_call(module: str, n: int) -> Optional[float]:
    """Resident bytes held per retained tool call: RSS growth of a fresh process while a store
    takes ``n`` mixed-profile frames, divided by the tool calls it retains (Linux only)."""
    import subprocess

    try:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, module, str(n)], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    held, count = int(out[0]), int(out[1])
    return held / count if count else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m acp_fast.bench.state", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=100_000, help="frames of the throughput corpus (mixed profile)")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds per contender (median reported)")
    ap.add_argument("--scaling", default="1000,10000,100000,1000000", help="stream lengths for the growth exponent")
    args = ap.parse_args(argv)
    from .. import _fallback

    try:
        from .. import _native

        if _native.build_profile != "release":
            print("refusing to time a debug build of acp_fast._native", file=sys.stderr)
            return 2
    except ImportError:
        _native = None  # type: ignore[assignment]

    print(f"corpus: mixed profile, {args.frames} frames (seed 1)", flush=True)
    data = traffic.generate("mixed", args.frames, seed=1)
    lines = data.splitlines()
    print(f"  {len(data) / len(lines):.0f} B/frame, {len(data) / 1e6:.1f} MB", flush=True)
    runs = _contenders(data, lines)
    times: Dict[str, List[float]] = {k: [] for k in runs}
    for name, fn in runs.items():  # warm-up
        fn()
    for r in range(args.rounds):
        for name, fn in runs.items():
            times[name].extend(_timed(fn, 1))
        print(f"  round {r + 1}/{args.rounds}", end="\r", file=sys.stderr, flush=True)
    base = statistics.median(times["orjson.loads + dict accumulator"])
    print("\n| contender | median | frames/s | ns/frame | vs dict accumulator |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.1f} ms | {len(lines) / med / 1e6:.2f} M | {med / len(lines) * 1e9:.0f} | {base / med:.2f}x |")

    sizes = [int(s) for s in args.scaling.split(",") if s]
    backends = [("rust", _native)] if _native is not None else []
    backends.append(("python", _fallback))
    print("\nscaling (time per frame, median of 3; growth exponent = slope of log time vs log frames)")
    print("| backend | " + " | ".join(f"{n:,}" for n in sizes) + " | exponent |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for label, mod in backends:
        points = []
        for n in sizes:
            corpus = traffic.generate("mixed", n, seed=3)
            ts = _timed(lambda: mod.ToolCallStore().feed(corpus), 3 if n < 1_000_000 else 1)
            points.append((n, statistics.median(ts)))
            del corpus
            print(f"  {label} {n}", end="\r", file=sys.stderr, flush=True)
        cells = " | ".join(f"{t / n * 1e9:.0f} ns" for n, t in points)
        print(f"| {label} | {cells} | {growth_exponent(points):.3f} |")

    print("\nmemory per retained tool call (RSS delta, 100,000-frame mixed stream)")
    for label, mod in backends:
        per = memory_per_tool_call("_native" if label == "rust" else "_fallback", 100_000)
        print(f"  {label}: {'n/a' if per is None else f'{per:.0f} bytes'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
