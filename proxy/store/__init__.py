"""Session stores, chosen by the settings' `StoreSpec`: memory, sqlite, redis."""

from __future__ import annotations

import sqlite3

from recovery_proxy.config import Settings
from recovery_proxy.store.base import Store, StoreUnavailable
from recovery_proxy.store.memory import MemoryStore
from recovery_proxy.store.sqlite import SqliteStore

__all__ = ["MemoryStore", "SqliteStore", "Store", "StoreUnavailable", "open_store"]


async def open_store(settings: Settings) -> Store:
    """The store `settings.store` names; `StoreUnavailable` for a sqlite file it cannot open."""
    spec = settings.store
    if spec.url is not None:  # redis; imported here: redis-py costs ~0.1 s of start-up
        from recovery_proxy.store.redis import RedisStore

        return RedisStore(spec.url, settings.redis_prefix, settings.session_ttl_seconds)
    if spec.path is None:
        return MemoryStore(settings.max_sessions, settings.session_ttl_seconds)
    try:
        spec.path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteStore(spec.path, settings.session_ttl_seconds, settings.sqlite_busy_timeout)
    except (OSError, sqlite3.Error) as exc:
        raise StoreUnavailable(f"cannot open the session store {spec.path}: {exc}") from None
