"""The session's request log (`SessionState.requests`, proxy/core/state.py): for each request
the proxy rewrote or refused, what the model received on top of what the agent sent. The
tracker appends to it at the end of `observe`; the inspector and the admin API read it.

A row references texts instead of copying them (annotations by key, the summary by the
compaction that froze it), so it costs a few keys. A request that carries exactly what the
previous row carried adds no row: if it changes the session anyway (new tool results) it is
counted in that row's `repeats`; a plain re-send changes nothing, so an unchanged session is
still not written again (the stores compare bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from recovery_proxy.core.state import MAX_LISTED, RequestRecord, SessionState

SummaryUse = Literal["", "added", "reapplied"]


@dataclass(frozen=True, slots=True)
class Carried:
    """What one request carried: annotation keys rendered in it (`added`) and every annotation
    key it carries, in request order (`carried`, the added ones included), the summary, and
    the reason of a 409 (`refused`)."""

    added: list[str]
    carried: list[str]
    summary: SummaryUse = ""
    refused: str = ""


def record_request(
    state: SessionState, request: Carried, tokens: int, now: float, changed: bool
) -> None:
    """Record one request (nothing if it carried nothing and was not refused). `tokens`: the
    new tokens it added; `changed`: the request changed the session anyway (new results)."""
    if not request.carried and not request.summary and not request.refused:
        return
    fresh = set(request.added)
    reapplied = [key for key in request.carried if key not in fresh]
    listed = reapplied[-MAX_LISTED:]
    summary_at = state.compactions[-1].time if request.summary and state.compactions else 0.0
    last = state.requests[-1] if state.requests else None
    if (
        last is not None
        and not request.added
        and request.summary != "added"
        and _carries_the_same(last, reapplied, listed, summary_at, request.refused)
    ):
        if changed:
            last.repeats += 1
            last.last = now
        return
    state.requests.append(
        RequestRecord(
            time=now,
            turn=state.turn,
            added=request.added,
            reapplied=listed,
            more=len(reapplied) - len(listed),
            summary=request.summary,
            summary_at=summary_at,
            tokens=tokens,
            refused=request.refused,
        )
    )


def _carries_the_same(
    last: RequestRecord, reapplied: list[str], listed: list[str], summary_at: float, refused: str
) -> bool:
    """Whether a request re-applying `reapplied` carries what the row `last` carried."""
    before = [*last.reapplied, *last.added]
    return (
        len(reapplied) == len(before) + last.more
        and set(listed) <= set(before)
        and last.summary_at == summary_at
        and last.refused == refused
    )


def added_texts(state: SessionState, record: RequestRecord) -> list[tuple[str, str | None]]:
    """Each text `record` added, as (annotation key, or "" for the summary; its exact text,
    or None when the session no longer holds it)."""
    out: list[tuple[str, str | None]] = [(key, state.annotations.get(key)) for key in record.added]
    if record.summary == "added":
        out.append(("", summary_text(state, record)))
    return out


def summary_text(state: SessionState, record: RequestRecord) -> str | None:
    """The summary `record` carried, if it is still the one in force (else None)."""
    if not record.summary or not state.summary or not state.compactions:
        return None
    return state.summary if state.compactions[-1].time == record.summary_at else None
