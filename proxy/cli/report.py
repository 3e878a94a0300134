"""`recovery-proxy report`: the A/B report (experiment/report.py) over stored sessions."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import orjson

from recovery_proxy.cli.sessions import on_store, refuse_memory

if TYPE_CHECKING:
    from recovery_proxy.config import Settings


def run_report(settings: Settings, limit: int, as_json: bool) -> int:
    """Print the report for the settings' store with their control fraction (`--control-
    fraction`, else RECOVERY_PROXY_CONTROL_FRACTION, as the proxy reads it); return the exit
    code."""
    from recovery_proxy.experiment.report import build_report, format_report

    if refuse_memory(settings, "run the proxy with a sqlite or redis store to report on it"):
        return 2
    code, sessions = on_store(settings, "read", lambda store: store.list_sessions(limit))
    if sessions is None:
        return code
    report = build_report(sessions, settings.control_fraction)
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_report(report))
        print(f"\n({len(sessions)} sessions read from {settings.store.describe()})")
    return 0
