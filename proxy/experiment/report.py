"""The A/B report: does recovery context change what agents do? (`recovery-proxy report`)

Sessions are split into arms by `arm_of(key, control_fraction)`; control sessions are
tracked like treatment ones but forwarded unchanged (proxy/pipeline.py). Each session's
`Stats` (proxy/core/state.py) gives one value per metric:

- `failure_rate`: failures / tool results
- `repeat_failure_rate`: repeat failures / failures (a failure on the same target with the
  same category as an earlier one, `notices.same_failure`)
- `loop_notice_rate`: repeat and loop notices fired (or, in control, that would have fired)
  per tool result
- `mean_streak`: mean length of its consecutive-failure streaks. A streak still open when
  the report runs (`consecutive_failures` > 0) counts as one streak of its length so far: an
  agent that never recovers is the worst case, not a missing one.
- `tokens_per_session`: input + output tokens the provider reported for the session's
  responses (read off the relayed responses; `state.provider.usage`)
- `streak_tokens`: the same for responses to requests inside a failure streak (the latest
  tool result had failed): what failure loops cost. Both need responses the proxy read.

At arm level only (pooled): `streaks_resolved`, failure streaks a later success resolved
(proxy/core/resolutions.py), and `mean_turns_to_resolution`, turns from a streak's first
failure to that success.

A session without the denominator (no tool results, no failures, no streak) has no value for
that metric and is left out of it (`n` says how many sessions each mean covers).

Method: the **session is the unit**. Assignment is randomised per session, and the tool
results of one session are not independent (one stuck agent produces dozens of repeats), so
pooling results would understate the variance. For each metric the report compares the mean
of the per-session values between arms: difference = treatment - control, with a 95%
**Welch t interval** (unequal variances and arm sizes, as a small control arm has;
Welch-Satterthwaite degrees of freedom). It needs at least 2 sessions with a value in each
arm; otherwise the interval is null and the report says so. With few sessions, or a few
extreme ones, treat the interval as a rough guide. The arm totals (`tool_results`,
`failures`, ...) are plain sums; `repeat_failure_rate` and `mean_streak` at arm level are
pooled (sum over sum), for reading, not for the test.

`outcomes`: did the sessions succeed, as their harness or an operator reported it: success
rate per arm with a Wilson interval, its difference with Newcombe's interval, mean score and
tokens per successful session (proxy/experiment/outcomes.py says how and why).

Continuity-index states (`state.links`) are not conversations and are skipped. Only live
sessions are read: a session expires `session_ttl_seconds` after its last request.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean
from typing import Any

from recovery_proxy.core.resolutions import call
from recovery_proxy.core.state import SessionState, Stats
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.experiment.intervals import compare
from recovery_proxy.experiment.outcomes import Row, format_outcomes, outcome_section

ARMS = ("treatment", "control")
METRICS = (
    "failure_rate",
    "repeat_failure_rate",
    "loop_notice_rate",
    "mean_streak",
    "tokens_per_session",
    "streak_tokens",
)
METHOD = (
    "session is the unit: per-session values, difference of means (treatment - control) "
    "with a 95% Welch t interval"
)


def streaks(state: SessionState) -> tuple[int, int]:
    """(total length, count) of the session's consecutive-failure streaks, the open one too."""
    stats, open_streak = state.stats, state.consecutive_failures
    return stats.streak_total + open_streak, stats.streaks + (1 if open_streak else 0)


def session_values(state: SessionState) -> dict[str, float | None]:
    """One value per metric for one session (None: the session has no denominator)."""
    s: Stats = state.stats
    total, count = streaks(state)
    usage = state.provider.usage
    read = usage.responses > 0
    return {
        "failure_rate": s.failures / s.results if s.results else None,
        "repeat_failure_rate": s.repeat_failures / s.failures if s.failures else None,
        "loop_notice_rate": s.loop_notices / s.results if s.results else None,
        "mean_streak": total / count if count else None,
        "tokens_per_session": float(usage.input + usage.output) if read else None,
        "streak_tokens": float(usage.streak_input + usage.streak_output) if read else None,
    }


def build_report(sessions: list[tuple[str, SessionState]], control_fraction: float) -> dict:
    """The report over `sessions` (key, state) as `list_sessions` returns them."""
    values: dict[str, dict[str, list[float]]] = {a: {m: [] for m in METRICS} for a in ARMS}
    totals: dict[str, dict[str, int]] = {a: _zero() for a in ARMS}
    outcomes: dict[str, list[Row]] = {a: [] for a in ARMS}
    skipped = 0
    known: list[dict[str, Any]] = []
    for key, state in sessions:
        known += known_fix_rows(key, state)
        if state.links:
            skipped += 1
            continue
        arm = arm_of(key, control_fraction)
        _add(totals[arm], state)
        session = session_values(state)
        for metric, value in session.items():
            if value is not None:
                values[arm][metric].append(value)
        outcomes[arm].append((state.outcome, session["tokens_per_session"]))
    report: dict[str, Any] = {
        "control_fraction": control_fraction,
        "method": METHOD,
        "skipped_index_states": skipped,
    }
    for arm in ARMS:
        report[arm] = _arm(totals[arm], values[arm])
    report["difference"] = {
        metric: compare(values["treatment"][metric], values["control"][metric])
        for metric in METRICS
    }
    report["outcomes"] = outcome_section(outcomes)  # did they succeed (experiment/outcomes.py)
    report["known_fixes"] = known
    return report


