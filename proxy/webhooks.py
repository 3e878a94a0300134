"""Escalation webhooks: each event POSTed as JSON to the rules' `webhook_url`, in the
background (the request never waits for it) and at most once (a failure is logged, not
retried). The HTTP client is made on the first event: most deployments never send one, and
importing httpx costs start-up ~0.03 s."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("recovery_proxy")
TIMEOUT = 5.0  # seconds per POST


class Webhooks:
    """Posts events; `background` holds the posts still under way (tests await them)."""

    def __init__(self) -> None:
        self.client: Any = None
        self.background: set[asyncio.Task[None]] = set()

    def send(self, url: str, events: list[dict[str, Any]]) -> None:
        for event in events:
            task = asyncio.create_task(self._post(url, event))
            self.background.add(task)
            task.add_done_callback(self.background.discard)

    async def _post(self, url: str, event: dict[str, Any]) -> None:
        import httpx

        if self.client is None:
            self.client = httpx.AsyncClient(timeout=TIMEOUT, trust_env=False)
        try:
            await self.client.post(url, json=event)
        except httpx.HTTPError as exc:
            log.warning("escalation webhook to %s failed: %s", url, exc)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
