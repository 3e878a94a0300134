"""Hot reload: watch the rules directory, swap in new rules atomically, keep the last good."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from recovery_proxy.metrics import Metrics
from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import Rules, RulesError

log = logging.getLogger("recovery_proxy")


class RulesHolder:
    """Holds the active rules; `current` is always a complete, valid rule set."""

    def __init__(
        self,
        directory: Path | None,
        metrics: Metrics,
        extra: Path | None = None,
        loaded: Rules | None = None,
    ) -> None:
        """Load the rules, unless start-up has already loaded (and checked) them: `loaded`."""
        self.directory = directory or default_rules_dir()
        self.extra = extra
        self.metrics = metrics
        self.current: Rules = loaded or load_rules(self.directory, extra)
        metrics.set_rules_version(self.current.version)
        log.info("rules loaded from %s, version %s", self.current.source, self.current.version)
        self._task: asyncio.Task[None] | None = None

    def apply(self) -> bool:
        """Load the directory again and swap the result in; whether the version changed.
        A broken directory raises RulesError (naming file, rule and field) and the last good
        rules stay active."""
        try:
            rules = load_rules(self.directory, self.extra)
        except RulesError as exc:
            self.metrics.rules_reloads.labels("rejected").inc()
            log.error("rules reload rejected, keeping version %s: %s", self.current.version, exc)
            raise
        if rules.version == self.current.version:
            return False
        self.current = rules
        self.metrics.set_rules_version(rules.version)
        self.metrics.rules_reloads.labels("applied").inc()
        log.info("rules reloaded, version %s", rules.version)
        return True

    def reload(self) -> bool:
        """Load the directory again; on any problem keep the last good rules."""
        try:
            self.apply()
        except RulesError:
            return False
        return True

    async def _watch(self) -> None:
        from watchfiles import awatch

        watched = [self.directory] + ([self.extra] if self.extra else [])
        async for _ in awatch(*watched, debounce=200, step=50, recursive=False):
            self.reload()

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="rules-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
