"""The A/B report: per-arm figures over the live sessions.

A minimal version for the admin API (issue 14); the full report (rates, difference with a 95%
confidence interval) replaces it with the same signature.
"""

from __future__ import annotations

from typing import Any

from proxy.arms import arm_of
from proxy.core.state import SessionState


def build_report(sessions: list[tuple[str, SessionState]], control_fraction: float) -> dict:
    """Per-arm session, result and failure counts from each session's stats."""
    arms: dict[str, dict[str, Any]] = {
        arm: {"sessions": 0, "results": 0, "failures": 0} for arm in ("treatment", "control")
    }
    for key, state in sessions:
        if state.links:  # a continuity index, not a conversation
            continue
        figures = arms[arm_of(key, control_fraction)]
        figures["sessions"] += 1
        figures["results"] += state.stats.results
        figures["failures"] += state.stats.failures
    return {"control_fraction": control_fraction, "arms": arms}
