"""The session's timeline (`SessionState.timeline`, proxy/core/state.py): what happened and
when, for the inspector. Events are built here, one line of text each; the tracker and the
notices append them as things happen (capped by `SessionState.trim`)."""

from __future__ import annotations

from recovery_proxy.core.state import Event, EventKind, SessionState
from recovery_proxy.rules.model import Rules

EVENT_TEXT = 200  # characters of a timeline event's text (a key line, a notice, a reason)


def event(
    state: SessionState, now: float, kind: EventKind, call_id: str = "", text: str = ""
) -> None:
    """Append to the session's timeline (capped by `trim`)."""
    state.timeline.append(new_event(state, now, kind, call_id, text))


def new_event(
    state: SessionState, now: float, kind: EventKind, call_id: str, text: str, ref: str = ""
) -> Event:
    """An event; `text` cut to its first line, at most EVENT_TEXT characters. A block's full
    text is not copied: `ref` names the annotation that holds it."""
    line = text.partition("\n")[0][:EVENT_TEXT]
    return Event(time=now, turn=state.turn, kind=kind, call_id=call_id, text=line, ref=ref)


def with_added_text(state: SessionState) -> list[tuple[Event, str]]:
    """Each timeline event and exactly what the model received for it, as far as the session
    still holds it: a block's whole text, the summary in force (the latest summary event's),
    a notice's or a reason's line."""
    summaries = [i for i, e in enumerate(state.timeline) if e.kind == "summary"]
    latest = summaries[-1] if summaries else -1
    out = []
    for i, event in enumerate(state.timeline):
        text = event.text
        if event.ref and event.ref in state.annotations:
            text = state.annotations[event.ref]
        elif i == latest and state.summary:
            text = state.summary
        out.append((event, text))
    return out


def summarised(summary: str, rules: Rules) -> str:
    """`N failures`: the items of a summary (lines starting like the item template)."""
    start = rules.templates.summary_item.partition("{")[0] or "-"
    count = sum(1 for line in summary.splitlines() if line.startswith(start))
    return f"{count} failures" if count != 1 else "1 failure"
