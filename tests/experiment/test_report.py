"""The A/B report's arithmetic (proxy/experiment/report.py) on hand-made session states."""

from __future__ import annotations

from statistics import fmean

import pytest

from recovery_proxy.core.state import Link, SessionState, Stats
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.experiment.report import build_report, format_report, session_values


def state(**stats: int) -> SessionState:
    open_streak = stats.pop("open", 0)
    return SessionState(stats=Stats(**stats), consecutive_failures=open_streak)


def test_an_open_streak_counts_as_a_streak_so_far() -> None:
    closed = state(results=4, failures=3, streak_total=3, streaks=2)
    assert session_values(closed)["mean_streak"] == 1.5
    stuck = state(results=4, failures=4, streak_total=0, streaks=0, open=4)
    assert session_values(stuck)["mean_streak"] == 4
    both = state(results=6, failures=5, streak_total=2, streaks=1, open=3)
    assert session_values(both)["mean_streak"] == 2.5
    quiet = state(results=2)
    assert session_values(quiet) == {
        "failure_rate": 0.0,
        "repeat_failure_rate": None,
        "loop_notice_rate": 0.0,
        "mean_streak": None,
        "tokens_per_session": None,  # no response read: no usage
        "streak_tokens": None,
    }


def test_tokens_per_session_and_in_failure_streaks() -> None:
    read = state(results=2)
    usage = read.provider.usage
    usage.responses, usage.input, usage.output = 3, 3000, 90
    usage.streak_input, usage.streak_output = 1000, 30
    values = session_values(read)
    assert (values["tokens_per_session"], values["streak_tokens"]) == (3090, 1030)


def keys_in(arm: str, count: int, fraction: float) -> list[str]:
    keys = (f"t:{n:04d}" for n in range(10_000))
    return [k for k in keys if arm_of(k, fraction) == arm][:count]


def test_index_states_are_skipped_and_one_control_session_gives_no_interval() -> None:
    treated = keys_in("treatment", 3, 0.3)
    (control,) = keys_in("control", 1, 0.3)
    sessions = [(k, state(results=5, failures=2, repeat_failures=n)) for n, k in enumerate(treated)]
    sessions.append((control, state(results=5, failures=2, repeat_failures=2, tokens_injected=0)))
    index = SessionState(links={"t:x": Link(key="t:0001", touched=1.0)})
    sessions.append(("t:index", index))
    report = build_report(sessions, 0.3)
    assert report["skipped_index_states"] == 1
    assert report["treatment"]["sessions"] == 3 and report["control"]["sessions"] == 1
    row = report["difference"]["repeat_failure_rate"]
    assert row["difference"] == pytest.approx(fmean([0, 0.5, 1]) - 1)
    assert row["ci95"] is None and "at least 2 sessions" in row["note"]
    text = format_report(report)
    assert "no CI: fewer than 2 sessions in an arm (n = 3 vs 1)" in text
    assert "1 continuity-index states skipped" in text
