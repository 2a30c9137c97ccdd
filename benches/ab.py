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
(ToolCallStore.feed), ``state-quiet`` (``changes=False``), ``state-tools`` (``max_entities=0``: the
entity rules off), ``passthrough`` (feed + encode), ``tool_calls`` / ``tool_calls-2``
(``ToolCallColumns(threads=1 / 2)``: the replay of ``acp_fast.arrow.tool_calls``; wall-clock
only: on a busy machine compare CPU time too).
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
from typing import Any, Callable, Dict, List

from acp_fast import traffic
from acp_fast.bench import contenders as C


def _state_tool_calls(module: ModuleType) -> Any:
    """``state`` with the entity rules off (``max_entities=0``: tool calls, terminals, plans and
    permissions only), on a build that has the option; a build from before entities is the plain
    store."""

    def make(corpus: Any) -> Callable[[], Any]:
        def run() -> Any:
            try:
                store = module.ToolCallStore(corpus.version, max_entities=0)
            except TypeError:
                store = module.ToolCallStore(corpus.version)
            store.feed(corpus.buffer)
            return store

        return run

    return make


def _tool_calls(threads: int) -> Callable[[ModuleType], Any]:
    """The replay of ``acp_fast.arrow.tool_calls`` on ``threads`` threads (``ToolCallColumns``),
    the corpus fed at once, the rows built."""

    def maker(module: ModuleType) -> Any:
        def make(corpus: Any) -> Callable[[], Any]:
            def run() -> Any:
                cols = module.ToolCallColumns(threads=threads)
                cols.feed(corpus.buffer)
                return cols.finish()

            return run

        return make

    return maker


# The passes `acp-fast bench` times for the acp-fast backends, by task (the same makers, so an A/B
# measures exactly what the benchmark reports; `state-tools` is `state` with `max_entities=0`).
MAKERS: Dict[str, Callable[[ModuleType], Any]] = {
    "decode": C._backend_fields,
    "to_dict": C._backend_to_dict,
    "loads": lambda m: C._loads_per_line(m.loads),
    "dumps": lambda m: C._dumps_each(m.dumps),
    "state": C._backend_state,
    "state-quiet": lambda m: C._backend_state(m, changes=False),
    "state-tools": _state_tool_calls,
    "passthrough": C._backend_passthrough,
    "tool_calls": _tool_calls(1),
    "tool_calls-2": _tool_calls(2),
}
TASKS = tuple(MAKERS)


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


def timed(run: Callable[[], Any]) -> float:
    """Seconds of one pass of ``run``, its input prepared untimed first, the collector off."""
    C.prepare(run)
    gc.disable()
    try:
        start = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    del result
    return elapsed


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
        corpus = C.build_corpus(profile, args.frames)
        for task in args.tasks:
            runs = {tag: MAKERS[task](m)(corpus) for tag, m in builds.items()}
            for run in runs.values():  # warm-up
                timed(run)
            times: Dict[str, List[float]] = {"old": [], "new": []}
            for r in range(args.rounds):
                for tag in ("old", "new") if r % 2 == 0 else ("new", "old"):
                    times[tag].append(timed(runs[tag]))
            old = statistics.median(times["old"]) / corpus.n_frames * 1e9
            new = statistics.median(times["new"]) / corpus.n_frames * 1e9
            print(f"{profile:8} {task:12} {old:13.0f} {new:13.0f} {old / new:10.3f}×", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
