"""A flag for every setting, generated from `Settings.model_fields`, so flags, environment
variables and config file keys cannot drift: `--kebab-case` of the field's name, its description
as help, `--x/--no-x` for a bool, the choices of a Literal. Values stay text: pydantic parses a
flag exactly as it parses the variable. Secrets (`admin_token`, `session_salt`) get no flag: a
command line shows in `ps`."""

from __future__ import annotations

import argparse
import textwrap
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from recovery_proxy.cli.fallbacks import help_defaults, shown_default

METAVARS = {
    "config": "FILE",
    "models": "FILE",
    "rules": "DIR",
    "extra_rules": "DIR",
    "host": "HOST",
    "port": "PORT",
    "max_body_bytes": "BYTES",
    "session_ttl_seconds": "SECONDS",
    "context_window": "TOKENS",
    "control_fraction": "FRACTION",
    "upstream": "URL",
    "anthropic_upstream": "URL",
    "gemini_upstream": "URL",
    "store": "SPEC",
    "redis_prefix": "PREFIX",
}
TYPE_METAVARS: dict[Any, str] = {int: "N", float: "SECONDS", Path: "PATH", str: "TEXT"}


def flag_name(name: str) -> str:
    """`extra_rules` -> `--extra-rules`."""
    return "--" + name.replace("_", "-")


def flagged_settings() -> list[str]:
    """The settings that have a flag: all but the secrets."""
    from recovery_proxy.config import Settings, secret_settings

    secrets = secret_settings()
    return [name for name in Settings.model_fields if name not in secrets]


def add_setting_flags(
    parser: argparse.ArgumentParser, command: str, skip: Iterable[str] = ()
) -> None:
    """A group of flags on `parser`, one per setting (but secrets and `skip`), each defaulting
    to None (not given), with `command`'s own defaults in the help."""
    from recovery_proxy.config import Settings, secret_settings

    own = help_defaults(command)
    secrets = ", ".join(f"RECOVERY_PROXY_{name.upper()}" for name in sorted(secret_settings()))
    about = (
        "each also a RECOVERY_PROXY_* variable and a config file key (listed below); flags win. "
        f"Secrets have no flag, since a command line shows in ps: set {secrets} in the "
        "environment or the config file."
    )
    group = parser.add_argument_group("settings", textwrap.fill(about, 92))
    for name in flagged_settings():
        if name in skip:
            continue
        field = Settings.model_fields[name]
        default = own.get(name) or shown_default(name)
        shown = "" if default == "(unset)" else f" (default: {default})"
        text = f"{field.description or name}{shown}".replace("%", "%%")
        annotation = _bare(field.annotation)
        if annotation is bool:
            group.add_argument(flag_name(name), action=argparse.BooleanOptionalAction, help=text)
        elif typing.get_origin(annotation) is typing.Literal:
            group.add_argument(flag_name(name), choices=typing.get_args(annotation), help=text)
        else:
            metavar = METAVARS.get(name) or TYPE_METAVARS.get(annotation, "VALUE")
            group.add_argument(flag_name(name), metavar=metavar, help=text)


def _bare(annotation: Any) -> Any:
    """`X | None` -> `X`."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation
