"""Where a tenant's known fixes live (proxy/core/known_fixes.py): one store entry per tenant,
`tenant:digest("known-fixes")`, named "known fixes". It is bookkeeping, not a conversation:
like a continuity index it carries a `links` entry, so session lists, the inspector and the
A/B report's arms skip it. `recovery-proxy sessions purge --session "known fixes"` (every
tenant's) or `--key` (one tenant's) forgets them; they expire like an idle session.

Every store call fails open: no fixes offered, nothing learned."""

from __future__ import annotations

import logging

from recovery_proxy.core import known_fixes
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.resolution_state import KnownFix
from recovery_proxy.core.state import Link, SessionState
from recovery_proxy.session.keys import scoped
from recovery_proxy.store import Store

log = logging.getLogger(__name__)

NAME = "known fixes"


def known_key(session: str) -> str:
    """The known-fixes entry of the tenant a session key belongs to."""
    return scoped(session.partition(":")[0], "known-fixes")


class KnownFixes:
    """Reads the fixes a session may be offered, and records what a request taught."""

    def __init__(self, store: Store, minimum: int) -> None:
        self.store = store
        self.minimum = minimum

    async def offers(self, session: str) -> list[KnownFix]:
        """The tenant's fixes seen in enough other sessions ([] if the store fails)."""
        try:
            known = await self.store.get(known_key(session))
        except Exception as exc:
            log.debug("known fixes unavailable: %s", exc)
            return []
        return known_fixes.eligible(known, session, self.minimum)

    async def record(self, session: str, plan: Plan, now: float) -> None:
        """Learn this request's resolutions and count its offers' outcomes."""
        if not plan.learned and not plan.known:
            return
        key = known_key(session)

        def apply(known: SessionState) -> None:
            known.name = NAME
            known.links = {NAME: Link(key=key, touched=now)}  # bookkeeping: skipped as such
            for resolution in plan.learned:
                known_fixes.learn(known, session, resolution, now)
            for fix, what in plan.known:
                known_fixes.count(known, fix, what)
            known.updated = now
            known.trim()

        try:
            await self.store.update(key, apply)
        except Exception as exc:
            log.debug("known fixes not recorded: %s", exc)
