"""Embedded store: one SQLite file (WAL), safe to share between processes on one machine.

`update` reads, applies `fn` and writes inside a `BEGIN IMMEDIATE` transaction: SQLite's
write lock makes it atomic across every process using the file. An ordinary update runs right
on the event loop when it can have the file at once (no waiting: a busy timeout of 0; a WAL
commit without fsync is a write() of a few pages, ~20 us); a handoff to a worker thread and
back cost ~0.25 ms, more than everything else an ordinary request costs. Anything that may
wait or take long runs on the one worker thread: an update when another process holds the
write lock (it waits up to the busy timeout there), a heavy update, reads for operators,
purges, expiry sweeps and WAL checkpoints (automatic checkpoints are off: an fsync on the
event loop would stall every request).

Durability: a change is committed before the request it came from is forwarded. WAL with
`synchronous = NORMAL` survives a crash of the proxy process; a power loss or OS crash can
lose the last few transactions (the next requests re-record what they still show).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from recovery_proxy.core.state import SessionState
from recovery_proxy.store.base import LiveStates

T = TypeVar("T")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (key TEXT PRIMARY KEY, state BLOB, updated REAL)",
    "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated)",
)
BUSY_TIMEOUT = 1.0  # seconds a request waits for another process's write lock, then fails open
EXPIRE_EVERY = 256  # updates between sweeps of expired rows
TOUCH_EVERY = 60.0  # seconds: an unchanged session's idle clock is refreshed at most this often
CHECK_FILE_EVERY = 1.0  # seconds between checks that the file is still the one we opened
CHECKPOINT_EVERY = 512  # updates between WAL checkpoints (on the worker thread)

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
        self._live = LiveStates()
        # One connection, used by the event loop (inline updates) or the worker thread, never
        # both at once: whoever holds the lock has it.
        self._lock = threading.Lock()
        self._busy_ms = -1
        self._inode = 0
        self._closed = False
        self._checked = 0.0
        # Open now, so a bad path fails at start-up with a clear error, not on a request.
        self._executor.submit(self._connect).result()

    def _connect(self) -> None:
        """Open the file, in WAL mode, with the schema. Another process setting up the same
        new file can make SQLite answer "locked" at once, without waiting (seen in 1 of 45
        simultaneous starts): such attempts are retried within the busy timeout."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                return self._connect_once()
            except sqlite3.OperationalError as exc:
                locked = "locked" in str(exc) or "busy" in str(exc)
                if not locked or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _connect_once(self) -> None:
        conn = sqlite3.connect(
            self.path, isolation_level=None, timeout=self.busy_timeout, check_same_thread=False
        )
        try:
            self._busy_ms = -1
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
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
        """`job` on the worker thread, waiting up to the busy timeout for the file."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._on_worker, job)

    def _on_worker(self, job: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return self._with_connection(job, int(self.busy_timeout * 1000))

    def _with_connection(self, job: Callable[[sqlite3.Connection], T], busy_ms: int) -> T:
        """Run `job` on the (re)opened connection; the caller holds the lock."""
        if self._closed:
            raise RuntimeError(f"session store {self.path} is closed")
        if self._conn is None:  # reopening failed before (directory gone?): try again
            self._connect()
        else:
            self._reopen_if_replaced()
        assert self._conn is not None
        if busy_ms != self._busy_ms:
            self._conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            self._busy_ms = busy_ms
        return job(self._conn)

    def _inline(self, job: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """(True, result) when `job` ran here and now without waiting; (False, None) when the
        connection or the file was busy (the caller hands the job to the worker instead)."""
        if not self._lock.acquire(blocking=False):
            return False, None
        try:
            return True, self._with_connection(job, 0)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                return False, None
            raise
        finally:
            self._lock.release()

    def _maintain(self) -> None:
        """Every so many updates, in the background on the worker: expire idle sessions and
        checkpoint the WAL into the database file."""
        self._updates += 1
        if self._closed:
            return
        if self._updates % EXPIRE_EVERY == 0:
            self._executor.submit(self._on_worker, self._sweep)
        if self._updates % CHECKPOINT_EVERY == 0:
            self._executor.submit(self._on_worker, self._checkpoint)

    def _sweep(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("DELETE FROM sessions WHERE updated < ?", (time.time() - self.ttl,))
        except sqlite3.Error as exc:
            log.debug("expiry sweep skipped: %s", exc)

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            log.debug("WAL checkpoint skipped: %s", exc)

    def _fresh(self, row: tuple[bytes, float] | None, now: float) -> SessionState | None:
        if row is None or now - row[1] > self.ttl:
            return None
        return SessionState.model_validate_json(row[0])

    async def update(self, key: str, fn: Callable[[SessionState], T], heavy: bool = False) -> T:
        """Apply `fn` to the session's state (empty if new or expired) and save it, in one
        write transaction: here on the event loop if the file is free, else (and when `heavy`)
        on the worker thread. A state that did not change is not written again; a hot session
        is not parsed again (`LiveStates`)."""

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
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._live.put(key, new, state)
            self._maintain()
            return result

        if not heavy:
            done, result = self._inline(job)
            if done:
                return result  # type: ignore[return-value]
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
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, job)
        self._executor.shutdown(wait=True)
