"""`recovery-proxy sessions list | purge`: look at stored session state; delete one session
or all. (`sessions outcome` is cli/outcome.py.)"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from recovery_proxy.config import Settings
    from recovery_proxy.core.state import SessionState
    from recovery_proxy.store import Store

T = TypeVar("T")

MEMORY_PURGE = "restart it to forget every session"
MEMORY_LIST = "ask it over HTTP (x-recovery-proxy-session headers), or serve with --store sqlite"


def on_store(
    settings: Settings, verb: str, job: Callable[[Store], Awaitable[T]]
) -> tuple[int, T | None]:
    """Open the store the settings name, run `job` on it, close it: (0, its result), or (an
    exit code, None) after saying plainly what went wrong (a bad URL, an unreachable store)."""

    async def run() -> T:
        from recovery_proxy.store import open_store

        store = await open_store(settings)
        try:
            return await job(store)
        finally:
            await store.close()

    path = settings.store.path
    if path is not None and not path.is_file():  # opening would create an empty one
        print(f"recovery-proxy: no session store at {path} (--store)", file=sys.stderr)
        return 2, None
    try:
        return 0, asyncio.run(run())
    except ValueError as exc:  # a URL redis-py cannot parse
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2, None
    except Exception as exc:  # the store is unreachable or unreadable: say so, plainly
        where = settings.store.describe()
        print(f"recovery-proxy: could not {verb} {where}: {exc}", file=sys.stderr)
        return 1, None


def refuse_memory(settings: Settings, advice: str) -> bool:
    """True (after saying why) for the memory store: only the proxy holding it can see it."""
    if settings.store.kind != "memory":
        return False
    print(
        f"recovery-proxy: the memory store lives inside the running proxy; {advice}",
        file=sys.stderr,
    )
    return True


def purge_sessions(settings: Settings, key: str | None, name: str | None = None) -> int:
    """Delete session `key`, the sessions named `name`, or (neither) every session from the
    settings' store; print how many went and return the exit code (1: nothing matched)."""
    if refuse_memory(settings, MEMORY_PURGE):
        return 2

    async def purge(store: Store) -> int:
        if name is None:
            return await store.purge(key)
        found = await store.list_sessions(MAX_SCAN)
        return sum([await store.purge(k) for k, state in found if state.name == name])

    code, removed = on_store(settings, "purge", purge)
    if removed is None:
        return code
    noun = "session" if removed == 1 else "sessions"
    where = f"key {key!r}" if key else f"name {name!r}" if name else "all sessions"
    print(f"removed {removed} {noun} ({where}) from {settings.store.describe()}")
    if (key or name) and not removed:  # a typo, or an expired session: say so
        print(
            f"recovery-proxy: no session has the {where} in {settings.store.describe()}; "
            "`recovery-proxy sessions list` shows each session's name and key",
            file=sys.stderr,
        )
        return 1
    return 0


# ---- sessions list -----------------------------------------------------------------------

COLUMNS = (
    "name",
    "key",
    "tenant",
    "arm",
    "last seen",
    "results",
    "failures",
    "compactions",
    "outcome",
)
MAX_SCAN = 100_000  # sessions read to find those of one name


def list_sessions(settings: Settings, limit: int, as_json: bool, name: str | None = None) -> int:
    """Print one row per stored session (most recent first, at most `limit`): the key as the
    `x-recovery-proxy-session` header shows it and `sessions purge --key` takes it, the tenant
    hash, the A/B arm, when it was last seen, its counters and its reported outcome.
    Continuity-index states (the bookkeeping that links fingerprinted conversations) are not
    sessions and are skipped."""
    if refuse_memory(settings, MEMORY_LIST):
        return 2
    if limit < 1:
        print("recovery-proxy: --limit must be at least 1", file=sys.stderr)
        return 2
    # Index states take slots in the store's answer: ask for more than are shown.
    wanted = MAX_SCAN if name else limit * 2 + 16
    code, found = on_store(settings, "list", lambda store: store.list_sessions(wanted))
    if found is None:
        return code
    if name:
        found = [(k, state) for k, state in found if name.lower() in state.name.lower()]
    rows = _rows(found, limit, settings.control_fraction)
    if as_json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no sessions in {settings.store.describe()}")
    else:
        print(_table(rows))
    return 0


def _rows(
    found: list[tuple[str, SessionState]], limit: int, control_fraction: float
) -> list[dict[str, object]]:
    from recovery_proxy.experiment.arms import arm_of

    now = time.time()
    rows: list[dict[str, object]] = []
    for key, state in found:
        if state.links:
            continue
        rows.append(
            {
                "name": state.name,
                "key": key,
                "tenant": key.partition(":")[0],
                "arm": arm_of(key, control_fraction),
                "updated": state.updated,
                "last_seen": _when(state.updated, now),
                "results": state.stats.results,
                "failures": state.stats.failures,
                "compactions": len(state.compactions),
                "outcome": state.outcome.result if state.outcome else None,
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
    fields = [column.replace(" ", "_") for column in COLUMNS]  # `last seen`: `last_seen`
    cells = [["-" if row[name] is None else str(row[name]) for name in fields] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
    numeric = {5, 6, 7}

    def line(values: list[str] | tuple[str, ...]) -> str:
        return "  ".join(
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ).rstrip()

    return "\n".join([line(COLUMNS), *(line(c) for c in cells)])
