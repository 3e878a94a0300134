"""What the running proxy holds, for the control plane and the admin API to read.

Like Starlette's `app.state`: the app owns the store and the rules, opened in its lifespan,
and hands this one value to whoever needs them; nobody reaches into the rewriter.
"""

from __future__ import annotations

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
