"""Fixtures of the Python benchmarks (pytest-benchmark).

The benchmarks are off in normal runs (``--benchmark-disable`` in pyproject addopts; ``benches/``
is not in ``testpaths``). Run them with::

    python -m pytest benches --benchmark-enable --benchmark-only

Corpus sizes can be changed with ``ACP_BENCH_MIXED_FRAMES`` (default 20000, ~400 B/frame) and
``ACP_BENCH_LARGE_FRAMES`` (default 1000, ~16 KB/frame); timed rounds per contender with
``ACP_BENCH_ROUNDS`` (default 5). The garbage collector is off while timing (as ``timeit`` does;
the allocation-heavy groups are otherwise dominated by collection pauses); set ``ACP_BENCH_GC=1``
to keep it on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))
try:
    import acp_fast  # noqa: F401
except ImportError:  # a source checkout without an installed package
    sys.path.insert(0, str(BENCHES.parent / "python"))

from acp_fast.bench import contenders as C  # noqa: E402

SIZES = {
    "mixed": int(os.environ.get("ACP_BENCH_MIXED_FRAMES", C.DEFAULT_SIZES["mixed"])),
    "large": int(os.environ.get("ACP_BENCH_LARGE_FRAMES", C.DEFAULT_SIZES["large"])),
}
ROUNDS = int(os.environ.get("ACP_BENCH_ROUNDS", "5"))
BACKENDS = C.load_backends()

_corpora: dict = {}
_references: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if os.environ.get("ACP_BENCH_GC", "") != "1" and hasattr(config.option, "benchmark_disable_gc"):
        config.option.benchmark_disable_gc = True


def pytest_report_header(config):  # noqa: ARG001
    lines = [C.backend_description(label, module) for label, module in BACKENDS.items()]
    lines.append("corpora: " + ", ".join(f"{name} {n} frames" for name, n in SIZES.items()))
    return ["acp-fast benchmarks: " + "; ".join(lines)]


def get_corpus(name: str) -> "C.Corpus":
    if name not in _corpora:
        _corpora[name] = C.build_corpus(name, SIZES[name], seed=0)
    return _corpora[name]


@pytest.fixture(params=sorted(SIZES), scope="session")
def corpus(request) -> "C.Corpus":
    """A traffic corpus: ``mixed`` (~400 B/frame) or ``large`` (~16 KB/frame)."""
    return get_corpus(request.param)


@pytest.fixture(scope="session")
def references():
    """``references(group, corpus)``: the expected result, computed once with the stdlib."""

    def get(group: str, corpus: "C.Corpus"):
        key = (group, corpus.name)
        if key not in _references:
            _references[key] = C.reference(group, corpus)
        return _references[key]

    return get
