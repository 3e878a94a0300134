"""What the running proxy holds, for the control plane and the admin API to read.

Like Starlette's `app.state`: the app owns the store and the rules, opened in its lifespan,
and hands this one value to whoever needs them; nobody reaches into the rewriter.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.rules.watch import RulesHolder
from recovery_proxy.store import Store


@dataclass(slots=True)
class ProxyState:
    """Settings and metrics from the start; the store and rules once the lifespan has run."""

    settings: Settings
    metrics: Metrics
    ready: bool = False
    store: Store | None = None
    rules: RulesHolder | None = None

    async def store_reachable(self) -> str | None:
        """None when the store answers a read within `PROBE_TIMEOUT`; else why not."""
        if self.store is None:
            return "not open yet"
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self.store.get(PROBE_KEY)
        except Exception as exc:  # any failure to answer is "unreachable", with its name
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return None


PROBE_KEY = "readiness-probe"  # never a session key (those are `tenant:digest`)
PROBE_TIMEOUT = 2.0
