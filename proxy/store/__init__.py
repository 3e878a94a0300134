"""Session stores, chosen by a spec: `memory`, `sqlite:PATH`, `redis://HOST:PORT/DB`."""

from __future__ import annotations

from proxy.config import Settings
from proxy.store.base import Store, StoreUnavailable
from proxy.store.memory import MemoryStore

__all__ = ["MemoryStore", "Store", "StoreUnavailable", "open_store"]


async def open_store(settings: Settings) -> Store:
    """The store the settings name."""
    spec = settings.store
    if spec == "memory":
        return MemoryStore(settings.max_sessions, settings.session_ttl_seconds)
    raise ValueError(f"unknown store {spec!r}: use memory, sqlite:PATH or redis://HOST:PORT/DB")
