"""The tasks of ``acp-fast bench`` as pytest benchmarks: every contender, every profile.

Tasks (pytest-benchmark ``group`` = "<task> <profile>"): ``decode`` (+ field access),
``materialize``, ``encode`` (fresh objects every round), ``passthrough``, ``state`` (see
``acp_fast.bench.contenders``). Every contender's result is checked against a stdlib reference
before it is timed: a wrong acp-fast result fails the benchmark, a baseline that differs is only
recorded (``extra_info["correct"]``). A contender that cannot run here (not installed, the SDK on
v2 traffic) or whose pass is projected past ``ACP_BENCH_PASS_BUDGET`` (the SDK's quadratic
accumulator) is skipped with the reason. ``extra_info`` also holds the corpus size and the
throughput over the median round.
"""

from __future__ import annotations

import pytest

from acp_fast.bench import contenders as C
from acp_fast.bench import report
from conftest import BACKENDS, PASS_BUDGET, ROUNDS


def _params(task: str) -> list:
    return [pytest.param(c, id=c.key.replace(" ", "-")) for c in C.contenders(task, BACKENDS)] if BACKENDS else []


def _bench(benchmark, corpus, contender) -> None:
    reason = C.skip_for_corpus(contender, corpus)
    if reason is not None:
        pytest.skip(reason)
    stopped = report.over_budget(contender, corpus, PASS_BUDGET)
    if stopped is not None:
        pytest.skip(stopped)
    run = contender.make(corpus)
    C.prepare(run)
    problem = C.check(contender.task, corpus, run(), contender)
    if problem is not None and contender.is_acp_fast:
        pytest.fail(f"{contender.label} ({contender.name}) gives a wrong result on {corpus.name}: {problem}")
    benchmark.group = f"{contender.task} {corpus.name}"
    benchmark.extra_info.update(
        task=contender.task,
        profile=corpus.name,
        contender=contender.id,
        variant=contender.name,
        frames=corpus.n_frames,
        bytes=corpus.n_bytes,
        correct=problem is None,
    )
    if problem is not None:
        benchmark.extra_info["difference"] = problem

    def setup():
        C.prepare(run)  # fresh input where the task needs it (encode), untimed

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    if stats is not None and stats.median > 0:
        benchmark.extra_info["bytes_per_second"] = corpus.n_bytes / stats.median
        benchmark.extra_info["frames_per_second"] = corpus.n_frames / stats.median
        benchmark.extra_info["MB_per_second"] = round(corpus.n_bytes / stats.median / 1e6, 1)


@pytest.mark.parametrize("contender", _params("decode"))
def test_decode(benchmark, corpus, contender):
    _bench(benchmark, corpus, contender)


@pytest.mark.parametrize("contender", _params("materialize"))
def test_materialize(benchmark, corpus, contender):
    _bench(benchmark, corpus, contender)


@pytest.mark.parametrize("contender", _params("encode"))
def test_encode(benchmark, corpus, contender):
    _bench(benchmark, corpus, contender)


@pytest.mark.parametrize("contender", _params("passthrough"))
def test_passthrough(benchmark, corpus, contender):
    _bench(benchmark, corpus, contender)


@pytest.mark.parametrize("contender", _params("state"))
def test_state(benchmark, corpus, contender):
    _bench(benchmark, corpus, contender)
