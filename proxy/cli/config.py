"""`recovery-proxy config`: every setting `serve` (or `run`) would use, its value and where it
came from (`flag --x`, `env RECOVERY_PROXY_X`, `file PATH`, the command's own default,
`default`), read through the same layers as the command itself. Secrets are masked: the secret
settings, a redis URL's password, and an upstream URL's password."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from recovery_proxy.cli.fallbacks import RUN_IGNORES, SERVE_FALLBACKS, Fallback, run_fallbacks
from recovery_proxy.cli.flags import flag_name
from recovery_proxy.cli.serve import traced_settings
from recovery_proxy.config import StoreSpec, mask_url, secret_settings

if TYPE_CHECKING:
    from recovery_proxy.config import Origin, Settings

MASK = "***"


def show_config(args: argparse.Namespace) -> int:
    """Print the effective settings (a table, or JSON with `--json`); 0. Settings that do not
    validate raise `StartupError`, as they do for `serve`."""
    fallbacks = dict(SERVE_FALLBACKS)
    if args.for_command == "run":
        fallbacks.update(run_fallbacks(os.environ))
    settings, origins = traced_settings(args, fallbacks)
    skip = RUN_IGNORES if args.for_command == "run" else ()
    rows = {
        name: (shown_value(name, value), source(name, origins, settings, fallbacks))
        for name, value in settings
        if name not in skip
    }
    if args.json:
        shown = {name: {"value": value, "source": where} for name, (value, where) in rows.items()}
        sys.stdout.write(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_table(rows))
    return 0


def shown_value(name: str, value: Any) -> Any:
    """A setting's value as it is safe to print, in JSON's types."""
    if value is None:
        return None
    if name in secret_settings():
        return MASK
    if isinstance(value, StoreSpec):
        return f"sqlite:{value.path}" if value.kind == "sqlite" else value.describe()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return mask_url(value)
    return value


def source(
    name: str, origins: dict[str, Origin], settings: Settings, fallbacks: dict[str, Fallback]
) -> str:
    """Where a setting's value came from, as the command line, environment or file says it."""
    origin = origins.get(name, "default")
    if origin == "flag":
        given = getattr(settings, name) is False  # --no-x
        return f"flag {flag_name(name).replace('--', '--no-', given)}"
    if origin == "env":
        return f"env RECOVERY_PROXY_{name.upper()}"
    if origin == "file":
        return f"file {settings.config}"
    if origin == "fallback":
        return fallbacks[name].source
    return "default"


def format_table(rows: dict[str, tuple[Any, str]]) -> str:
    """`setting  value  source`, one line each, in columns."""
    lines = [("setting", "value", "source")]
    lines += [(name, _text(value), where) for name, (value, where) in rows.items()]
    widths = [max(len(line[column]) for line in lines) for column in (0, 1)]
    return "\n".join(
        f"{name:<{widths[0]}}  {value:<{widths[1]}}  {where}" for name, value, where in lines
    )


def _text(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