def known_fix_rows(key: str, state: SessionState) -> list[dict[str, Any]]:
    """Per known fix of a tenant's known-fixes entry (proxy/session/known.py): what it fixes,
    in how many sessions, and how often it was offered, followed and resolved the failure."""
    rows = []
    for fix in state.resolutions.known.values():
        r = fix.fix
        rows.append(
            {
                "tenant": key.partition(":")[0],
                "failed": call(r.operation, r.target, label=r.label),
                "category": r.category,
                "worked": call(r.tool, r.worked, label=r.worked_label),
                "via": [call(tool, target) for tool, target in r.via],
                "sessions": fix.seen,
                "offered": fix.offered,
                "followed": fix.followed,
                "resolved": fix.resolved,
            }
        )
    return rows


def _zero() -> dict[str, Any]:
    keys = ("sessions", "tool_results", "failures", "repeat_failures", "loop_notices")
    rest = ("escalations", "streak_total", "streaks", "tokens_injected")
    rest += ("streaks_resolved", "resolution_turns")
    usage = ("tokens", "streak_tokens", "tokens_added", "cost_usd", "streak_cost_usd")
    return dict.fromkeys(keys + rest + usage, 0)


def _add(totals: dict[str, Any], state: SessionState) -> None:
    s = state.stats
    total, count = streaks(state)
    totals["sessions"] += 1
    totals["tool_results"] += s.results
    totals["failures"] += s.failures
    totals["repeat_failures"] += s.repeat_failures
    totals["loop_notices"] += s.loop_notices
    totals["escalations"] += s.escalations
    totals["streak_total"] += total
    totals["streaks"] += count
    totals["tokens_injected"] += s.tokens_injected
    usage = state.provider.usage
    totals["tokens"] += usage.input + usage.output
    totals["streak_tokens"] += usage.streak_input + usage.streak_output
    totals["tokens_added"] += usage.added
    totals["cost_usd"] += usage.cost
    totals["streak_cost_usd"] += usage.streak_cost
    totals["streaks_resolved"] += state.resolutions.resolved  # proxy/core/resolutions.py
    totals["resolution_turns"] += state.resolutions.turns


def _arm(totals: dict[str, Any], values: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(totals)
    out["repeat_failure_rate"] = _ratio(totals["repeat_failures"], totals["failures"])
    out["mean_streak"] = _ratio(totals["streak_total"], totals["streaks"])
    out["mean_turns_to_resolution"] = _ratio(totals["resolution_turns"], totals["streaks_resolved"])
    out["per_session"] = {
        metric: {"n": len(v), "mean": fmean(v) if v else None} for metric, v in values.items()
    }
    return out


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


LABELS = {
    "failure_rate": "failures per tool result",
    "repeat_failure_rate": "repeat-failure rate",
    "loop_notice_rate": "loop notices per result",
    "mean_streak": "mean failure streak",
    "tokens_per_session": "tokens per session",
    "streak_tokens": "tokens in failure streaks",
}
WHOLE = {"tokens_per_session", "streak_tokens"}  # shown without decimals


def format_report(report: dict[str, Any]) -> str:
    """The report for a person: arm totals, then each difference with its interval."""
    t, c = report["treatment"], report["control"]
    lines = [
        f"A/B report (control fraction {report['control_fraction']:g})",
        "",
        f"{'':28}{'treatment':>12}{'control':>12}",
    ]
    rows: Iterable[tuple[str, str]] = (
        ("sessions", "sessions"),
        ("tool results", "tool_results"),
        ("failures", "failures"),
        ("repeat failures", "repeat_failures"),
        ("repeat-failure rate", "repeat_failure_rate"),
        ("repeat and loop notices (fired/would)", "loop_notices"),
        ("escalations", "escalations"),
        ("mean failure streak", "mean_streak"),
        ("streaks resolved", "streaks_resolved"),
        ("mean turns to resolution", "mean_turns_to_resolution"),
        ("tokens injected", "tokens_injected"),
        ("tokens (provider-reported)", "tokens"),
        ("  in failure streaks", "streak_tokens"),
        ("tokens the proxy added", "tokens_added"),
        ("cost, USD (priced models)", "cost_usd"),
        ("  in failure streaks", "streak_cost_usd"),
    )
    for label, key in rows:
        lines.append(f"{label:28}{_cell(t[key]):>12}{_cell(c[key]):>12}")
    lines += ["", "difference, treatment - control (session means, 95% Welch t interval):"]
    for metric, row in report["difference"].items():
        label = f"  {LABELS[metric]:26}"
        if row["difference"] is None:
            n = f"n = {row['n_treatment']} vs {row['n_control']}"
            lines.append(f"{label}n/a ({n}: an arm has no value, no confidence interval)")
            continue
        fmt = "{:+,.0f}" if metric in WHOLE else "{:+.3f}"
        line = label + fmt.format(row["difference"])
        if row["ci95"] is None:
            line += f"  [no CI: fewer than 2 sessions in an arm (n = {row['n_treatment']}"
            line += f" vs {row['n_control']})]"
        else:
            low, high = (fmt.format(v) for v in row["ci95"])
            line += f"  [{low}, {high}]  n = {row['n_treatment']} vs {row['n_control']}"
        lines.append(line)
    lines += ["", *format_outcomes(report["outcomes"])]
    if report.get("known_fixes"):
        lines += ["", "known fixes (learned per tenant; offered in treatment sessions only):"]
        for row in report["known_fixes"]:
            lines.append(
                f"  {row['tenant']}  {row['failed']} {row['category']} -> {row['worked']}: "
                f"{row['sessions']} sessions, offered {row['offered']}, followed "
                f"{row['followed']}, resolved {row['resolved']}"
            )
    if not c["sessions"]:
        lines += ["", "No control sessions: set RECOVERY_PROXY_CONTROL_FRACTION (e.g. 0.2)."]
    if report["skipped_index_states"]:
        lines.append(f"({report['skipped_index_states']} continuity-index states skipped)")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if value < 10 else f"{value:,.2f}"
    return str(value)
