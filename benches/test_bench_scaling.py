"""State accumulation against stream length (the ``scaling`` task of ``acp-fast bench``).

One benchmark per (contender, stream length) on prefixes of one mixed-profile stream
(``ACP_BENCH_SCALING``, default 1,000, 2,000, 5,000, ... 100,000 frames; group
"scaling <contender>").
The garbage collector stays on (a long-running client pays for it). ``extra_info`` has the time
per frame; the terminal summary gives each contender's growth exponent (slope of log time vs
log frames; 1.0 is linear). A length whose pass is projected past ``ACP_BENCH_PASS_BUDGET`` from
the shorter lengths (``acp_fast.bench.state.project``) is skipped with the projection (the SDK's
accumulator is quadratic).
"""

from __future__ import annotations

import functools
import time

import pytest

from acp_fast import traffic
from acp_fast.bench import contenders as C
from acp_fast.bench import report
from acp_fast.bench import state as S
from conftest import BACKENDS, PASS_BUDGET, SCALING, SCALING_POINTS


@functools.lru_cache(maxsize=1)
def _makers():
    return report._scaling_makers(traffic.frames("mixed", max(SCALING), seed=0), BACKENDS)


def _params() -> list:
    out = []
    for contender in C.contenders("scaling", BACKENDS) if BACKENDS else []:
        for n in sorted(SCALING):
            out.append(pytest.param(contender, n, id=f"{contender.id}-{n}"))
    return out


@pytest.mark.parametrize("contender, n", _params())
def test_scaling(benchmark, contender, n):
    if contender.skip is not None:
        pytest.skip(contender.skip)
    points = sorted(SCALING_POINTS.get(contender.label, []))
    if points:
        projected = S.project(points, n)
        if projected > PASS_BUDGET:
            pytest.skip(
                f"one pass over {n:,} frames projected at {projected:,.1f} s, over ACP_BENCH_PASS_BUDGET {PASS_BUDGET:g} s"
            )
    run = _makers()[contender.id](n)
    benchmark.group = f"scaling {contender.label}"
    benchmark._disable_gc = False  # keep the collector on for this benchmark
    start = time.perf_counter()
    run()  # warm-up, and a first estimate
    once = time.perf_counter() - start
    rounds = 3 if once < 0.5 else 1
    benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=0)
    median = benchmark.stats.stats.median
    SCALING_POINTS.setdefault(contender.label, []).append((n, median))
    benchmark.extra_info.update(contender=contender.id, frames=n, ns_per_frame=median / n * 1e9)
