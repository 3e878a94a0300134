"""The report's 95% intervals: Welch's t for a difference of means, Wilson's score interval
for a proportion and Newcombe's hybrid score interval for a difference of two proportions."""

from __future__ import annotations

import math
from statistics import NormalDist, fmean, variance
from typing import Any

Z95 = NormalDist().inv_cdf(0.975)


def compare(treatment: list[float], control: list[float]) -> dict[str, Any]:
    """Difference of means (treatment - control) with a 95% Welch t interval."""
    out: dict[str, Any] = {
        "treatment": fmean(treatment) if treatment else None,
        "control": fmean(control) if control else None,
        "n_treatment": len(treatment),
        "n_control": len(control),
        "difference": None,
        "ci95": None,
        "note": "",
    }
    if out["treatment"] is not None and out["control"] is not None:
        out["difference"] = out["treatment"] - out["control"]
    interval = welch_interval(treatment, control)
    if interval is None:
        out["note"] = "no confidence interval: needs at least 2 sessions with a value in each arm"
    else:
        out["ci95"] = list(interval)
    return out


def welch_interval(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """95% interval for mean(a) - mean(b), Welch's t; None with fewer than 2 values in one."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = variance(a) / len(a), variance(b) / len(b)
    diff = fmean(a) - fmean(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return (diff, diff)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile_975(df) * se
    return (diff - half, diff + half)


def t_quantile_975(df: float) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (Welch's df may be
    fractional). Cornish-Fisher expansion around the normal quantile (Abramowitz & Stegun
    26.7.5): within 1% of the exact value just above df = 2 (4.27 vs 4.30), within 0.1% from
    df = 3 (3.179 vs 3.182). Up to df = 2 the exact values at df 1 (12.71) and 2 (4.30) are
    interpolated linearly, on the wide, conservative side (t(1.5) is 6.02, the line 8.50)."""
    if df <= 2:
        # t(1) = tan(pi (p - 1/2)), t(2) = (2p - 1) / sqrt(2p (1 - p)), p = 0.975: exact.
        t1, t2 = math.tan(math.pi * 0.475), 0.95 / math.sqrt(2 * 0.975 * 0.025)
        if df <= 1:
            return t1
        return t1 + (t2 - t1) * (df - 1)
    z = Z95
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def wilson_interval(successes: int, n: int) -> tuple[float, float] | None:
    """95% Wilson score interval for the proportion successes / n; None for n = 0. Unlike the
    Wald interval it stays inside [0, 1] and is not a point at 0 or n successes."""
    if n <= 0:
        return None
    p, z2 = successes / n, Z95 * Z95
    scale = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / scale
    half = Z95 / scale * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_interval(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float] | None:
    """95% interval for s1/n1 - s2/n2: Newcombe's hybrid score interval (1998, method 10),
    from the two Wilson intervals; None when an arm has no observation."""
    first, second = wilson_interval(s1, n1), wilson_interval(s2, n2)
    if first is None or second is None:
        return None
    (l1, u1), (l2, u2) = first, second
    p1, p2 = s1 / n1, s2 / n2
    diff = p1 - p2
    low = diff - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = diff + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return (low, high)
