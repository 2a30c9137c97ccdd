"""``acp-fast bench`` never stops a contender on one noisy pass (issue 20).

Noise is injected into the clock the probe and the scaling task read: a pass that the machine
interrupted looks many times slower than it is. A contender whose cost is linear must run
however the noise falls; one whose cost really grows (the SDK's quadratic accumulator) must
still be stopped, on passes timed again. Fake clocks make the unit tests exact; the end-to-end
test runs real contenders with the noise added to real time.
"""

from __future__ import annotations

import io
import json
import sys
import time
from typing import Callable, List

import pytest

from acp_fast.bench import contenders as C
from acp_fast.bench import report, runner
from acp_fast.bench import state as S


class NoisyClock:
    """A fake clock: a pass costs ``cost(frames)`` seconds, and the passes whose number (from 1)
    is in ``hiccups`` cost ``spike`` seconds more (the machine busy for a moment)."""

    def __init__(self, cost: Callable[[int], float], hiccups: Callable[[int], bool], spike: float = 30.0) -> None:
        self.now = 0.0
        self.cost = cost
        self.hiccups = hiccups
        self.spike = spike
        self.passes = 0

    def __call__(self) -> float:
        return self.now

    def contender(self) -> C.Contender:
        def make(corpus: C.Corpus) -> Callable[[], None]:
            def run() -> None:
                self.passes += 1
                self.now += self.cost(corpus.n_frames) + (self.spike if self.hiccups(self.passes) else 0.0)

            return run

        return C.Contender("json", "decode", "fake", make)


def corpus(frames: int) -> C.Corpus:
    return C.Corpus("mixed", [b"{}\n"] * frames, 0)


def linear(n: int) -> float:
    return 2e-6 * n


def quadratic(n: int) -> float:
    return 1e-7 * n * n


def cliff(n: int) -> float:
    """Cheap while the prefix fits in the caches, then 20 times dearer per frame: linear again."""
    return 1e-7 * n if n <= 500 else 2e-6 * n


@pytest.mark.parametrize("hiccup", [1, 2, 3, 4])
def test_one_slow_pass_does_not_stop_a_linear_contender(monkeypatch, hiccup):
    clock = NoisyClock(linear, lambda k: k == hiccup)
    monkeypatch.setattr(runner, "clock", clock)
    found = runner.Probe()
    assert runner.over_budget(clock.contender(), corpus(20_000), 1.5, found=found) is None
    assert not found.stop
    assert found.cleared == 1  # the hiccup was seen, timed again, and cleared
    assert clock.passes <= 9


def test_a_slow_pass_in_every_three_does_not_stop_a_linear_contender(monkeypatch):
    clock = NoisyClock(linear, lambda k: k % 3 == 0, spike=5.0)
    monkeypatch.setattr(runner, "clock", clock)
    assert runner.over_budget(clock.contender(), corpus(50_000), 1.5) is None


def test_growth_at_a_cache_cliff_is_not_extrapolated(monkeypatch):
    # 500 -> 1,000 frames costs 40 times more (exponent 5.3): projected from there, a full pass
    # of 100,000 frames would take hours; measured further, the cost is linear and small.
    clock = NoisyClock(cliff, lambda k: False)
    monkeypatch.setattr(runner, "clock", clock)
    found = runner.Probe()
    assert runner.over_budget(clock.contender(), corpus(100_000), 1.5, found=found) is None
    assert [n for n, _ in found.points][:3] == [500, 1_000, 2_000]


def test_a_quadratic_contender_is_still_stopped_on_passes_timed_again(monkeypatch):
    clock = NoisyClock(quadratic, lambda k: k == 2)
    monkeypatch.setattr(runner, "clock", clock)
    found = runner.Probe()
    note = runner.over_budget(clock.contender(), corpus(20_000), 1.5, found=found)
    assert note is not None and found.stop
    assert note.startswith("stopped: one pass over 20,000 frames projected at")
    assert "fastest of 3 passes" in note and "--pass-budget 1.5 s" in note
    assert found.passes[-1] == 3 and found.linear  # the size the stop rests on was timed again
    # the decision rests on the fastest passes: no hiccup in them
    for n, seconds in found.points:
        assert seconds == pytest.approx(quadratic(n))


