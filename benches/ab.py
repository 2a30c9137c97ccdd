"""A/B of two builds of the native module, in one process (for performance work on a noisy box).

Between two `acp-fast bench` runs the machine's speed can drift by ±30 %; a change worth 3 % is
invisible that way. This loads two copies of ``acp_fast._native`` side by side (each under its
own package name, so both stay importable), then times the same task on the same data with one
and the other in alternating order, round after round, and prints the medians and their ratio.

    make build && cp python/acp_fast/_native*.so /tmp/old.so   # before the change
    ... change the Rust code ...
    make build && cp python/acp_fast/_native*.so /tmp/new.so
    python benches/ab.py /tmp/old.so /tmp/new.so --tasks decode state loads --profiles mixed v2

Tasks: ``decode`` (FrameDecoder.feed + the five routing fields), ``to_dict``, ``loads`` (per
line), ``dumps`` (fresh dicts from orjson each round; only the encoding is timed), ``state``
(ToolCallStore.feed), ``state-quiet`` (``changes=False``), ``passthrough`` (feed + encode).
Release builds only: a debug build is refused, as ``acp-fast bench`` does.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from types import ModuleType
from typing import Callable, Dict, List

import orjson

from acp_fast import traffic

TASKS = ("decode", "to_dict", "loads", "dumps", "state", "state-quiet", "passthrough")


def load(tag: str, path: str) -> ModuleType:
    """The native module in ``path``, imported as ``<tag>._native``."""
    spec = importlib.util.spec_from_file_location(f"{tag}._native", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"ab: cannot load a native module from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if getattr(module, "build_profile", "release") != "release":
        raise SystemExit(f"ab: {path} is a {module.build_profile} build; time release builds only")
    return module


def task_runner(task: str, m: ModuleType, buffer: bytes, lines: List[bytes], version: int) -> Callable[[], float]:
    """One timed pass of ``task`` with module ``m``; returns the seconds it took."""

    def timed(fn: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            gc.disable()
            try:
                start = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - start
            finally:
                gc.enable()
            del result
            return elapsed

        return run

    if task == "decode":
        FD = m.FrameDecoder
        return timed(lambda: [(x.kind, x.method, x.session_id, x.update_kind, x.tool_call_id) for x in FD().feed(buffer)])
    if task == "to_dict":
        FD = m.FrameDecoder
        return timed(lambda: [x.to_dict() for x in FD().feed(buffer)])
    if task == "loads":
        loads = m.loads
        return timed(lambda: [loads(line) for line in lines])
    if task == "passthrough":
        FD, encode = m.FrameDecoder, m.encode
        return timed(lambda: [encode(x) for x in FD().feed(buffer)])
    if task in ("state", "state-quiet"):
        Store, changes = m.ToolCallStore, task == "state"
        return timed(lambda: Store(version).feed(buffer, changes=changes))
    if task == "dumps":
        dumps = m.dumps

        def run() -> float:
            dicts = [orjson.loads(line) for line in lines]  # fresh objects, as acp-fast bench does
            gc.disable()
            try:
                start = time.perf_counter()
                out = [dumps(d) for d in dicts]
                elapsed = time.perf_counter() - start
            finally:
                gc.enable()
            del out
            return elapsed

        return run
    raise SystemExit(f"ab: unknown task {task!r}; one of {', '.join(TASKS)}")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="path of the baseline build (_native*.so)")
    parser.add_argument("new", help="path of the build to compare")
    parser.add_argument("--tasks", nargs="+", default=["decode", "state", "loads"], choices=TASKS)
    parser.add_argument("--profiles", nargs="+", default=["mixed"], choices=sorted(traffic.PROFILES))
    parser.add_argument("--frames", type=int, default=10_000, help="frames per corpus (default 10000)")
    parser.add_argument("--rounds", type=int, default=21, help="timed passes of each build (default 21)")
    args = parser.parse_args(argv)
    builds: Dict[str, ModuleType] = {"old": load("ab_old", args.old), "new": load("ab_new", args.new)}
    print(f"{'profile':8} {'task':12} {'old ns/frame':>13} {'new ns/frame':>13} {'new vs old':>11}")
    for profile in args.profiles:
        buffer = traffic.generate(profile, args.frames, seed=0)
        lines = [line for line in buffer.split(b"\n") if line]
        for task in args.tasks:
            version = 2 if profile == "v2" else 1
            runs = {tag: task_runner(task, m, buffer, lines, version) for tag, m in builds.items()}
            for run in runs.values():  # warm-up
                run()
            times: Dict[str, List[float]] = {"old": [], "new": []}
            for r in range(args.rounds):
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                for tag in order:
                    times[tag].append(runs[tag]())
            old = statistics.median(times["old"]) / len(lines) * 1e9
            new = statistics.median(times["new"]) / len(lines) * 1e9
            print(f"{profile:8} {task:12} {old:13.0f} {new:13.0f} {old / new:10.3f}×", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
