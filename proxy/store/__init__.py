"""Session stores, chosen by a spec: `memory`, `sqlite[:PATH]`, `redis://HOST:PORT/DB`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from recovery_proxy.config import Settings
from recovery_proxy.store.base import Store, StoreUnavailable
from recovery_proxy.store.memory import MemoryStore
from recovery_proxy.store.sqlite import SqliteStore

__all__ = [
    "MemoryStore",
    "SqliteStore",
    "Store",
    "StoreUnavailable",
    "check_spec",
    "default_sqlite_path",
    "open_store",
    "sqlite_path",
]

SPECS = "memory, sqlite, sqlite:PATH, redis://HOST:PORT/DB or rediss://HOST:PORT/DB"


def default_sqlite_path() -> Path:
    """`sessions.db` in the user's state directory (e.g. ~/.local/state/recovery-proxy)."""
    from platformdirs import user_state_dir

    return Path(user_state_dir("recovery-proxy")) / "sessions.db"


def sqlite_path(spec: str) -> Path | None:
    """The file a `sqlite` / `sqlite:PATH` / `sqlite:///ABS/PATH` spec names; None if the
    spec is not a sqlite one."""
    if spec == "sqlite":
        return default_sqlite_path()
    if not spec.startswith("sqlite:"):
        return None
    rest = spec.removeprefix("sqlite:")
    if rest.startswith("//"):  # URL style: sqlite:///abs/path, sqlite://relative/path
        rest = rest[2:]
    return Path(rest).expanduser() if rest else default_sqlite_path()


def check_spec(spec: str) -> str:
    """The kind of store `spec` names (`memory`, `sqlite`, `redis`); ValueError otherwise."""
    spec = spec.strip()
    if spec == "memory":
        return "memory"
    if spec.startswith(("redis://", "rediss://")):
        return "redis"
    if sqlite_path(spec) is not None:
        return "sqlite"
    raise ValueError(f"unknown session store {spec!r}: use {SPECS}")


async def open_store(settings: Settings) -> Store:
    """The store the settings name. Raises ValueError for a spec it does not know."""
    spec = settings.store.strip()
    kind = check_spec(spec)
    if kind == "memory":
        return MemoryStore(settings.max_sessions, settings.session_ttl_seconds)
    if kind == "redis":  # imported here: redis-py costs ~0.1 s of start-up for the others
        from recovery_proxy.store.redis import RedisStore

        return RedisStore(spec, settings.redis_prefix, settings.session_ttl_seconds)
    path = sqlite_path(spec)
    assert path is not None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteStore(path, settings.session_ttl_seconds, settings.sqlite_busy_timeout)
    except (OSError, sqlite3.Error) as exc:
        raise StoreUnavailable(f"cannot open the session store {path}: {exc}") from None
