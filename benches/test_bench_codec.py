"""Codec benchmarks: acp_fast backends against stdlib json, orjson and msgspec, same run.

Groups (pytest-benchmark ``group`` = "<group> <corpus>"): ``decode+fields``, ``materialize``,
``encode``, ``passthrough`` (see contenders.py). Every contender's result is checked against a
stdlib reference before it is timed: a wrong acp_fast result fails the benchmark, a baseline that
differs is only recorded (``extra_info["correct"]``). ``extra_info`` also holds the corpus size and
the throughput (``bytes_per_second`` over the median round).
"""

from __future__ import annotations

import pytest

from acp_fast.bench import contenders as C
from conftest import BACKENDS, ROUNDS


def _params(group: str) -> list:
    return [pytest.param(c, id=c.name.replace(" ", "-")) for c in C.contenders(group, BACKENDS)]


def _bench(benchmark, corpus, contender, references) -> None:
    if contender.skip is not None:
        pytest.skip(contender.skip)
    run = contender.make(corpus)
    problem = C.check(contender.group, corpus, run(), references(contender.group, corpus))
    if problem is not None and contender.is_acp_fast:
        pytest.fail(f"{contender.name} gives a wrong result on {corpus.name}: {problem}")
    benchmark.group = f"{contender.group} {corpus.name}"
    benchmark.extra_info.update(
        corpus=corpus.name,
        frames=corpus.n_frames,
        bytes=corpus.n_bytes,
        correct=problem is None,
    )
    if problem is not None:
        benchmark.extra_info["difference"] = problem
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    if stats is not None and stats.median > 0:
        benchmark.extra_info["bytes_per_second"] = corpus.n_bytes / stats.median
        benchmark.extra_info["frames_per_second"] = corpus.n_frames / stats.median
        benchmark.extra_info["MB_per_second"] = round(corpus.n_bytes / stats.median / 1e6, 1)


@pytest.mark.parametrize("contender", _params("decode+fields"))
def test_decode_fields(benchmark, corpus, contender, references):
    _bench(benchmark, corpus, contender, references)


@pytest.mark.parametrize("contender", _params("materialize"))
def test_materialize(benchmark, corpus, contender, references):
    _bench(benchmark, corpus, contender, references)


@pytest.mark.parametrize("contender", _params("encode"))
def test_encode(benchmark, corpus, contender, references):
    _bench(benchmark, corpus, contender, references)


@pytest.mark.parametrize("contender", _params("passthrough"))
def test_passthrough(benchmark, corpus, contender, references):
    _bench(benchmark, corpus, contender, references)
