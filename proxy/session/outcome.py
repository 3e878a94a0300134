"""Reporting a session's outcome (issue 28): the report body, which sessions a reporter may
mean, and the write.

Two kinds of reporter, scoped like everything else:

- the **harness**, with the provider credential its requests carried
  (`POST /v1/recovery/sessions/{session}/outcome`, proxy/server/outcome.py). The tenant is the
  salted hash of that credential, exactly as for the requests, so it reaches only its own
  tenant's sessions: another tenant's session is a 404, like one that does not exist. The
  credential is hashed, never stored or checked with the provider: it is a capability, and
  whoever holds it could send requests into those sessions anyway.
- an **operator**: `POST /admin/sessions/{key}/outcome` (the admin token) or
  `recovery-proxy sessions outcome` (the store itself), by key or name, any tenant.

The write is one atomic `Store.update`, so a report never loses or undoes a concurrent
request's changes (or theirs); it only ever sets `SessionState.outcome`, replacing an earlier
report (the latest wins; the A/B report counts each session once). An unknown, expired or
bookkeeping (continuity index, known fixes) key is never created: the update is abandoned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recovery_proxy.core.state import MAX_NOTE, Outcome, OutcomeResult, SessionState
from recovery_proxy.session.keys import is_key, named, scoped
from recovery_proxy.store import Store


class BadReport(ValueError):
    """A report that is not valid; the message names the field."""


class NotJson(BadReport):
    """A report body that is not a JSON object."""


class UnknownSession(LookupError):
    """No live session of the reporter's tenant by that key or name."""


class OutcomeReport(BaseModel):
    """What a reporter sends: `{"result": "succeeded", "score": 0.8, "note": "tests pass"}`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    result: OutcomeResult
    score: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    note: str = Field("", max_length=MAX_NOTE)


def parse_report(body: bytes) -> OutcomeReport:
    """The report a JSON body carries; `BadReport` naming the field that is wrong."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise NotJson(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise NotJson('the body must be a JSON object, e.g. {"result": "succeeded"}')
    return checked(data)


def checked(data: dict[str, object]) -> OutcomeReport:
    """`data` as a report; `BadReport` naming the first wrong field."""
    try:
        return OutcomeReport.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "body"
        raise BadReport(f"{field}: {error['msg']}") from None


def candidates(tenant: str, session: str) -> list[str]:
    """The keys `session` may mean for `tenant`, in order: the key itself (as the
    `x-recovery-proxy-session` header shows it), if it is one of this tenant's; then the id the
    session was named by, in the order `session_id` reads them: a `/s/{id}/` path or session
    header, Claude Code's session id, a body field."""
    keys = [session] if is_key(session) and session.partition(":")[0] == tenant else []
    ids = (named(session), f"w:{session}", f"b:{session}")
    return keys + [scoped(tenant, raw) for raw in ids]


@dataclass(frozen=True, slots=True)
class Reported:
    """The session an outcome was recorded in, and the outcome as stored."""

    key: str
    name: str
    outcome: Outcome


def conversation(state: SessionState) -> bool:
    """A live conversation's state: seen on a request, not bookkeeping (links)."""
    return bool(state.updated) and not state.links


async def record_outcome(
    store: Store,
    keys: list[str],
    report: OutcomeReport,
    by: Literal["harness", "operator"],
    now: float | None = None,
) -> Reported:
    """Set the outcome of the first of `keys` that is a live session (`UnknownSession` if
    none is); store errors propagate."""
    stamp = time.time() if now is None else now
    for key in keys:
        if await store.get(key) is None:  # never create a session (nor a lock for it)
            continue

        def apply(state: SessionState, key: str = key) -> Reported:
            if not conversation(state):  # expired meanwhile, or bookkeeping: write nothing
                raise UnknownSession(key)
            state.outcome = Outcome(**report.model_dump(), time=stamp, by=by)
            return Reported(key, state.name, state.outcome.model_copy())

        try:
            return await store.update(key, apply)
        except UnknownSession:
            continue
    raise UnknownSession(keys[0] if keys else "")
