"""`recovery-proxy sessions purge`: delete stored session state, one session or all."""

from __future__ import annotations

import asyncio
import os
import sys
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from proxy.config import Settings

DEFAULT_SERVE_STORE = "sqlite"  # `serve` without --store or RECOVERY_PROXY_STORE


def store_spec(flag: str | None) -> str:
    """The store a command uses: --store, else RECOVERY_PROXY_STORE, else the default file."""
    return flag or os.environ.get("RECOVERY_PROXY_STORE") or DEFAULT_SERVE_STORE


def describe(spec: str) -> str:
    """The store spec as it is safe to print: a sqlite file's path, a URL without password."""
    from proxy.store import sqlite_path

    path = sqlite_path(spec)
    if path is not None:
        return str(path)
    parts = urlsplit(spec)
    if parts.password is None:
        return spec
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{netloc}"))


def purge_sessions(spec: str, key: str | None) -> int:
    """Delete session `key` (every session when None) from the store `spec`; print how many
    went and return the exit code."""
    if spec.strip() == "memory":
        print(
            "recovery-proxy: the memory store lives inside the running proxy; "
            "restart it to forget every session",
            file=sys.stderr,
        )
        return 2
    try:
        settings = Settings(store=spec)
    except ValidationError as exc:
        print(f"recovery-proxy: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    try:
        removed = asyncio.run(_purge(settings, key))
    except ValueError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store is unreachable or unreadable: say so, plainly
        print(f"recovery-proxy: could not purge {describe(spec)}: {exc}", file=sys.stderr)
        return 1
    noun = "session" if removed == 1 else "sessions"
    where = f"session {key!r}" if key is not None else "all sessions"
    print(f"removed {removed} {noun} ({where}) from {describe(spec)}")
    return 0


async def _purge(settings: Settings, key: str | None) -> int:
    from proxy.store import open_store

    store = await open_store(settings)
    try:
        return await store.purge(key)
    finally:
        await store.close()
