"""In-process store: LRU-bounded, idle expiry, one lock per session."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from proxy.state import SessionState

T = TypeVar("T")


class MemoryStore:
    """Sessions in a dict, least recently used evicted past `max_sessions`."""

    def __init__(self, max_sessions: int = 10_000, ttl_seconds: float = 24 * 3600) -> None:
        self.max_sessions = max_sessions
        self.ttl = ttl_seconds
        self.sessions: OrderedDict[str, SessionState] = OrderedDict()
        self.locks: dict[str, asyncio.Lock] = {}

    def _load(self, key: str, now: float) -> SessionState:
        state = self.sessions.get(key)
        if state is None or now - state.updated > self.ttl:
            state = SessionState()
        return state

    async def update(self, key: str, fn: Callable[[SessionState], T]) -> T:
        lock = self.locks.setdefault(key, asyncio.Lock())
        async with lock:
            now = time.time()
            state = self._load(key, now)
            result = fn(state)
            self.sessions[key] = state
            self.sessions.move_to_end(key)
            while len(self.sessions) > self.max_sessions:
                evicted, _ = self.sessions.popitem(last=False)
                self.locks.pop(evicted, None)
        if not lock.locked() and key not in self.sessions:
            self.locks.pop(key, None)
        return result

    async def get(self, key: str) -> SessionState | None:
        state = self.sessions.get(key)
        if state is None or time.time() - state.updated > self.ttl:
            return None
        return state

    async def purge(self, key: str | None = None) -> int:
        if key is None:
            count = len(self.sessions)
            self.sessions.clear()
            return count
        return 1 if self.sessions.pop(key, None) is not None else 0

    async def close(self) -> None:
        return None
