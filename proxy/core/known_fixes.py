"""Known fixes across sessions (issue 27; opt-in, per tenant: `RECOVERY_PROXY_KNOWN_FIXES`).

A resolution (proxy/core/resolutions.py) is learned under its failure's signature: operation,
target and category, and the error line with paths, numbers, ids and timestamps stripped. The
target is kept (ids and timestamps in it stripped): a fix found for `src/config.ts` says
nothing about another file, and one that says the wrong thing is worse than none. Once the
same fix has resolved that signature in `known_fixes_sessions` distinct sessions of a tenant,
a later session of that tenant gets it in the block of a failure with that signature, marked
as learned (never in the control arm; the pipeline does not hand it any). Each offer is
followed up: `followed` when the next call is the fix's call or the step before it, `resolved`
when that failure is then resolved. The tenant's fixes live in one store entry of its own
(proxy/session/known.py), purgeable like a session.
"""

from __future__ import annotations

import hashlib
import re

from recovery_proxy.core.resolution_state import MAX_FIX_SESSIONS, KnownFix, Offer, Resolution
from recovery_proxy.core.resolutions import call, how
from recovery_proxy.core.state import FailureRecord, SessionState
from recovery_proxy.rules.model import Rules

MAX_PER_SIGNATURE = 3  # fixes kept for one signature (the most seen)

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.@~-]*[/\\])+[\w.@-]*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _ids(text: str) -> str:
    text = _TIME.sub("<time>", text)
    text = _UUID.sub("<id>", text)
    return _HEX.sub("<id>", text)


def normalise(error: str) -> str:
    """The error line without what differs between sessions: timestamps, ids, paths, numbers."""
    text = _NUMBER.sub("<n>", _PATH.sub("<path>", _ids(error)))
    return " ".join(text.split())


def signature(operation: str, target: str, category: str, error: str) -> str:
    """What a failure is known by across sessions."""
    return "\x1f".join((operation, " ".join(_ids(target).split()), category, normalise(error)))


def of_record(record: FailureRecord, target: str) -> str:
    return signature(record.operation, target, record.category, record.error)


def fix_id(sig: str, r: Resolution) -> str:
    """One fix of one signature: the kind, the call that worked, the steps before it."""
    parts = [sig, r.kind, r.tool, r.worked, *(f"{t}\x1e{g}" for t, g in r.via)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def learn(known: SessionState, session: str, resolution: Resolution, now: float) -> None:
    """Count `resolution` (from session `session`) in a tenant's known fixes."""
    fixes = known.resolutions.known
    sig = signature(resolution.operation, resolution.target, resolution.category, resolution.error)
    key = fix_id(sig, resolution)
    fix = fixes.pop(key, None) or KnownFix(id=key, signature=sig, fix=resolution)
    fix.fix, fix.updated = resolution, now
    if session not in fix.sessions:
        fix.seen += 1
        fix.sessions.append(session)
        del fix.sessions[:-MAX_FIX_SESSIONS]
    fixes[key] = fix
    rivals = sorted(
        (f for f in fixes.values() if f.signature == sig), key=lambda f: (f.seen, f.updated)
    )
    for extra in rivals[:-MAX_PER_SIGNATURE]:
        del fixes[extra.id]


def count(known: SessionState, fix: str, what: str) -> None:
    """An offer's outcome (`offered`, `followed`, `resolved`) for the report."""
    found = known.resolutions.known.get(fix)
    if found is not None and what in ("offered", "followed", "resolved"):
        setattr(found, what, getattr(found, what) + 1)


def eligible(known: SessionState | None, session: str, minimum: int) -> list[KnownFix]:
    """The tenant's fixes seen in at least `minimum` distinct sessions, other than `session`."""
    if known is None:
        return []
    fixes = known.resolutions.known.values()
    return [f for f in fixes if f.seen >= minimum and session not in f.sessions]


def offer(
    state: SessionState, record: FailureRecord, target: str, known: list[KnownFix], rules: Rules
) -> tuple[str, Offer | None]:
    """The block line offering a known fix for this failure, once per fix per session."""
    sig = of_record(record, target)
    offered = {o.id for o in state.resolutions.offers}
    matches = [f for f in known if f.signature == sig and f.id not in offered]
    if not matches:
        return "", None
    fix = max(matches, key=lambda f: (f.seen, f.updated))
    r = fix.fix
    text = rules.templates.known_fix.format(
        sessions=fix.seen,
        failed=call(r.operation, r.target, label=r.label),
        category=r.category,
        worked=call(r.tool, r.worked, label=r.worked_label),
        how=how(rules, r),
    )
    calls = [f"{r.tool}\x1e{r.worked}", *(f"{t}\x1e{g}" for t, g in r.via)]
    made = Offer(
        id=fix.id, failure=record.call_id, step=state.resolutions.step, tool=r.tool, targets=calls
    )
    return text, made


def follow(
    state: SessionState, tool: str, target: str, worked: Resolution | None
) -> list[tuple[str, str]]:
    """Outcomes of earlier offers that this result settles: (fix id, followed | resolved)."""
    events: list[tuple[str, str]] = []
    step = state.resolutions.step
    for o in state.resolutions.offers:
        if not o.followed and o.step == step - 1 and f"{tool}\x1e{target}" in o.targets:
            o.followed = True
            events.append((o.id, "followed"))
        if worked is not None and not o.resolved and o.failure in worked.failed:
            o.resolved = True
            events.append((o.id, "resolved"))
    return events
