"""Per-session state: what the tracker remembers between requests. Bounded everywhere."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from recovery_proxy.core.provider_state import ProviderState
from recovery_proxy.core.resolution_state import Resolutions

MAX_RECORDS = 50
MAX_ANNOTATIONS = 200
MAX_SEEN = 4096
MAX_CALLS = 32
MAX_THREADS = 8
MAX_COMPACTIONS = 20
MAX_BLOCKED = 20
MAX_PENDING = 4
MAX_LINKS = 16
MAX_TIMELINE = 100
MAX_REQUESTS = 20  # request log rows (each stands for every request that carried the same)
MAX_LISTED = 20  # re-applied texts a request log row names (the newest; the rest counted)


class FailureRecord(BaseModel):
    """One failed tool call."""

    call_id: str
    operation: str
    target: str
    category: str
    error: str
    turn: int
    time: float
    thread: str = ""
    subject: str = ""  # what the error names (a missing module or command), if its category says
    label: str = ""  # without a target, the call's identifying arguments (arguments_label)

    @property
    def about(self) -> str:
        """What repeats are counted on: the subject the error names, else the call's target
        (else the operation with its `label`: notices.same_failure)."""
        return self.subject or self.target


class ThreadState(BaseModel):
    """What one thread (system prompt + first user message) looked like last time."""

    length: int = 0
    anchors: list[tuple[int, str]] = Field(default_factory=list)
    visible: list[str] = Field(default_factory=list)  # failure call ids the model could see
    marker: bool = False


class Compaction(BaseModel):
    time: float
    turn: int
    signals: list[str]


class LoopState(BaseModel):
    """What loop detection remembers (proxy/core/loops.py); counting restarts at a human turn."""

    steps: list[str] = Field(default_factory=list)  # `call signature=outcome`, oldest first
    human: str = ""  # digest of the latest message a person typed
    since: float = 0.0  # when counting (re)started: compactions before it do not count
    reported: str = ""  # the latest repeated-message run reported (`digest:count`)
    pending: list[str] = Field(default_factory=list)  # notices for the next new tool result
    reject: str = ""  # a conversation-level block, sticky while the request is re-sent
    reject_length: int = 0


class Stats(BaseModel):
    """Running totals for the operator's view and the A/B report (never trimmed; counters
    only), kept by proxy/core/tracker.py and proxy/core/notices.py. In a control-arm session
    they count what *would* have been injected. Results first seen as history (the proxy
    joined mid-session) count in results, failures, repeats and streaks, but never get a
    block or a notice."""

    results: int = 0  # tool results judged (each once)
    failures: int = 0
    repeat_failures: int = 0  # failures with an earlier `same_failure` among the kept records
    loop_notices: int = 0  # repeat and loop notices found (fired, or would have in control)
    escalations: int = 0  # escalations acted on (annotate, block, webhook) or, in control, not
    streak_total: int = 0  # sum of the lengths of consecutive-failure streaks that ended
    streaks: int = 0  # how many such streaks ended (an open one is `consecutive_failures`)
    tokens_injected: int = 0  # tokens of texts added for the first time (0 in control)


EventKind = Literal["block", "notice", "escalation", "compaction", "summary", "resolution"]


class Event(BaseModel):
    """One thing the proxy did (or, in control, would have done) in a session."""

    time: float
    turn: int
    kind: EventKind
    call_id: str = ""
    text: str = ""
    ref: str = ""  # a block's result key: its full text is `annotations[ref]` (kept once)


class RequestRecord(BaseModel):
    """One request the proxy rewrote or refused (proxy/core/request_log.py): what the model
    received on top of what the agent sent. Texts are referenced, not copied: `added` and
    `reapplied` name annotations (`SessionState.annotations`), `summary_at` the compaction
    that froze the summary."""

    time: float
    turn: int
    added: list[str] = Field(default_factory=list)  # annotation keys rendered in this request
    reapplied: list[str] = Field(default_factory=list)  # earlier ones re-applied (newest listed)
    more: int = 0  # re-applied texts beyond the listed ones
    summary: Literal["", "added", "reapplied"] = ""
    summary_at: float = 0.0  # time of the compaction whose summary it carried
    tokens: int = 0  # tokens of the texts added for the first time (as the budget counts)
    refused: str = ""  # the reason of a `block` escalation's 409 (nothing was forwarded)
    repeats: int = 0  # later requests that carried exactly the same, merged into this row
    last: float = 0.0  # the latest of them


class Link(BaseModel):
    """In an agent's continuity index: the conversation a thread belongs to (proxy/continuity)."""

    key: str
    touched: float


# --- A session's outcome (issue 28): reported by its harness or an operator, read by the A/B
# report. One field of SessionState, defaulted: states stored before it load unchanged.

OutcomeResult = Literal["succeeded", "failed", "abandoned"]
MAX_NOTE = 500  # characters of an outcome's note


class Outcome(BaseModel):
    """How the session ended, as reported (proxy/session/outcome.py); the latest report wins."""

    result: OutcomeResult
    score: float | None = None  # 0..1, when the reporter grades the run
    note: str = ""
    time: float = 0.0  # when it was reported
    by: Literal["harness", "operator"] = "harness"  # the credential's holder, or the admin


class SessionState(BaseModel):
    """Everything recovery-proxy keeps for one session."""

    records: list[FailureRecord] = Field(default_factory=list)
    annotations: dict[str, str] = Field(default_factory=dict)  # call id -> text spliced after it
    seen: dict[str, bool] = Field(default_factory=dict)  # call ids already judged (ordered set)
    calls: list[str] = Field(default_factory=list)  # recent call signatures, oldest first
    consecutive_failures: int = 0
    turn: int = 0
    summary: str = ""  # frozen post-compaction summary ("" until the first compaction)
    compactions: list[Compaction] = Field(default_factory=list)
    threads: dict[str, ThreadState] = Field(default_factory=dict)
    blocked: dict[str, str] = Field(default_factory=dict)  # call id -> reason (sticky block)
    loop: LoopState = Field(default_factory=LoopState)
    links: dict[str, Link] = Field(default_factory=dict)  # continuity index states only
    stats: Stats = Field(default_factory=Stats)
    timeline: list[Event] = Field(default_factory=list)  # newest last, capped
    requests: list[RequestRecord] = Field(default_factory=list)  # newest last, capped
    updated: float = 0.0
    name: str = ""  # what the agent or user called it (its id), or "fingerprint: <first line>"
    provider: ProviderState = Field(default_factory=ProviderState)  # issue 25
    resolutions: Resolutions = Field(default_factory=Resolutions)  # what worked (issue 27)
    outcome: Outcome | None = None  # how it ended, once reported (issue 28)

    def trim(self) -> None:
        """Apply every cap, dropping the oldest entries first."""
        del self.records[:-MAX_RECORDS]
        del self.calls[:-MAX_CALLS]
        del self.compactions[:-MAX_COMPACTIONS]
        del self.loop.steps[:-MAX_CALLS]
        del self.loop.pending[:-MAX_PENDING]
        del self.timeline[:-MAX_TIMELINE]
        self.provider.trim()
        self.resolutions.trim()
        del self.requests[:-MAX_REQUESTS]
        for mapping, cap in (
            (self.annotations, MAX_ANNOTATIONS),
            (self.seen, MAX_SEEN),
            (self.threads, MAX_THREADS),
            (self.blocked, MAX_BLOCKED),
            (self.links, MAX_LINKS),
        ):
            while len(mapping) > cap:
                del mapping[next(iter(mapping))]
