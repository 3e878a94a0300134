"""The run's outputs: JSON (every episode and the summary), a markdown table per arm with
95% intervals and the paired differences, and a PNG of the headline rates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.effect.episode import Episode
from bench.effect.stats import METRICS

HEADLINE = ("success", "loop", "gave_up", "explored")


def _cell(estimate: dict[str, Any], rate: bool) -> str:
    m, (low, high) = estimate["mean"], estimate["ci95"]
    if m is None:
        return "n/a"
    if rate:
        text = f"{m:.0%}"
        return f"{text} ({low:.0%}-{high:.0%})" if low is not None else text
    digits = 0 if abs(m) >= 100 else 2
    text = f"{m:,.{digits}f}"
    return f"{text} ({low:,.{digits}f} to {high:,.{digits}f})" if low is not None else text


def _diff(estimate: dict[str, Any], rate: bool) -> str:
    m, (low, high) = estimate["mean"], estimate["ci95"]
    if m is None:
        return "n/a"
    scale, unit, digits = (100, " pt", 0) if rate else (1, "", 0 if abs(m) >= 100 else 2)
    text = f"{m * scale:+,.{digits}f}{unit}"
    if low is None:
        return text
    return f"{text} ({low * scale:+,.{digits}f} to {high * scale:+,.{digits}f})"


def markdown(meta: dict[str, Any], summary: dict[str, Any]) -> str:
    """The report's table: one column per arm, then each arm's paired difference."""
    arms = list(summary["arms"])
    paired = list(summary["paired"])
    head = ["metric (mean, 95% interval)", *arms, *(f"{a} - direct, paired" for a in paired)]
    lines = [
        f"# Effect benchmark: {meta['model']} ({meta['format']})",
        "",
        f"{meta['pairs']} paired (task, seed) pairs x {len(arms)} arms = {meta['episodes']} "
        f"episodes; {meta['tasks']} tasks in {meta['families']} families; seeds "
        f"{meta['seeds']}; at most {meta['max_turns']} model turns per episode. Command:",
        "",
        f"    {meta['command']}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" + "---:|" * (len(head) - 1),
    ]
    for name, (label, rate) in METRICS.items():
        cells = [_cell(summary["arms"][a][name], rate) for a in arms]
        cells += [_diff(summary["paired"][a][name], rate) for a in paired]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    per = [summary["arms"][a]["tokens_per_success"] for a in arms]
    lines.append(
        "| tokens per successful task | "
        + " | ".join("n/a" if v is None else f"{v:,.0f}" for v in per)
        + " |"
        + " |" * len(paired)
    )
    secs = [summary["arms"][a]["seconds_per_episode"] for a in arms]
    lines.append(
        "| seconds per episode | " + " | ".join(f"{s}" for s in secs) + " |" + " |" * len(paired)
    )
    lines += [
        "",
        "Rates: Wilson intervals; counts: t intervals; paired: t interval on the per-pair "
        "differences (same task, same seed). Per family, success by arm:",
        "",
        "| family | " + " | ".join(arms) + " |",
        "|---|" + "---:|" * len(arms),
    ]
    for family, row in meta["by_family"].items():
        lines.append(f"| {family} | " + " | ".join(f"{row[a]:.0%}" for a in arms) + " |")
    return "\n".join(lines) + "\n"


def by_family(episodes: Sequence[Episode]) -> dict[str, dict[str, float]]:
    """Success rate per family and arm."""
    out: dict[str, dict[str, float]] = {}
    for family in dict.fromkeys(e.family for e in episodes):
        out[family] = {}
        for arm in ("direct", "proxy", "control"):
            if not any(e.arm == arm for e in episodes):
                continue
            mine = [e.success for e in episodes if e.family == family and e.arm == arm]
            out[family][arm] = sum(mine) / len(mine) if mine else 0.0
    return out


def plot(path: Path, summary: dict[str, Any]) -> None:
    """Bars per headline rate and arm, with their 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(summary["arms"])
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(1, len(arms))
    for i, arm in enumerate(arms):
        means, lows, highs = [], [], []
        for name in HEADLINE:
            est = summary["arms"][arm][name]
            m = est["mean"] or 0.0
            low, high = est["ci95"]
            means.append(m)
            lows.append(m - (low if low is not None else m))
            highs.append((high if high is not None else m) - m)
        xs = [j + (i - (len(arms) - 1) / 2) * width for j in range(len(HEADLINE))]
        ax.bar(xs, means, width, yerr=[lows, highs], capsize=3, label=arm)
    ax.set_xticks(
        range(len(HEADLINE)), [METRICS[n][0].split(" (")[0] for n in HEADLINE], fontsize=8
    )
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of episodes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(
    prefix: Path, meta: dict[str, Any], summary: dict[str, Any], episodes: Sequence[Episode]
) -> list[Path]:
    """`prefix`.json, .md and .png; returns the paths written."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths = [prefix.with_suffix(".json"), prefix.with_suffix(".md"), prefix.with_suffix(".png")]
    document = {"meta": meta, "summary": summary, "episodes": [e.to_json() for e in episodes]}
    paths[0].write_text(json.dumps(document, indent=1) + "\n")
    paths[1].write_text(markdown(meta, summary) + f"\n![headline rates]({paths[2].name})\n")
    plot(paths[2], summary)
    return paths
