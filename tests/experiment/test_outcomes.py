"""The report's outcome section (proxy/experiment/outcomes.py) on hand-made sessions: per-arm
counts and success rates with Wilson intervals, Newcombe's interval for the difference, mean
score, tokens per successful session, unreported sessions left out, and the text."""

from __future__ import annotations

import pytest

from recovery_proxy.core.state import Outcome, OutcomeResult, SessionState, Stats
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.experiment.report import build_report, format_report

FRACTION = 0.5


def keys_in(arm: str, count: int) -> list[str]:
    keys = (f"5f1c0e2a9b7d3c41:{n:024x}" for n in range(10_000))
    return [k for k in keys if arm_of(k, FRACTION) == arm][:count]


def session(
    result: OutcomeResult | None, tokens: int | None = None, score: float | None = None
) -> SessionState:
    state = SessionState(stats=Stats(results=6, failures=2), updated=1.0)
    if result is not None:
        state.outcome = Outcome(result=result, score=score, time=2.0)
    if tokens is not None:
        usage = state.provider.usage
        usage.responses, usage.input, usage.output = 3, tokens - 100, 100
    return state


def sessions() -> list[tuple[str, SessionState]]:
    """Treatment: 9 of 10 reported succeeded, 1 failed, 2 unreported. Control: 3 of 10
    succeeded, 5 failed, 2 abandoned, 1 unreported (Newcombe's 9/10 vs 3/10)."""
    treatment, control = keys_in("treatment", 12), keys_in("control", 11)
    t = [session("succeeded", 10_000 + 1000 * n, score=0.8) for n in range(9)]
    t += [session("failed", 50_000, score=0.2), session(None, 7000), session(None)]
    c = [session("succeeded", 30_000 + 1000 * n) for n in range(3)]
    c += [session("failed", 40_000, score=0.1) for _ in range(5)]
    c += [session("abandoned"), session("abandoned", 2000), session(None, 9000)]
    return list(zip(treatment, t, strict=True)) + list(zip(control, c, strict=True))


def test_per_arm_figures_leave_unreported_sessions_out() -> None:
    section = build_report(sessions(), FRACTION)["outcomes"]
    t, c = section["treatment"], section["control"]
    assert (t["sessions"], t["reported"], t["unreported"]) == (12, 10, 2)
    assert (t["succeeded"], t["failed"], t["abandoned"]) == (9, 1, 0)
    assert (c["sessions"], c["reported"], c["unreported"]) == (11, 10, 1)
    assert (c["succeeded"], c["failed"], c["abandoned"]) == (3, 5, 2)
    assert (t["success_rate"], c["success_rate"]) == (0.9, 0.3)
    # Wilson, 95%, for 9/10 and 3/10 (the published cases are in test_intervals.py).
    assert t["ci95"] == pytest.approx([0.5958, 0.9821], abs=5e-5)
    assert c["ci95"] == pytest.approx([0.1078, 0.6032], abs=5e-5)
    assert (t["scored"], t["mean_score"]) == (10, pytest.approx(0.74))
    assert (c["scored"], c["mean_score"]) == (5, pytest.approx(0.1))
    # Tokens of the succeeded sessions over their number: failed, abandoned, unread and
    # unreported sessions do not count.
    assert (t["tokens_per_success"], t["n_tokens"]) == (14_000, 9)
    assert (c["tokens_per_success"], c["n_tokens"]) == (31_000, 3)


def test_the_differences_and_their_intervals() -> None:
    difference = build_report(sessions(), FRACTION)["outcomes"]["difference"]
    rate = difference["success_rate"]
    assert rate["difference"] == pytest.approx(0.6)
    assert rate["ci95"] == pytest.approx([0.1705, 0.8090], abs=5e-5)  # Newcombe 1998b, II
    assert (rate["n_treatment"], rate["n_control"]) == (10, 10)
    tokens = difference["tokens_per_success"]
    assert tokens["difference"] == -17_000 and tokens["ci95"] is not None
    assert (tokens["n_treatment"], tokens["n_control"]) == (9, 3)
    assert difference["mean_score"]["difference"] == pytest.approx(0.64)


def test_the_text_and_an_arm_without_reports() -> None:
    text = format_report(build_report(sessions(), FRACTION))
    assert "outcomes (reported sessions only; without one: 2 treatment, 1 control):" in text
    lines = text.splitlines()
    row = next(line for line in lines if line.startswith("  succeeded / failed / abandoned"))
    assert row.split()[-2:] == ["9/1/0", "3/5/2"]
    rate = next(line for line in lines if line.startswith("    success rate"))
    assert "+0.600  [+0.171, +0.809]  n = 10 vs 10  (Newcombe hybrid score)" in rate
    tokens = next(line for line in lines if line.startswith("  tokens per successful session"))
    assert tokens.split()[-4:] == ["14,000", "(9)", "31,000", "(3)"]
    # Only treatment sessions reported: no difference, and the text says why.
    treated = [(k, s) for k, s in sessions() if arm_of(k, FRACTION) == "treatment"]
    report = build_report([*treated, (keys_in("control", 1)[0], session(None))], FRACTION)
    rate_row = report["outcomes"]["difference"]["success_rate"]
    assert rate_row["difference"] is None and "in each arm" in rate_row["note"]
    assert f"    {'success rate':31}n/a (n = 10 vs 0)" in format_report(report)
    nothing = build_report([(k, session(None)) for k in keys_in("control", 2)], FRACTION)
    assert "outcomes: none reported yet (POST /v1/recovery/sessions/{session}/outcome" in (
        format_report(nothing)
    )