def test_growth_counts_at_the_largest_prefix_on_both_sizes_timed_again(monkeypatch):
    # Linear projections stay under the budget (0.8 s at most); the growth between 1,000 and
    # 2,000 frames (a quarter and a half of the corpus) projects 1.6 s: stopped, on the fastest
    # of three passes at both sizes, whatever pass the hiccup hit.
    for hiccup in range(1, 9):
        clock = NoisyClock(quadratic, lambda k, hiccup=hiccup: k == hiccup)
        monkeypatch.setattr(runner, "clock", clock)
        found = runner.Probe()
        note = runner.over_budget(clock.contender(), corpus(4_000), 1.5, found=found)
        assert note is not None and not found.linear, hiccup
        assert [n for n, _ in found.points] == [500, 1_000, 2_000] and found.passes[-2:] == [3, 3]
        assert "projected at 1.6 s, over --pass-budget 1.5 s" in note and "growth exponent 2.00" in note


def test_a_contender_too_slow_from_the_first_size_is_stopped_on_three_passes(monkeypatch):
    clock = NoisyClock(lambda n: 1e-3 * n, lambda k: False)  # 0.5 s for 500 frames: 20 s for all
    monkeypatch.setattr(runner, "clock", clock)
    found = runner.Probe()
    note = runner.over_budget(clock.contender(), corpus(20_000), 1.5, found=found)
    assert note is not None and "projected at 20.0 s or more" in note
    assert found.points == [(500, pytest.approx(0.5))] and found.passes == [3]


def test_scaling_does_not_stop_on_one_slow_pass():
    sizes = [1_000, 2_000, 5_000, 10_000, 20_000]
    clock = NoisyClock(lambda n: 1e-5 * n, lambda k: False)
    slow_pass = {"at": None}
    passes: List[int] = []

    def make(n: int) -> Callable[[], None]:
        def run() -> None:
            passes.append(n)
            clock.now += 1e-5 * n
            if n == 5_000 and slow_pass["at"] is None:
                slow_pass["at"] = len(passes)
                clock.now += 30.0  # the only pass over 5,000 frames, were it not timed again

        return run

    result = S.run_scaling("json", "linear", make, sizes, budget=2.0, clock=clock, repeat_below=0.01, repeats=1)
    assert result.stopped is None
    assert [n for n, _ in result.points] == sizes
    assert result.hiccups == 1
    assert result.exponent == pytest.approx(1.0)


class NoisyRealClock:
    """Real time, plus ``spike`` seconds inside every ``every``-th pass the probe times."""

    def __init__(self, every: int, spike: float) -> None:
        self.every, self.spike = every, spike
        self.calls = 0
        self.offset = 0.0
        self.spikes = 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0 and (self.calls // 2) % self.every == 0:  # the end of every n-th pass
            self.offset += self.spike
            self.spikes += 1
        return time.perf_counter() + self.offset


def test_end_to_end_noise_stops_only_the_quadratic_accumulator(monkeypatch, tmp_path):
    pytest.importorskip("acp")  # the SDK's accumulator is the one contender that must be stopped
    clock = NoisyRealClock(every=3, spike=20.0)
    monkeypatch.setattr(runner, "clock", clock)
    path = tmp_path / "r.json"
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = report.main(
        [
            "--tasks",
            "decode",
            "encode",
            "state",
            "--profiles",
            "mixed",
            "tiny",
            "--frames",
            "4000",
            "--budget",
            "0",
            "--min-runs",
            "1",
            "--max-runs",
            "1",
            "--pass-budget",
            "1.5",
            "--memory-frames",
            "0",
            "--no-progress",
            "--json",
            str(path),
        ]
    )
    assert code == 0, err.getvalue()
    assert clock.spikes >= 10  # the noise was there
    data = json.loads(path.read_text("utf-8"))
    stopped = {(r["task"], r["profile"], r["contender"]) for r in data["results"] if r["status"] == "stopped"}
    assert stopped <= {("state", "mixed", "sdk"), ("state", "tiny", "sdk")}, stopped
    assert ("state", "mixed", "sdk") in stopped
    assert sum(r["hiccups"] for r in data["results"]) >= 1
    assert data["machine_load"]["hiccups"] >= 1
    assert "looked too slow after one pass" in out.getvalue()
