"""Shared store for many replicas: one Redis string per session, JSON, with a per-key TTL.

`update` is optimistic: WATCH the key, read it, run `fn` on the fresh copy, write it in
MULTI/EXEC; if another writer got there first, EXEC fails and the whole step is re-run on the
new value. Timeouts are short and connection errors are not retried at length, so an outage
surfaces within about a second and the pipeline degrades to stateless recovery; the pool
reconnects by itself once Redis is back.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, TimeoutError, WatchError

from recovery_proxy.core.state import SessionState
from recovery_proxy.store.base import StoreUnavailable

T = TypeVar("T")

MAX_ATTEMPTS = 200  # optimistic retries of one update before giving up
SOCKET_TIMEOUT = 1.0
MAX_CONNECTIONS = 64
SCAN_BATCH = 500


def _escape_glob(text: str) -> str:
    """`text` as a literal inside a Redis MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class RedisStore:
    """Sessions as `prefix + key` -> JSON state, each expiring `ttl_seconds` after its last
    write."""

    def __init__(
        self, url: str, prefix: str = "recovery-proxy:", ttl_seconds: float = 24 * 3600
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.ttl_ms = max(1, int(ttl_seconds * 1000))
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=MAX_CONNECTIONS,
            timeout=2 * SOCKET_TIMEOUT,  # wait for a free pooled connection
            socket_connect_timeout=SOCKET_TIMEOUT,
            socket_timeout=SOCKET_TIMEOUT,
            # One immediate retry on a fresh connection (a pooled socket that died while Redis
            # restarted), no backoff: a real outage must fail fast, not after seconds.
            retry=Retry(NoBackoff(), 1, (ConnectionError,)),
        )
        self.client = Redis.from_pool(pool)

    def _key(self, key: str) -> str:
        return self.prefix + key

    async def update(self, key: str, fn: Callable[[SessionState], T], heavy: bool = False) -> T:
        """Apply `fn` to the session's state (empty if new or expired) and save it atomically;
        `fn` may run several times, each time on a fresh copy."""
        name = self._key(key)
        async with self.client.pipeline(transaction=True) as pipe:
            for attempt in range(MAX_ATTEMPTS):
                try:
                    await pipe.watch(name)
                    raw = await pipe.get(name)
                    state = SessionState.model_validate_json(raw) if raw else SessionState()
                    result = await asyncio.to_thread(fn, state) if heavy else fn(state)
                    pipe.multi()
                    pipe.set(name, state.model_dump_json(), px=self.ttl_ms)
                    await pipe.execute()
                    return result
                except WatchError as exc:
                    if isinstance(exc.__context__, ConnectionError | TimeoutError):
                        raise StoreUnavailable(f"redis: {exc.__context__}") from exc
                    await pipe.reset()
                    await asyncio.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise StoreUnavailable(f"redis: {name!r} still contended after {MAX_ATTEMPTS} attempts")

    async def get(self, key: str) -> SessionState | None:
        raw = await self.client.get(self._key(key))
        return SessionState.model_validate_json(raw) if raw else None

    async def list_sessions(self, limit: int = 1000) -> list[tuple[str, SessionState]]:
        """Sessions under the prefix, most recently updated first. SCAN visits every key, so
        this is for operators (CLI, admin), never for the request path."""
        found: list[tuple[str, SessionState]] = []
        pattern = _escape_glob(self.prefix) + "*"
        names = [name async for name in self.client.scan_iter(match=pattern, count=SCAN_BATCH)]
        for start in range(0, len(names), SCAN_BATCH):
            chunk = names[start : start + SCAN_BATCH]
            for name, raw in zip(chunk, await self.client.mget(chunk), strict=True):
                if raw:
                    key = name.decode() if isinstance(name, bytes) else str(name)
                    found.append(
                        (key.removeprefix(self.prefix), SessionState.model_validate_json(raw))
                    )
        found.sort(key=lambda item: item[1].updated, reverse=True)
        return found[:limit]

    async def purge(self, key: str | None = None) -> int:
        """Delete one session, or every session under the prefix; returns how many went."""
        if key is not None:
            return int(await self.client.delete(self._key(key)))
        removed = 0
        batch: list[bytes] = []
        pattern = _escape_glob(self.prefix) + "*"
        async for name in self.client.scan_iter(match=pattern, count=SCAN_BATCH):
            batch.append(name)
            if len(batch) >= SCAN_BATCH:
                removed += int(await self.client.delete(*batch))
                batch.clear()
        if batch:
            removed += int(await self.client.delete(*batch))
        return removed

    async def close(self) -> None:
        await self.client.aclose()
