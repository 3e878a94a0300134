"""The A/B report's outcome section (issue 28): did sessions succeed, per arm?

Outcomes are reported by the harness or an operator (proxy/session/outcome.py); a session
counts once, with its latest report. Sessions without one are left out of every figure here
(`unreported` counts them). Per arm:

- `reported`, `succeeded`, `failed`, `abandoned`
- `success_rate`: succeeded / reported, with a 95% **Wilson** score interval (`ci95`)
- `mean_score` over the sessions reported with a score (`scored` of them)
- `tokens_per_success`: the provider-reported tokens of the succeeded sessions over their
  number (the report's `tokens_per_session` per succeeded session, averaged). A session whose
  responses the proxy did not read has no token figure and is left out (`n_tokens`).

Differences, treatment - control, each in the shape of the report's other differences:

- success rate: **Newcombe's hybrid score interval** (Newcombe 1998, method 10), built from
  the two arms' Wilson intervals. Not Welch's t as for the session means: on 0/1 values Welch
  is the Wald interval, which is too narrow with few sessions or rates near 0 or 1 and shrinks
  to a point when every session of both arms succeeded (no variance). Newcombe's interval
  stays inside [-1, 1], never collapses, and needs only one reported session per arm.
- mean score and tokens per successful session: Welch's t on the per-session values, as for
  the other metrics (at least 2 sessions with a value per arm).
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from recovery_proxy.core.state import Outcome
from recovery_proxy.experiment.intervals import compare, newcombe_interval, wilson_interval

ARMS = ("treatment", "control")
RESULTS = ("succeeded", "failed", "abandoned")
METHOD = (
    "sessions with a reported outcome only, each once (its latest report): success rate with "
    "a 95% Wilson interval per arm; its difference (treatment - control) with Newcombe's hybrid "
    "score interval; mean score and tokens per successful session with a 95% Welch t interval"
)
Row = tuple[Outcome | None, float | None]  # a session's outcome and its tokens (None: unread)


def outcome_section(rows: dict[str, list[Row]]) -> dict[str, Any]:
    """The outcome figures of each arm's sessions, and the differences between the arms."""
    scores: dict[str, list[float]] = {}
    tokens: dict[str, list[float]] = {}
    section: dict[str, Any] = {"method": METHOD}
    for arm in ARMS:
        reported = [(o, t) for o, t in rows[arm] if o is not None]
        scores[arm] = [o.score for o, _ in reported if o.score is not None]
        tokens[arm] = [t for o, t in reported if o.result == "succeeded" and t is not None]
        section[arm] = _arm(len(rows[arm]), [o for o, _ in reported], scores[arm], tokens[arm])
    section["difference"] = {
        "success_rate": success_difference(section["treatment"], section["control"]),
        "mean_score": compare(scores["treatment"], scores["control"]),
        "tokens_per_success": compare(tokens["treatment"], tokens["control"]),
    }
    return section


def _arm(
    sessions: int, reported: list[Outcome], scores: list[float], tokens: list[float]
) -> dict[str, Any]:
    counts = {result: sum(o.result == result for o in reported) for result in RESULTS}
    n = len(reported)
    interval = wilson_interval(counts["succeeded"], n)
    return {
        "sessions": sessions,
        "reported": n,
        "unreported": sessions - n,
        **counts,
        "success_rate": counts["succeeded"] / n if n else None,
        "ci95": list(interval) if interval else None,
        "scored": len(scores),
        "mean_score": fmean(scores) if scores else None,
        "tokens_per_success": fmean(tokens) if tokens else None,
        "n_tokens": len(tokens),
    }


def success_difference(treatment: dict[str, Any], control: dict[str, Any]) -> dict[str, Any]:
    """Success rate, treatment - control, with Newcombe's 95% hybrid score interval."""
    t, c = treatment["success_rate"], control["success_rate"]
    row: dict[str, Any] = {
        "treatment": t,
        "control": c,
        "n_treatment": treatment["reported"],
        "n_control": control["reported"],
        "difference": None,
        "ci95": None,
        "note": "",
    }
    interval = newcombe_interval(
        treatment["succeeded"], treatment["reported"], control["succeeded"], control["reported"]
    )
    if interval is None:
        row["note"] = "no confidence interval: needs a reported outcome in each arm"
    else:
        row["difference"] = t - c
        row["ci95"] = list(interval)
    return row


HOW = "POST /v1/recovery/sessions/{session}/outcome, or recovery-proxy sessions outcome"
LABELS = {
    "success_rate": ("success rate", "{:+.3f}", "Newcombe hybrid score"),
    "mean_score": ("mean score", "{:+.3f}", "Welch t"),
    "tokens_per_success": ("tokens per successful session", "{:+,.0f}", "Welch t"),
}


def format_outcomes(section: dict[str, Any]) -> list[str]:
    """The outcome section for a person: per-arm figures, then the differences."""
    t, c = section["treatment"], section["control"]
    if not t["reported"] and not c["reported"]:
        return [f"outcomes: none reported yet ({HOW})"]
    lines = [
        f"outcomes (reported sessions only; without one: {t['unreported']} treatment, "
        f"{c['unreported']} control):",
        f"{'':32}{'treatment':>18}{'control':>18}",
    ]
    rows = (
        ("reported", lambda a: str(a["reported"])),
        ("succeeded / failed / abandoned", lambda a: "/".join(str(a[r]) for r in RESULTS)),
        ("success rate", lambda a: _number(a["success_rate"], "{:.3f}")),
        ("  95% Wilson interval", lambda a: _interval(a["ci95"], "{:.3f}")),
        ("mean score (sessions)", lambda a: _with_n(a["mean_score"], a["scored"], "{:.3f}")),
        (
            "tokens per successful session",
            lambda a: _with_n(a["tokens_per_success"], a["n_tokens"]),
        ),
    )
    for label, cell in rows:
        lines.append(f"  {label:30}{cell(t):>18}{cell(c):>18}")
    lines.append("  difference, treatment - control (95% interval):")
    for name, row in section["difference"].items():
        label, fmt, method = LABELS[name]
        n = f"n = {row['n_treatment']} vs {row['n_control']}"
        if row["difference"] is None:
            lines.append(f"    {label:31}n/a ({n})")
            continue
        text = f"    {label:31}{fmt.format(row['difference'])}"
        if row["ci95"] is None:
            lines.append(f"{text}  [no CI: fewer than 2 sessions in an arm ({n})]")
        else:
            lines.append(f"{text}  {_interval(row['ci95'], fmt)}  {n}  ({method})")
    return lines


def _number(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _interval(ci: list[float] | None, fmt: str) -> str:
    return "-" if ci is None else f"[{fmt.format(ci[0])}, {fmt.format(ci[1])}]"


def _with_n(value: float | None, n: int, fmt: str = "{:,.0f}") -> str:
    """`12,345 (4)`: a figure with how many sessions it covers ("-" for none)."""
    return "-" if value is None else f"{fmt.format(value)} ({n})"
