"""`recovery-proxy report`: the A/B report (proxy/report.py) over a stored set of sessions."""

from __future__ import annotations

import asyncio
import sys

import orjson
from pydantic import ValidationError

from proxy.config import Settings
from proxy.sessions_cli import describe


def run_report(spec: str, control_fraction: float | None, limit: int, as_json: bool) -> int:
    """Print the report for the store `spec`; return the exit code. The control fraction
    defaults to the one the proxy reads (RECOVERY_PROXY_CONTROL_FRACTION)."""
    from proxy.report import build_report, format_report

    if spec.strip() == "memory":
        print(
            "recovery-proxy: the memory store lives inside the running proxy; "
            "run the proxy with a sqlite or redis store to report on its sessions",
            file=sys.stderr,
        )
        return 2
    from proxy.store import sqlite_path

    path = sqlite_path(spec)
    if path is not None and not path.exists():  # opening it would create an empty one
        print(f"recovery-proxy: no session store at {path}", file=sys.stderr)
        return 1
    try:
        overrides = {} if control_fraction is None else {"control_fraction": control_fraction}
        settings = Settings(store=spec, **overrides)
    except ValidationError as exc:
        print(f"recovery-proxy: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    try:
        sessions = asyncio.run(_sessions(settings, limit))
    except ValueError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store is unreachable or unreadable: say so, plainly
        print(f"recovery-proxy: could not read {describe(spec)}: {exc}", file=sys.stderr)
        return 1
    report = build_report(sessions, settings.control_fraction)
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_report(report))
        print(f"\n({len(sessions)} sessions read from {describe(spec)})")
    return 0


async def _sessions(settings: Settings, limit: int) -> list:
    from proxy.store import open_store

    store = await open_store(settings)
    try:
        return await store.list_sessions(limit)
    finally:
        await store.close()
