"""`recovery-proxy sessions outcome NAME RESULT`: mark how a session ended, in the store
(issue 28; proxy/session/outcome.py). NAME is the session's name as `sessions list` shows it
(the id its agent sent, or `fingerprint: ...`) or its key; a name that several sessions carry
(other tenants, say) is refused with their keys."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from recovery_proxy.cli.sessions import MAX_SCAN, on_store, refuse_memory

if TYPE_CHECKING:
    from recovery_proxy.config import Settings
    from recovery_proxy.session.outcome import Reported
    from recovery_proxy.store import Store

MEMORY = (
    "report it over HTTP: POST /admin/sessions/{key}/outcome, or the harness's "
    "POST /v1/recovery/sessions/{session}/outcome"
)


def set_outcome(
    settings: Settings, target: str, result: str, score: float | None, note: str | None
) -> int:
    """Record `result` (and `score`, `note`) as the outcome of session `target`; print it and
    return the exit code (1: no such session, or a name several sessions carry)."""
    from recovery_proxy.experiment.arms import arm_of
    from recovery_proxy.session.keys import is_key
    from recovery_proxy.session.outcome import (
        BadReport,
        UnknownSession,
        checked,
        conversation,
        record_outcome,
    )

    if refuse_memory(settings, MEMORY):
        return 2
    fields = {"result": result, "score": score, "note": note}
    try:
        report = checked({k: v for k, v in fields.items() if v is not None})
    except BadReport as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2

    async def job(store: Store) -> Reported | list[str]:
        keys = [target]
        if not is_key(target):
            found = await store.list_sessions(MAX_SCAN)
            keys = [k for k, state in found if state.name == target and conversation(state)]
            if len(keys) > 1:
                return keys
        try:
            return await record_outcome(store, keys, report, "operator")
        except UnknownSession:
            return []

    code, done = on_store(settings, "write to", job)
    if done is None:
        return code
    where = settings.store.describe()
    if isinstance(done, list):
        if done:
            print(
                f"recovery-proxy: {len(done)} sessions are named {target!r} in {where}; give "
                f"the key of one: {', '.join(done)}",
                file=sys.stderr,
            )
        else:
            print(
                f"recovery-proxy: no live session has the name or key {target!r} in {where}; "
                "`recovery-proxy sessions list` shows each session's name and key",
                file=sys.stderr,
            )
        return 1
    o = done.outcome
    extra = (f", score {o.score:g}" if o.score is not None else "") + (
        f", note {o.note!r}" if o.note else ""
    )
    arm = arm_of(done.key, settings.control_fraction)
    print(f"session {done.key} ({done.name}, {arm}): {o.result}{extra}")
    return 0
