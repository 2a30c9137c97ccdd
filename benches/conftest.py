"""Fixtures of the Python benchmarks (pytest-benchmark): the tasks of ``acp-fast bench``.

The benchmarks are off in normal runs (``--benchmark-disable`` in pyproject addopts; ``benches/``
is not in ``testpaths``). Run them with::

    python -m pytest benches --benchmark-enable --benchmark-only

Same corpora, contenders and checks as ``acp-fast bench`` (``acp_fast.bench.contenders``).
Environment knobs: ``ACP_BENCH_MB`` (corpus size per profile, default 4 MB),
``ACP_BENCH_FRAMES`` (``mixed=20000,large=1000``: frames per profile instead),
``ACP_BENCH_PROFILES`` (default ``mixed,large,tiny,v2``), ``ACP_BENCH_ROUNDS`` (timed rounds per
benchmark, default 5), ``ACP_BENCH_PASS_BUDGET`` (seconds: a contender whose pass over a corpus
is projected past it is skipped and the reason given, default 10), ``ACP_BENCH_SCALING``
(stream lengths of the scaling benchmarks, default the 1-2-5 series from 1,000 to 100,000). The garbage
collector is off while timing (as ``timeit`` does; ``ACP_BENCH_GC=1`` keeps it on), except in
the scaling benchmarks. A debug build of the native module is refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

BENCHES = Path(__file__).resolve().parent
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))
try:
    import acp_fast  # noqa: F401
except ImportError:  # a source checkout without an installed package
    sys.path.insert(0, str(BENCHES.parent / "python"))

from acp_fast import traffic  # noqa: E402
from acp_fast.bench import contenders as C  # noqa: E402
from acp_fast.bench import state as S  # noqa: E402

PROFILES = [p for p in os.environ.get("ACP_BENCH_PROFILES", ",".join(traffic.PROFILES)).split(",") if p]
MB = float(os.environ.get("ACP_BENCH_MB", C.DEFAULT_MB))
SIZES = {profile: C.frames_for_mb(profile, MB) for profile in PROFILES}
for _item in os.environ.get("ACP_BENCH_FRAMES", "").split(","):
    if "=" in _item:
        _name, _n = _item.split("=", 1)
        SIZES[_name.strip()] = int(_n)
ROUNDS = int(os.environ.get("ACP_BENCH_ROUNDS", "5"))
PASS_BUDGET = float(os.environ.get("ACP_BENCH_PASS_BUDGET", "10"))
SCALING = [
    int(n) for n in os.environ.get("ACP_BENCH_SCALING", "1000,2000,5000,10000,20000,50000,100000").split(",") if n
]

try:
    BACKENDS = C.load_backends()
    REFUSED = None
except C.DebugBuildError as exc:  # reported by pytest_configure
    BACKENDS = {}
    REFUSED = str(exc)

_corpora: Dict[str, C.Corpus] = {}
#: (contender, frames) -> median seconds, filled by the scaling benchmarks for the summary.
SCALING_POINTS: Dict[str, List[Tuple[int, float]]] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if REFUSED is not None and not config.getoption("benchmark_disable", False):
        raise pytest.UsageError(REFUSED)
    if os.environ.get("ACP_BENCH_GC", "") != "1" and hasattr(config.option, "benchmark_disable_gc"):
        config.option.benchmark_disable_gc = True


def pytest_report_header(config):
    lines = [C.backend_description(label, module) for label, module in BACKENDS.items()]
    lines.append("corpora: " + ", ".join(f"{name} {n} frames" for name, n in SIZES.items()))
    return ["acp-fast benchmarks: " + "; ".join(lines)]


def pytest_terminal_summary(terminalreporter):
    if not SCALING_POINTS:
        return
    terminalreporter.section("state accumulation: growth exponent (slope of log time vs log frames)")
    for name, points in SCALING_POINTS.items():
        points = sorted(points)
        per = ", ".join(f"{n:,}: {t / n * 1e9:.0f} ns/frame" for n, t in points)
        exponent = f"{S.growth_exponent(points):.3f}" if len(points) >= 2 else "–"
        terminalreporter.write_line(f"{name}: exponent {exponent} ({per})")


def get_corpus(name: str) -> C.Corpus:
    if name not in _corpora:
        _corpora[name] = C.build_corpus(name, SIZES[name], seed=0)
    return _corpora[name]


@pytest.fixture(params=PROFILES, scope="session")
def corpus(request) -> C.Corpus:
    """A traffic corpus of one profile (mixed, large, tiny, v2)."""
    return get_corpus(request.param)
