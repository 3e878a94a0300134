"""Compaction: did the agent replace its history? Which failures can the model no longer see?

Signals, strongest first (DESIGN "Compaction"): a compaction block or item the provider wrote
(Anthropic `compaction`, Responses `compaction`: the provider drops what comes before it, even
though the client resends it); failures the model could see last time have vanished; the
message list shrank and its earlier part changed; a known summary marker appears; a new thread
opens carrying tool calls from an old one. Ordinary growth, retries, an edited last
user message (a branch) and parallel sub-agents (other threads) are not compaction.
"""

from __future__ import annotations

from collections.abc import Callable

from recovery_proxy.core import render, resolutions
from recovery_proxy.core.conversation import Conversation, ToolResult
from recovery_proxy.core.state import FailureRecord, SessionState, ThreadState
from recovery_proxy.rules.model import Rules

MAX_USER_ANCHORS = 64


def is_cleared(result: ToolResult, rules: Rules) -> bool:
    """The agent replaced this output with a placeholder (`[Old tool result content cleared]`)."""
    return any(c in result.text for c in rules.cleared)


def visible_failures(state: SessionState, conv: Conversation, rules: Rules) -> set[str]:
    """Call ids of tracked failures whose result is still in the request, uncleared, and not
    before a provider's compaction boundary (the provider drops those)."""
    failed = {r.call_id for r in state.records}  # records keep the result's identity key
    after = conv.results[first_visible(state, conv) :]
    return {r.key for r in after if r.key in failed and not is_cleared(r, rules)}


def first_visible(state: SessionState, conv: Conversation) -> int:
    """The first result the model still sees: after a provider's compaction boundary, and,
    while the provider reports clearing old tool results (context editing), among the newest
    it keeps. The client resends the cleared ones in full; a failure leaving the kept window
    is one that vanished (the summary then carries it)."""
    start = conv.boundary_results
    if conv.clearing_keep is not None and state.provider.cleared:
        start = max(start, len(conv.results) - conv.clearing_keep)
    return start


MARKER_ASSISTANT_TEXTS = 4  # a summary sits near the start: Goose's notice is an assistant text


def has_marker(conv: Conversation, rules: Rules) -> bool:
    """A known summary marker in any role: system and user texts, the first assistant texts."""
    assistant = [text for _, _, text in conv.assistant_texts[:MARKER_ASSISTANT_TEXTS]]
    return any(rules.marked(text) for text in [*conv.texts, *assistant])


def is_branch(previous: ThreadState, conv: Conversation) -> bool:
    """The agent edited (or re-sent) its last user message: everything before it is kept."""
    if not conv.ends_with_user or not conv.user_anchors:
        return False
    k = conv.user_anchors[-1][0]
    before = dict(previous.anchors)
    if k not in before:
        return False
    now = dict(conv.user_anchors)
    return all(now.get(i) == digest for i, digest in previous.anchors if i < k)


def detect_compaction(
    state: SessionState, conv: Conversation, visible: set[str], marker: bool
) -> list[str]:
    """The signals that fired for this request (empty: no compaction). `visible`: tracked
    failures the model can see in it; `marker`: a summary marker appears in it. A partial
    history (the server holds earlier turns) is never read as compacted: only a marker counts."""
    previous = state.threads.get(conv.thread)
    signals = [] if conv.partial else _history_signals(state, conv, previous, visible)
    if marker and (previous is None or not previous.marker):
        signals.append("marker")
    if conv.boundary and conv.boundary not in state.provider.boundaries:
        signals.append("provider")  # a compaction block or item the provider wrote
    return signals


def _history_signals(
    state: SessionState, conv: Conversation, previous: ThreadState | None, visible: set[str]
) -> list[str]:
    """What the full history shows: failures vanished, earlier part rewritten, or a new thread
    carrying results from an old one."""
    if previous is None:
        if state.threads and any(r.key in state.seen for r in conv.results):
            return ["continuation"]
        return []
    if is_branch(previous, conv):
        return []
    signals: list[str] = []
    if any(cid not in visible for cid in previous.visible):
        signals.append("vanished")
    anchors = dict(previous.anchors)
    if conv.length < previous.length and anchors != {
        i: d for i, d in conv.user_anchors if i in anchors
    }:
        signals.append("rewritten")
    return signals


def remember_thread(
    state: SessionState, conv: Conversation, visible: set[str], marker: bool
) -> None:
    """Keep what this request looked like, for the next one in the same thread."""
    if conv.partial:
        return
    state.threads.pop(conv.thread, None)  # re-insert: most recently used last
    state.threads[conv.thread] = ThreadState(
        length=conv.length,
        anchors=conv.user_anchors[-MAX_USER_ANCHORS:],
        visible=sorted(visible),
        marker=marker,
    )


def frozen_summary(
    state: SessionState,
    visible: set[str],
    rules: Rules,
    count: Callable[[str], int],
    template: str | None = None,
) -> str:
    """The summary of every distinct failure the model can no longer see, within the record
    and token caps. Only to make room are older failures of one (tool, category) dropped
    (newest kept), then the oldest. Rendered once per compaction, then frozen."""
    distinct: dict[tuple[str, ...], FailureRecord] = {}
    for record in state.records:
        if record.call_id not in visible:
            key = (record.operation, record.target, record.label, record.category, record.error)
            distinct.pop(key, None)
            distinct[key] = record
    chosen = make_room(list(distinct.values()), rules.thresholds.summary_records)
    notes = resolutions.summary_notes(state, rules)  # what worked, under its failure
    while chosen:
        text = render.summary(rules, chosen, notes, template)
        if count(text) <= rules.thresholds.summary_tokens:
            return text
        chosen = chosen[1:]
    return ""


def ledger(state: SessionState, rules: Rules, count: Callable[[str], int]) -> str:
    """Every distinct failure of the session, for the instructions of a request that asks the
    provider to compact (its summariser then keeps them); "" without failures or when the
    rules turn steering off. Within the same caps as the summary."""
    if not rules.steer_provider or not state.records:
        return ""
    return frozen_summary(state, set(), rules, count, rules.templates.ledger)


def make_room(records: list[FailureRecord], cap: int) -> list[FailureRecord]:
    """At most `cap` records, oldest first: while over the cap, drop the oldest record whose
    (tool, category) has a newer one; when none has, drop the oldest."""
    if len(records) <= cap:
        return records
    newest = {(r.operation, r.category): i for i, r in enumerate(records)}
    duplicates = [i for i, r in enumerate(records) if newest[(r.operation, r.category)] != i]
    drop = set(duplicates[: len(records) - cap])
    kept = [r for i, r in enumerate(records) if i not in drop]
    return kept[-cap:]
