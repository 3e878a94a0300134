"""The statistics: interval arithmetic and per-episode metrics."""

from __future__ import annotations

import pytest

from bench.effect.episode import Episode, Step
from bench.effect.stats import metrics, summarise, t95, wilson


def test_t_quantiles() -> None:
    assert t95(10) == pytest.approx(2.228, abs=0.002)
    assert t95(30) == pytest.approx(2.042, abs=0.001)


def test_wilson() -> None:
    est = wilson([1.0] * 12 + [0.0] * 88)
    assert est.mean == pytest.approx(0.12)
    assert (est.low, est.high) == pytest.approx((0.0699, 0.1980), abs=0.001)


def _episode(arm: str, keys: list[tuple[str, bool]], success: bool, end: str) -> Episode:
    steps = [Step(i, k.split()[0], k, failed, False) for i, (k, failed) in enumerate(keys)]
    return Episode("path_moved-0", "path_moved", arm, 0, steps, len(steps), success, end)


def test_metrics_and_pairing() -> None:
    loop = _episode("direct", [('read_file {"path": "a"}', True)] * 3, False, "answered")
    fixed = _episode(
        "proxy",
        [('read_file {"path": "a"}', True), ('list_dir {"path": "."}', False)],
        True,
        "answered",
    )
    got = metrics(loop)
    assert (got["loop"], got["repeats"], got["failing"], got["gave_up"]) == (1.0, 2.0, 3.0, 0.0)
    assert metrics(fixed)["explored"] == 1.0 and metrics(fixed)["calls_to_success"] == 2.0
    summary = summarise([loop, fixed])
    assert summary["paired"]["proxy"]["repeats"]["mean"] == -2.0
    assert summary["arms"]["proxy"]["success"]["mean"] == 1.0
