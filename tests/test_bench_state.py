"""The state benchmark's own pieces: the growth exponent, the dict-accumulator baseline and the
SDK path compute what they claim (a baseline that computes something else measures nothing)."""

from __future__ import annotations

import json

import orjson
import pytest

from acp_fast import traffic
from acp_fast.bench.state import dict_accumulator, growth_exponent, memory_per_tool_call, sdk_accumulate


@pytest.mark.parametrize("k", [1.0, 1.5, 2.0, 0.5])
def test_growth_exponent_recovers_the_power(k):
    points = [(n, 3e-7 * n**k) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert growth_exponent(points) == pytest.approx(k, abs=1e-9)


def test_growth_exponent_of_noisy_linear_data_is_near_one():
    points = [(1_000, 1.05e-3), (10_000, 0.98e-2), (100_000, 1.02e-1), (1_000_000, 0.99)]
    assert growth_exponent(points) == pytest.approx(1.0, abs=0.02)


def test_growth_exponent_of_a_known_quadratic_with_a_constant_term():
    # t = a n + b n^2 tends to an exponent between 1 and 2; over 1k..1M with b n = a at n = 10k:
    points = [(n, 1e-6 * n + 1e-10 * n * n) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert 1.4 < growth_exponent(points) < 1.8
    assert growth_exponent(points[-2:]) == pytest.approx(1.96, abs=0.01)


def test_per_frame_spread_at_the_decades():
    from acp_fast.bench.report import per_frame_spread

    # 500 ns per frame at 1k, 10k and 100k, 550 at 1M; the 2k point (900 ns) is not a decade
    points = [(1_000, 5e-4), (2_000, 1.8e-3), (10_000, 5e-3), (100_000, 5e-2), (1_000_000, 0.55)]
    spread, text = per_frame_spread(points)
    assert spread == pytest.approx(0.10)
    assert text == "1,000 500 ns, 10,000 500 ns, 100,000 500 ns, 1,000,000 550 ns: slowest +10 % over fastest"
    # without two decades, every point counts
    spread, text = per_frame_spread([(50, 5e-5), (100, 1.5e-4), (200, 2e-4)])
    assert spread == pytest.approx(0.5) and text.startswith("50 1000 ns, 100 1500 ns, 200 1000 ns")


def test_growth_exponent_needs_two_points():
    with pytest.raises(ValueError):
        growth_exponent([(1_000, 1.0)])


@pytest.mark.parametrize("profile", traffic.PROFILES)
def test_dict_accumulator_matches_the_store(backend, profile):
    # The baseline must compute the same state, or the comparison is meaningless.
    data = traffic.generate(profile, 3000 if profile != "large" else 200, seed=5)
    version = traffic.PROTOCOL_VERSIONS[profile]
    store = backend.ToolCallStore(version)
    assert not [r for r in store.feed(data) if not isinstance(r, backend.Change)]
    for loads in (orjson.loads, json.loads):
        assert dict_accumulator(data.splitlines(), version, loads) == store.snapshot()


@pytest.mark.parametrize("profile", ["mixed", "large"])
def test_sdk_accumulators_agree_with_the_store_on_every_status(backend, profile):
    data = traffic.generate(profile, 400 if profile == "mixed" else 40, seed=6)
    store = backend.ToolCallStore(1)
    store.feed(data)
    sessions = sdk_accumulate(data.splitlines())
    got = {sid: {t: v.status for t, v in acc.snapshot().tool_calls.items()} for sid, acc in sessions.items()}
    want = {sid: {t: rec["status"] for t, rec in calls.items()} for sid, calls in store.snapshot().items()}
    assert {s: c for s, c in got.items() if c} == {s: c for s, c in want.items() if c}
    assert sum(map(len, want.values())) > 10


def test_memory_probe_reports_nothing_when_it_cannot_measure():
    assert memory_per_tool_call("_no_such_backend", 100) is None
