"""Embedded store: one SQLite file (WAL), safe to share between processes on one machine.

Every call runs on one dedicated worker thread that owns the connection, so the event loop
never blocks on disk. `update` reads, applies `fn` and writes inside a `BEGIN IMMEDIATE`
transaction: SQLite's write lock makes it atomic across every process using the file.

Durability: a change is committed before the request it came from is forwarded. WAL with
`synchronous = NORMAL` survives a crash of the proxy process; a power loss or OS crash can
lose the last few transactions (the next requests re-record what they still show).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from proxy.core.state import SessionState
from proxy.store.base import LiveStates

T = TypeVar("T")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (key TEXT PRIMARY KEY, state BLOB, updated REAL)",
    "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated)",
)
BUSY_TIMEOUT = 1.0  # seconds a request waits for another process's write lock, then fails open
EXPIRE_EVERY = 256  # updates between sweeps of expired rows
TOUCH_EVERY = 60.0  # seconds: an unchanged session's idle clock is refreshed at most this often
CHECK_FILE_EVERY = 1.0  # seconds between checks that the file is still the one we opened

log = logging.getLogger("recovery_proxy")


class SqliteStore:
    """Sessions in a SQLite file; idle sessions expire after `ttl_seconds`."""

    def __init__(
        self, path: str | Path, ttl_seconds: float = 24 * 3600, busy_timeout: float = BUSY_TIMEOUT
    ) -> None:
        self.path = Path(path)
        self.ttl = ttl_seconds
        self.busy_timeout = busy_timeout
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-store")
        self._conn: sqlite3.Connection | None = None
        self._updates = 0
        self._live = LiveStates()  # touched only on the worker thread
        self._inode = 0
        self._closed = False
        self._checked = 0.0
        # Open now, so a bad path fails at start-up with a clear error, not on a request.
        self._executor.submit(self._connect).result()

    def _connect(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=self.busy_timeout)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            for statement in SCHEMA:
                conn.execute(statement)
            self._inode = os.stat(self.path).st_ino
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._checked = time.monotonic()

    def _reopen_if_replaced(self) -> None:
        """An open connection to a deleted (or replaced) file writes into an unlinked inode:
        every change would vanish at the next restart. At most once a second, check that the
        path still names the file we opened; if not, open (and create) it again."""
        now = time.monotonic()
        if now - self._checked < CHECK_FILE_EVERY:
            return
        self._checked = now
        try:
            if os.stat(self.path).st_ino == self._inode:
                return
        except FileNotFoundError:
            pass
        log.warning("session store %s was deleted or replaced; opening it again", self.path)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._live.drop()
        self._connect()

    async def _run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._with_connection, job)

    def _with_connection(self, job: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise RuntimeError(f"session store {self.path} is closed")
        if self._conn is None:  # reopening failed before (directory gone?): try again
            self._connect()
        else:
            self._reopen_if_replaced()
        assert self._conn is not None
        return job(self._conn)

    def _fresh(self, row: tuple[bytes, float] | None, now: float) -> SessionState | None:
        if row is None or now - row[1] > self.ttl:
            return None
        return SessionState.model_validate_json(row[0])

    async def update(self, key: str, fn: Callable[[SessionState], T], heavy: bool = False) -> T:
        """Apply `fn` to the session's state (empty if new or expired) and save it, in one
        write transaction. `fn` runs on the store's worker thread, `heavy` or not. A state that
        did not change is not written again; a hot session is not parsed again (`LiveStates`)."""

        def job(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                now = time.time()
                row = conn.execute(
                    "SELECT state, updated FROM sessions WHERE key = ?", (key,)
                ).fetchone()
                raw: bytes = row[0] if row is not None and now - row[1] <= self.ttl else b""
                state = self._live.take(key, raw)
                result = fn(state)
                new = state.model_dump_json().encode()
                if new != raw or now - row[1] > TOUCH_EVERY:
                    conn.execute(
                        "INSERT INTO sessions (key, state, updated) VALUES (?, ?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET state = excluded.state, "
                        "updated = excluded.updated",
                        (key, new, now),
                    )
                self._updates += 1
                if self._updates % EXPIRE_EVERY == 0:
                    conn.execute("DELETE FROM sessions WHERE updated < ?", (now - self.ttl,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._live.put(key, new, state)
            return result

        return await self._run(job)

    async def get(self, key: str) -> SessionState | None:
        def job(conn: sqlite3.Connection) -> SessionState | None:
            row = conn.execute(
                "SELECT state, updated FROM sessions WHERE key = ?", (key,)
            ).fetchone()
            return self._fresh(row, time.time())

        return await self._run(job)

    async def list_sessions(self, limit: int = 1000) -> list[tuple[str, SessionState]]:
        def job(conn: sqlite3.Connection) -> list[tuple[str, SessionState]]:
            rows = conn.execute(
                "SELECT key, state FROM sessions WHERE updated >= ? ORDER BY updated DESC LIMIT ?",
                (time.time() - self.ttl, limit),
            ).fetchall()
            return [(key, SessionState.model_validate_json(raw)) for key, raw in rows]

        return await self._run(job)

    async def purge(self, key: str | None = None) -> int:
        """Delete one session, or all of them; returns how many rows went."""

        def job(conn: sqlite3.Connection) -> int:
            self._live.drop(key)
            if key is None:
                return conn.execute("DELETE FROM sessions").rowcount
            return conn.execute("DELETE FROM sessions WHERE key = ?", (key,)).rowcount

        return await self._run(job)

    async def expire(self) -> int:
        """Delete every session idle for longer than the TTL; returns how many went."""

        def job(conn: sqlite3.Connection) -> int:
            cutoff = time.time() - self.ttl
            return conn.execute("DELETE FROM sessions WHERE updated < ?", (cutoff,)).rowcount

        return await self._run(job)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def job() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, job)
        self._executor.shutdown(wait=True)
