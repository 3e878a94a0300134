"""A session's resolution memory (proxy/core/resolutions.py): failures still open, recent
successes, what finally worked after a failure, and a tenant's known fixes. One field of
`SessionState` (`resolutions`). Bounded everywhere."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MAX_RESOLUTIONS = 20
MAX_OPEN = 16  # failures not yet resolved, newest kept
MAX_DONE = 12  # recent successes (finders and fixing steps) while failures are open
MAX_NAMES = 100  # file names kept from one success's output (a listing, a search)


class OpenFailure(BaseModel):
    """A failure that no later success has resolved yet."""

    key: str  # the failure record's call id
    tool: str
    target: str
    category: str
    signature: str  # `call_signature`: equal for identical calls
    step: int  # the session's result counter when it arrived
    turn: int
    values: list[str] = Field(default_factory=list)  # its string arguments (short ones)


class Done(BaseModel):
    """A successful call seen while failures were open."""

    tool: str
    target: str
    step: int
    names: list[str] = Field(default_factory=list)  # file names its output mentions


class Resolution(BaseModel):
    """Failures on one operation and target, and the success that ended them."""

    failed: list[str]  # the failure records' call ids, oldest first
    operation: str  # the (last) failure's
    target: str
    category: str
    error: str
    about: str = ""  # the failure's subject or target (FailureRecord.about)
    kind: Literal["retry", "alternative"]
    tool: str  # the call that worked
    worked: str  # its target
    label: str = ""  # the failed call's arguments label, when it has no target
    worked_label: str = ""  # the call that worked's, when it has no target
    via: list[tuple[str, str]] = Field(default_factory=list)  # (tool, target) that found it
    changed: bool = False  # a retry with other arguments
    call_id: str = ""  # the successful result's key
    turn: int = 0
    turns: int = 0  # from the first failure to this success
    time: float = 0.0


MAX_KNOWN = 64  # known fixes one tenant keeps (proxy/core/known_fixes.py)
MAX_FIX_SESSIONS = 32  # session keys a known fix remembers (to count distinct ones)
MAX_OFFERS = 8  # known fixes offered in one session, newest kept


class KnownFix(BaseModel):
    """A resolution seen in several sessions of one tenant, by its failure's signature."""

    id: str
    signature: str  # operation, target, category and the error, normalised
    fix: Resolution  # the latest session's resolution (what it says comes from this)
    sessions: list[str] = Field(default_factory=list)  # distinct session keys, newest last
    seen: int = 0  # distinct sessions that resolved it this way
    offered: int = 0  # sessions it was offered in (report)
    followed: int = 0  # ... whose next call matched it
    resolved: int = 0  # ... whose failure was then resolved
    updated: float = 0.0


class Offer(BaseModel):
    """A known fix offered in this session, to see whether it was followed and worked."""

    id: str
    failure: str  # the failure record's call id it was offered under
    step: int
    tool: str
    targets: list[str]  # the fix's call and the steps before it: following it calls one
    followed: bool = False
    resolved: bool = False


class Resolutions(BaseModel):
    """The session's resolution memory: open failures, recent successes, what worked."""

    step: int = 0  # tool results seen
    open: list[OpenFailure] = Field(default_factory=list)
    done: list[Done] = Field(default_factory=list)
    items: list[Resolution] = Field(default_factory=list)
    resolved: int = 0  # failure streaks resolved (a counter, never trimmed)
    turns: int = 0  # their turns to resolution, summed
    offers: list[Offer] = Field(default_factory=list)  # known fixes offered here
    known: dict[str, KnownFix] = Field(default_factory=dict)  # a tenant's known-fixes state only

    def trim(self) -> None:
        del self.open[:-MAX_OPEN]
        del self.done[:-MAX_DONE]
        del self.items[:-MAX_RESOLUTIONS]
        del self.offers[:-MAX_OFFERS]
        while len(self.known) > MAX_KNOWN:  # the least recently seen goes
            del self.known[min(self.known, key=lambda k: self.known[k].updated)]
