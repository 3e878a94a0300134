"""The store interface: atomic read-modify-write of one session's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from proxy.core.state import SessionState

T = TypeVar("T")


class StoreUnavailable(Exception):
    """The backing store cannot be reached; the caller degrades to stateless recovery."""


class Store(Protocol):
    """Where session state lives. `update` applies `fn` atomically: concurrent updates of one
    session never lose or double a change, whichever process or replica makes them. `fn` must
    be safe to run more than once (optimistic stores retry it on a fresh copy)."""

    async def update(self, key: str, fn: Callable[[SessionState], T]) -> T: ...

    async def get(self, key: str) -> SessionState | None: ...

    async def purge(self, key: str | None = None) -> int: ...

    async def close(self) -> None: ...
