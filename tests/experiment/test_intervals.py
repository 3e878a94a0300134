"""The report's intervals (proxy/experiment/intervals.py) against published values: Student's
t table, Welch by hand, Wilson and Newcombe from Newcombe (1998), Statistics in Medicine 17,
pp. 857-872 (Table I, the single proportion) and pp. 873-890 (Table II, method 10)."""

from __future__ import annotations

import itertools
import math
from statistics import fmean, variance

import pytest

from recovery_proxy.experiment.intervals import (
    newcombe_interval,
    t_quantile_975,
    welch_interval,
    wilson_interval,
)

# Student's t, 0.975 quantile (standard tables).
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980}


@pytest.mark.parametrize("df", sorted(T_TABLE))
def test_t_quantile_matches_the_table(df: int) -> None:
    assert t_quantile_975(df) == pytest.approx(T_TABLE[df], rel=2e-3)


def test_t_quantile_is_wider_for_fewer_degrees_of_freedom() -> None:
    values = [t_quantile_975(df / 4) for df in range(4, 400)]
    assert values[0] == pytest.approx(12.706, rel=1e-3)
    assert all(a >= b for a, b in itertools.pairwise(values))


def test_welch_interval_by_hand() -> None:
    a, b = [0.1, 0.4, 0.35, 0.2], [0.5, 0.7, 0.6]
    va, vb = variance(a) / 4, variance(b) / 3
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    half = t_quantile_975(df) * math.sqrt(va + vb)
    diff = fmean(a) - fmean(b)
    assert welch_interval(a, b) == pytest.approx((diff - half, diff + half))
    assert welch_interval(a, [0.5]) is None
    assert welch_interval([0.2, 0.2], [0.1, 0.1]) == pytest.approx((0.1, 0.1))


# Newcombe 1998a, Table I: 95% Wilson score intervals (method 3), to 4 decimals.
WILSON = {
    (81, 263): (0.2553, 0.3662),
    (15, 148): (0.0624, 0.1605),
    (0, 20): (0.0, 0.1611),
    (1, 29): (0.0061, 0.1718),
}
# Newcombe 1998b, Table II: 95% hybrid score intervals (method 10) for s1/n1 - s2/n2.
NEWCOMBE = {
    (56, 70, 48, 80): (0.0524, 0.3339),
    (9, 10, 3, 10): (0.1705, 0.8090),
    (6, 7, 2, 7): (0.0582, 0.8062),
    (5, 56, 0, 29): (-0.0381, 0.1926),
    (0, 10, 0, 20): (-0.1611, 0.2775),
    (0, 10, 0, 10): (-0.2775, 0.2775),
    (10, 10, 0, 20): (0.6791, 1.0),
    (10, 10, 0, 10): (0.6075, 1.0),
}


@pytest.mark.parametrize("counts", sorted(WILSON))
def test_wilson_matches_newcombes_table(counts: tuple[int, int]) -> None:
    assert wilson_interval(*counts) == pytest.approx(WILSON[counts], abs=5e-5)


@pytest.mark.parametrize("counts", sorted(NEWCOMBE))
def test_newcombe_matches_his_table(counts: tuple[int, int, int, int]) -> None:
    assert newcombe_interval(*counts) == pytest.approx(NEWCOMBE[counts], abs=5e-5)


def test_no_interval_without_an_observation_and_never_a_point() -> None:
    assert wilson_interval(0, 0) is None
    assert newcombe_interval(3, 4, 0, 0) is None
    low, high = wilson_interval(1, 1)  # type: ignore[misc]
    assert (round(low, 4), high) == (0.2065, 1.0)
    low, high = newcombe_interval(5, 5, 4, 4)  # type: ignore[misc]
    assert low < 0 < high  # every session succeeded in both arms: still an interval
