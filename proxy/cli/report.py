"""`recovery-proxy report`: the A/B report (experiment/report.py) over stored sessions."""

from __future__ import annotations

import sys

import orjson

from recovery_proxy.cli.sessions import describe, on_store, refuse_memory
from recovery_proxy.config import Settings, StoreSpec


def run_report(spec: str, control_fraction: float | None, limit: int, as_json: bool) -> int:
    """Print the report for the store `spec`; return the exit code. The control fraction
    defaults to the one the proxy reads (RECOVERY_PROXY_CONTROL_FRACTION)."""
    from recovery_proxy.experiment.report import build_report, format_report

    if refuse_memory(spec, "run the proxy with a sqlite or redis store to report on it"):
        return 2
    try:
        path = StoreSpec.parse(spec).path
    except ValueError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    if path is not None and not path.exists():  # opening it would create an empty one
        print(f"recovery-proxy: no session store at {path}", file=sys.stderr)
        return 1
    if control_fraction is None:
        control_fraction = Settings().control_fraction  # as the proxy reads it
    if not 0.0 <= control_fraction <= 1.0:
        print("recovery-proxy: --control-fraction must be between 0 and 1", file=sys.stderr)
        return 2
    code, sessions = on_store(spec, "read", lambda store: store.list_sessions(limit))
    if sessions is None:
        return code
    report = build_report(sessions, control_fraction)
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_report(report))
        print(f"\n({len(sessions)} sessions read from {describe(spec)})")
    return 0
