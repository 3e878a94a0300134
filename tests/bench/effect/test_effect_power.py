"""The power calculation: the figures the README quotes."""

from __future__ import annotations

import pytest

from bench.effect.power import episodes_per_arm, main


def test_figures() -> None:
    assert episodes_per_arm(0.15, 0.105) == 862  # loops 15%, -30% relative
    assert episodes_per_arm(0.40, 0.28) == 244  # loops 40%, -30% relative
    assert episodes_per_arm(0.40, 0.30) == 356  # loops 40%, -25% relative
    assert episodes_per_arm(0.12, 0.22) == 221  # success 12% -> 22%
    assert episodes_per_arm(0.50, 0.60) == 388  # success 50% -> 60%


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rate", "0.4", "--relative", "0.25"]) == 0
    assert (
        capsys.readouterr().out
        == "40.0% -> 30.0%: 356 episodes per arm (5% two-sided, 80% power)\n"
    )
    assert main(["--rate", "0.95", "--absolute", "0.1"]) == 2
