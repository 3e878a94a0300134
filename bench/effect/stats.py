"""Per-episode metrics and their summaries: a mean per arm with a 95% interval (Wilson for
rates, t for counts), and the paired difference against the direct arm (same task, same seed)
with a t interval on the per-pair differences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, mean, stdev
from typing import Any

from bench.effect.episode import Episode

Z95 = NormalDist().inv_cdf(0.975)
EXPLORE = ("list_dir", "read_file")

# name -> (label, is a rate)
METRICS: dict[str, tuple[str, bool]] = {
    "success": ("task success", True),
    "loop": ("episodes with a retry loop (same failing call 3+ times)", True),
    "repeats": ("repeated identical failing calls", False),
    "failing": ("failing calls", False),
    "calls_to_success": ("tool calls to success (successful episodes)", False),
    "gave_up": ("gave up right after the first failure", True),
    "explored": ("explored right after the first failure", True),
    "post_compaction_repeats": ("calls after compaction repeating a pre-compaction failure", False),
    "prompt_tokens": ("prompt tokens", False),
    "completion_tokens": ("completion tokens", False),
    "proxy_tokens": ("tokens the proxy added (in prompts)", False),
}


def t95(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (Cornish-Fisher)."""
    z = Z95
    if df <= 0:
        return math.inf
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def metrics(episode: Episode) -> dict[str, float | None]:
    """The episode's value for each metric (None where it does not apply)."""
    steps = episode.steps
    failed_keys: dict[str, int] = {}
    repeats = 0
    for step in steps:
        if step.failed:
            repeats += failed_keys.get(step.key, 0) > 0
            failed_keys[step.key] = failed_keys.get(step.key, 0) + 1
    first = next((i for i, s in enumerate(steps) if s.failed), None)
    gave_up = explored = None
    if first is not None:
        last = first == len(steps) - 1
        gave_up = float(last and episode.end == "answered" and not episode.success)
        following = steps[first + 1] if not last else None
        explored = float(
            following is not None
            and (
                following.name in EXPLORE
                or following.key.startswith(
                    (
                        'run_shell {"command": "ls',
                        'run_shell {"command": "grep',
                        'run_shell {"command": "cat',
                    )
                )
            )
        )
    post = None
    if episode.compacted:
        before = {s.key for s in steps if s.failed and not s.after_compaction}
        post = float(sum(1 for s in steps if s.after_compaction and s.key in before))
    return {
        "success": float(episode.success),
        "loop": float(max(failed_keys.values(), default=0) >= 3),
        "repeats": float(repeats),
        "failing": float(sum(s.failed for s in steps)),
        "calls_to_success": float(len(steps)) if episode.success else None,
        "gave_up": gave_up,
        "explored": explored,
        "post_compaction_repeats": post,
        "prompt_tokens": float(episode.prompt_tokens),
        "completion_tokens": float(episode.completion_tokens),
        "proxy_tokens": float(episode.proxy_tokens),
    }


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its 95% interval over `n` values."""

    n: int
    mean: float | None
    low: float | None
    high: float | None

    def to_json(self) -> dict[str, Any]:
        """Rounded for the report."""
        r = lambda x: None if x is None else round(x, 4)  # noqa: E731
        return {"n": self.n, "mean": r(self.mean), "ci95": [r(self.low), r(self.high)]}


def wilson(values: Sequence[float]) -> Estimate:
    """A rate with Wilson's score interval."""
    n = len(values)
    if not n:
        return Estimate(0, None, None, None)
    p = sum(values) / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return Estimate(n, p, max(0.0, centre - half), min(1.0, centre + half))


def t_interval(values: Sequence[float], floor: float | None = None) -> Estimate:
    """A mean with a t interval (no interval under 2 values), its low end not under `floor`
    (counts and tokens: 0)."""
    n = len(values)
    if not n:
        return Estimate(0, None, None, None)
    m = mean(values)
    if n < 2:
        return Estimate(n, m, None, None)
    half = t95(n - 1) * stdev(values) / math.sqrt(n)
    low = m - half if floor is None else max(floor, m - half)
    return Estimate(n, m, low, m + half)


def summarise(episodes: Sequence[Episode], reference: str = "direct") -> dict[str, Any]:
    """Per arm: each metric's estimate, tokens per successful task; per arm but the reference:
    the paired difference (arm minus reference, same task and seed) of each metric."""
    values = {id(e): metrics(e) for e in episodes}
    order = ("direct", "proxy", "control")
    arms = sorted(
        dict.fromkeys(e.arm for e in episodes),
        key=lambda a: (a not in order, order.index(a) if a in order else 0),
    )
    out: dict[str, Any] = {"arms": {}, "paired": {}}
    for arm in arms:
        mine = [e for e in episodes if e.arm == arm]
        row: dict[str, Any] = {"episodes": len(mine)}
        for name, (_, rate) in METRICS.items():
            got = [v for e in mine if (v := values[id(e)][name]) is not None]
            row[name] = (wilson(got) if rate else t_interval(got, floor=0.0)).to_json()
        wins = sum(e.success for e in mine)
        spent = sum(e.prompt_tokens + e.completion_tokens for e in mine)
        row["tokens_per_success"] = round(spent / wins, 1) if wins else None
        row["seconds_per_episode"] = round(mean(e.seconds for e in mine), 2) if mine else None
        out["arms"][arm] = row
    base = {(e.task, e.seed): e for e in episodes if e.arm == reference}
    for arm in arms:
        if arm == reference or not base:
            continue
        diffs: dict[str, Any] = {}
        for name in METRICS:
            pairs = [
                (a, b)
                for e in episodes
                if e.arm == arm
                and (e.task, e.seed) in base
                and (a := values[id(e)][name]) is not None
                and (b := values[id(base[(e.task, e.seed)])][name]) is not None
            ]
            diffs[name] = t_interval([a - b for a, b in pairs]).to_json()
        out["paired"][arm] = diffs
    return out
