"""`recovery-proxy sessions list | purge`: look at stored session state; delete one session
or all."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
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


MEMORY_PURGE = "restart it to forget every session"
MEMORY_LIST = "ask it over HTTP (x-recovery-proxy-session headers), or serve with --store sqlite"


def _refuse_memory(spec: str, advice: str) -> bool:
    """True (after saying why) for the memory store: only the proxy holding it can see it."""
    if spec.strip() != "memory":
        return False
    print(
        f"recovery-proxy: the memory store lives inside the running proxy; {advice}",
        file=sys.stderr,
    )
    return True


def purge_sessions(spec: str, key: str | None) -> int:
    """Delete session `key` (every session when None) from the store `spec`; print how many
    went and return the exit code."""
    if _refuse_memory(spec, MEMORY_PURGE):
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


# ---- sessions list -----------------------------------------------------------------------

COLUMNS = ("key", "tenant", "arm", "last seen", "results", "failures", "compactions")


def list_sessions(spec: str, limit: int, as_json: bool) -> int:
    """Print one row per stored session (most recent first, at most `limit`): the key as the
    `x-recovery-proxy-session` header shows it and `sessions purge --key` takes it, the tenant
    hash, the A/B arm, when it was last seen and its counters. Continuity-index states (the
    bookkeeping that links fingerprinted conversations) are not sessions and are skipped."""
    if _refuse_memory(spec, MEMORY_LIST):
        return 2
    if limit < 1:
        print("recovery-proxy: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        settings = Settings(store=spec)
    except ValidationError as exc:
        print(f"recovery-proxy: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    try:
        rows = asyncio.run(_rows(settings, limit))
    except ValueError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store is unreachable or unreadable: say so, plainly
        print(f"recovery-proxy: could not list {describe(spec)}: {exc}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no sessions in {describe(spec)}")
    else:
        print(_table(rows))
    return 0


async def _rows(settings: Settings, limit: int) -> list[dict[str, object]]:
    from proxy.arms import arm_of
    from proxy.store import open_store

    store = await open_store(settings)
    try:
        # Index states take slots in the store's answer: ask for more than are shown.
        found = await store.list_sessions(limit * 2 + 16)
    finally:
        await store.close()
    now = time.time()
    rows: list[dict[str, object]] = []
    for key, state in found:
        if state.links:
            continue
        rows.append(
            {
                "key": key,
                "tenant": key.partition(":")[0],
                "arm": arm_of(key, settings.control_fraction),
                "updated": state.updated,
                "last_seen": _when(state.updated, now),
                "results": state.stats.results,
                "failures": state.stats.failures,
                "compactions": len(state.compactions),
            }
        )
        if len(rows) >= limit:
            break
    return rows


def _when(updated: float, now: float) -> str:
    """`2026-05-09 07:35:25 (3m ago)`, in local time."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(updated))
    age = max(0, int(now - updated))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if age >= size:
            return f"{stamp} ({age // size}{unit} ago)"
    return f"{stamp} ({age}s ago)"


def _table(rows: list[dict[str, object]]) -> str:
    cells = [
        [
            str(row[name])
            for name in ("key", "tenant", "arm", "last_seen", "results", "failures", "compactions")
        ]
        for row in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
    numeric = {4, 5, 6}

    def line(values: list[str] | tuple[str, ...]) -> str:
        return "  ".join(
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ).rstrip()

    return "\n".join([line(COLUMNS), *(line(c) for c in cells)])
