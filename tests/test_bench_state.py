"""The state benchmark's own pieces: the growth exponent and the dict-accumulator baseline."""

from __future__ import annotations

import pytest

from acp_fast import traffic
from acp_fast.bench.state import dict_accumulator, growth_exponent


@pytest.mark.parametrize("k", [1.0, 1.5, 2.0, 0.5])
def test_growth_exponent_recovers_the_power(k):
    points = [(n, 3e-7 * n**k) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert growth_exponent(points) == pytest.approx(k, abs=1e-9)


def test_growth_exponent_of_noisy_linear_data_is_near_one():
    points = [(1_000, 1.05e-3), (10_000, 0.98e-2), (100_000, 1.02e-1), (1_000_000, 0.99)]
    assert growth_exponent(points) == pytest.approx(1.0, abs=0.02)


def test_dict_accumulator_matches_the_store(backend):
    # The baseline must compute the same state, or the comparison is meaningless.
    data = traffic.generate("mixed", 3000, seed=5)
    store = backend.ToolCallStore(1)
    assert not [r for r in store.feed(data) if not isinstance(r, backend.Change)]
    assert dict_accumulator(data.splitlines(), version=1) == store.snapshot()
