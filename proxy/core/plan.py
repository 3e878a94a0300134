"""What one request gains: the plan, the token budget it is built within, and the recovery
block shrunk to fit the per-block cap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from recovery_proxy.core import render
from recovery_proxy.core.conversation import Position
from recovery_proxy.core.resolution_state import Resolution
from recovery_proxy.core.state import FailureRecord, SessionState
from recovery_proxy.rules.model import Rules

# Why a failure in a request got no block (`Plan.skipped`; at most a notice or an escalation
# went out), for `recovery-proxy explain`:
Skip = Literal[
    "history",  # first seen as history: only the newest tool batch is annotated (cache-safe)
    "unjudged",  # past the results one request may judge (`tracker.MAX_JUDGED`, `MAX_SEEN`)
    "request_budget",  # the request's cap of new tokens was spent
    "window",  # it would not fit in what is left of the context window
    "near_window",  # the request is near the context window: only escalations go out
    "present",  # the result already ends with exactly this text
]


@dataclass
class Budget:
    """Token limits for what one request may gain: per block, per request, and the headroom
    left in the context window (escalations may pass the request cap, never the window)."""

    count: Callable[[str], int]
    block_tokens: int
    remaining: int
    headroom: int
    escalations_only: bool = False
    spent: int = 0  # tokens taken so far
    refused: Skip = "request_budget"  # the limit the latest refused `take` hit

    def take(self, text: str, escalation: bool = False) -> bool:
        """Spend the tokens of `text` if it fits; False (nothing spent, `refused` says which
        limit) if it does not."""
        cost = self.count(text)
        if cost > self.headroom or (cost > self.remaining and not escalation):
            self.refused = "window" if cost > self.headroom else "request_budget"
            return False
        self.remaining -= cost
        self.headroom -= cost
        self.spent += cost
        return True


@dataclass
class Plan:
    """What to do with one request."""

    appends: dict[Position, str] = field(default_factory=dict)  # result position -> text after it
    summary: str = ""  # the frozen failure summary, for the system text
    reject: str | None = None  # answer with this escalation instead of forwarding (`block`)
    events: list[dict[str, Any]] = field(default_factory=list)  # webhook payloads
    new_failures: list[str] = field(default_factory=list)  # categories, for metrics
    escalations: int = 0
    compaction: list[str] = field(default_factory=list)  # signals, when one was detected

    fresh: int = 0  # texts rendered for the first time in this request (the rest re-applied)
    # The failure ledger for the provider's compaction instructions (issue 25), and the
    # prompt that stands in for the provider's default where instructions replace it.
    ledger: str = ""
    ledger_default: str = ""
    streak: bool = False  # the session is inside a failure streak after this request
    # Known fixes (proxy/core/known_fixes.py): resolutions to learn, offers' outcomes (id, what)
    learned: list[Resolution] = field(default_factory=list)
    known: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[Position, Skip] = field(default_factory=dict)  # failures that got no block
    judged_from: int = 0  # results before this index were too old to judge ("unjudged")

    @property
    def injected(self) -> int:
        """Every text this request carries: new ones and re-applied ones."""
        return len(self.appends) + (1 if self.summary else 0)


MAX_EARLIER = 5  # earlier attempts a block may list (fewer when over the token cap)


def fit_block(
    state: SessionState,
    record: FailureRecord,
    rules: Rules,
    budget: Budget,
    notices: list[str],
    error_shown: bool = False,
    resolved: str = "",
) -> str:
    """Render the block, shrinking it (older attempts, then hints) to the per-block cap.
    `error_shown`: the block goes right under its error line (render.block); `resolved`:
    what worked for a similar failure (proxy/core/resolutions.py, known_fixes.py)."""
    earlier = earlier_attempts(state, record)
    category = rules.category(record.category) or rules.category("unknown")
    hints = list(category.hints_for(record.operation, record.error)) if category else []
    systemic = systemic_notice(state, record, rules)
    if systemic:
        return "\n\n".join([systemic, *notices])
    keep = min(len(earlier), MAX_EARLIER)
    while True:
        shown = earlier[len(earlier) - keep :]
        text = render.block(rules, record, shown, hints, notices, error_shown, resolved)
        if budget.count(text) <= budget.block_tokens + sum(budget.count(n) for n in notices):
            return text
        if keep > 3:
            keep = 3
        elif len(hints) > 1:
            hints.pop()
        elif keep > 0:
            keep -= 1
        else:
            return text


def earlier_attempts(state: SessionState, record: FailureRecord) -> list[FailureRecord]:
    """Earlier failures on the same target or subject (any operation); without either, the
    same operation and category, whatever their arguments (the values already tried)."""
    others = state.records[:-1]
    if record.about:
        return [r for r in others if r.about == record.about]
    return [
        r
        for r in others
        if not r.about and r.operation == record.operation and r.category == record.category
    ]


def systemic_notice(state: SessionState, record: FailureRecord, rules: Rules) -> str:
    """One compact notice when an environment problem hits several operations."""
    category = rules.category(record.category)
    if category is None or not category.systemic:
        return ""
    recent = state.records[-rules.thresholds.systemic_window :]
    operations = sorted({r.operation for r in recent if r.category == record.category})
    if len(operations) < rules.thresholds.systemic_operations:
        return ""
    return rules.templates.systemic.format(  # the systemic notice always quotes the error
        operation=render.operation(record.operation, record.target, record.label),
        error=render.unlabelled(rules.templates.systemic, record.error),
        category=record.category,
        operations=len(operations),
        names=", ".join(operations),
    )
