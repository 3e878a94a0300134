"""What the admin API shows of a session: its JSON row, its detail, one request the proxy
rewrote, the provider-reported usage. Plain data; proxy/server/inspector.py renders the same
as HTML pages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from recovery_proxy.core.conversation import call_id_of
from recovery_proxy.core.request_log import added_texts
from recovery_proxy.core.state import RequestRecord, SessionState
from recovery_proxy.core.timeline import with_added_text
from recovery_proxy.experiment.arms import arm_of


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def session_row(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        "name": state.name,
        "key": key,
        "tenant": key.partition(":")[0],
        "arm": arm_of(key, fraction),
        "last_seen": iso(state.updated),
        "last_seen_epoch": state.updated,
        "turn": state.turn,
        "results": state.stats.results,
        "failures": state.stats.failures,
        "records": len(state.records),
        "compactions": len(state.compactions),
        "outcome": state.outcome.result if state.outcome else None,  # as reported (issue 28)
    }


def session_detail(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        **session_row(key, state, fraction),
        "stats": state.stats.model_dump(),
        "records": [record.model_dump() for record in state.records],
        "timeline": [
            {**event.model_dump(exclude={"ref"}), "added": added}
            for event, added in with_added_text(state)
        ],
        "requests": [request_detail(state, record) for record in state.requests],
        "compactions": [compaction.model_dump() for compaction in state.compactions],
        "summary": state.summary,
        "usage": state.provider.usage.model_dump(),  # issue 25: what the loops cost
        "resolutions": [r.model_dump() for r in state.resolutions.items],  # what worked
        "outcome": state.outcome.model_dump() if state.outcome else None,  # how it ended
    }


def request_detail(state: SessionState, record: RequestRecord) -> dict[str, Any]:
    """One request the proxy rewrote or refused: the texts it added (in full, as far as the
    session still holds them), those it re-applied (by call id), the new tokens."""
    added = [
        {"kind": "result" if key else "summary", "call_id": call_id_of(key) or None, "text": text}
        for key, text in added_texts(state, record)
    ]
    reapplied: list[dict[str, Any]] = [
        {"kind": "result", "call_id": call_id_of(key)} for key in record.reapplied
    ]
    if record.summary == "reapplied":
        reapplied.append({"kind": "summary", "call_id": None})
    return {
        "time": record.time,
        "turn": record.turn,
        "tokens_added": record.tokens,
        "added": added,
        "reapplied": reapplied,
        "reapplied_more": record.more,
        "refused": record.refused or None,
        "repeats": record.repeats,
        "last": record.last if record.repeats else None,
    }


def usage_numbers(state: SessionState) -> dict[str, Any]:
    """The provider-reported usage of a session's responses, for the detail view (issue 25):
    tokens, those in failure streaks, the proxy's own, cost where priced."""
    u = state.provider.usage
    if not u.responses:
        return {}
    return {
        "responses read": u.responses,
        "tokens": u.input + u.output,
        "tokens in failure streaks": u.streak_input + u.streak_output,
        "tokens added by the proxy": u.added,
        "cost USD": f"{u.cost:.4f}" if u.priced else "-",
        "cost USD in failure streaks": f"{u.streak_cost:.4f}" if u.priced else "-",
    }
