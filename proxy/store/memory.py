"""In-process store: LRU-bounded, idle expiry, one lock per session.

Sessions are kept serialised (compact JSON), so a failed update never leaves a half-changed
state behind. The `PLAIN` most recently used ones stay plain JSON, and live as objects too
(`LiveStates`): a hot session is neither parsed nor compressed on a request. Older ones are
zlib-compressed (~6x smaller: a 10-failure session takes ~2.6 KB instead of 14 KB), so
10,000 sessions fit in well under 150 MB; one compression per update, and only while
sessions churn (a long session compressed on every request cost 0.75 ms at 2,000 messages).
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from recovery_proxy.core.state import SessionState
from recovery_proxy.store.base import LiveStates

T = TypeVar("T")
LEVEL = 3  # zlib, measured on 14 KB of state JSON: 33 us to 2.6 KB (level 6: 69 us, 2.4 KB)
PLAIN = 512  # sessions kept as plain JSON (as many as `LiveStates` keeps live)


class MemoryStore:
    """Sessions in a dict, least recently used evicted past `max_sessions`."""

    def __init__(self, max_sessions: int = 10_000, ttl_seconds: float = 24 * 3600) -> None:
        self.max_sessions = max_sessions
        self.ttl = ttl_seconds
        self.sessions: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self.plain: OrderedDict[str, None] = OrderedDict()  # keys stored uncompressed
        self.locks: dict[str, asyncio.Lock] = {}
        self.live = LiveStates(PLAIN)

    def _json(self, key: str, data: bytes) -> bytes:
        return data if key in self.plain else zlib.decompress(data)

    def _load(self, key: str, now: float) -> SessionState | None:
        entry = self.sessions.get(key)
        if entry is None or now - entry[0] > self.ttl:
            return None
        return SessionState.model_validate_json(self._json(key, entry[1]))

    async def update(self, key: str, fn: Callable[[SessionState], T], heavy: bool = False) -> T:
        lock = self.locks.setdefault(key, asyncio.Lock())
        async with lock:
            now = time.time()
            entry = self.sessions.get(key)
            raw = b""
            if entry is not None and now - entry[0] <= self.ttl:
                raw = self._json(key, entry[1])
            state = self.live.take(key, raw)
            # A heavy update runs on a worker thread: the state is this call's alone meanwhile
            # (taken out of the live cache, and the session's lock is held).
            result = await asyncio.to_thread(fn, state) if heavy else fn(state)
            new = state.model_dump_json().encode()
            stored = raw if new == raw else new
            self.sessions[key] = (now, stored)
            self.sessions.move_to_end(key)
            self.plain[key] = None
            self.plain.move_to_end(key)
            self.live.put(key, stored, state)
            while len(self.plain) > PLAIN:  # the least recently used plain one gets packed
                cold, _ = self.plain.popitem(last=False)
                if (old := self.sessions.get(cold)) is not None:
                    self.sessions[cold] = (old[0], zlib.compress(old[1], LEVEL))
            while len(self.sessions) > self.max_sessions:
                evicted, _ = self.sessions.popitem(last=False)
                self.plain.pop(evicted, None)
                self.locks.pop(evicted, None)
                self.live.drop(evicted)
        return result

    async def get(self, key: str) -> SessionState | None:
        return self._load(key, time.time())

    async def list_sessions(self, limit: int = 1000) -> list[tuple[str, SessionState]]:
        now = time.time()
        found: list[tuple[str, SessionState]] = []
        for key in reversed(self.sessions):  # most recently used first
            state = self._load(key, now)
            if state is not None:
                found.append((key, state))
                if len(found) >= limit:
                    break
        return found

    async def purge(self, key: str | None = None) -> int:
        self.live.drop(key)
        if key is None:
            count = len(self.sessions)
            self.sessions.clear()
            self.plain.clear()
            self.locks.clear()
            return count
        self.locks.pop(key, None)
        self.plain.pop(key, None)
        return 1 if self.sessions.pop(key, None) is not None else 0

    async def close(self) -> None:
        return None
