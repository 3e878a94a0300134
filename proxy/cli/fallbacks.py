"""A command's own defaults, below flags, `RECOVERY_PROXY_*` and the config file: `serve` keeps
sessions in a sqlite file; `run` keeps them in memory, logs warnings only and sends to the
caller's own base URLs. Each says where it came from (`recovery-proxy config`) and how `--help`
shows it, so the flags' help, the environment list and the effective settings agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Fallback:
    """A value a command uses when no flag, variable or config file key sets the setting."""

    value: Any
    source: str  # how `recovery-proxy config` names where it came from
    shown: str = ""  # how --help shows it (default: the value)

    def help_text(self, command: str) -> str:
        return f"{self.shown or self.value} (for {command})"


SERVE_FALLBACKS: dict[str, Fallback] = {
    "store": Fallback("sqlite", "serve default", "sqlite in the user's state directory"),
}
RUN_FALLBACKS: dict[str, Fallback] = {
    "store": Fallback("memory", "run default"),
    "log_level": Fallback("warning", "run default"),
}
# run sends to the caller's own base URLs (the first variable set) unless a layer above says
CALLER_URLS: dict[str, tuple[str, ...]] = {
    "upstream": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic_upstream": ("ANTHROPIC_BASE_URL",),
    "gemini_upstream": ("GOOGLE_GEMINI_BASE_URL",),
}
RUN_IGNORES = ("host", "port")  # run always listens on a free loopback port


def run_fallbacks(environ: Mapping[str, str]) -> dict[str, Fallback]:
    """run's own defaults, with the base URLs of the shell it runs in."""
    fallbacks = dict(RUN_FALLBACKS)
    for name, variables in CALLER_URLS.items():
        for variable in variables:
            if environ.get(variable):
                fallbacks[name] = Fallback(environ[variable], f"env {variable} (run)")
                break
    return fallbacks


def values(fallbacks: Mapping[str, Fallback]) -> dict[str, Any]:
    """The values alone, as `load_settings` takes them."""
    return {name: fallback.value for name, fallback in fallbacks.items()}


def help_defaults(command: str | None) -> dict[str, str]:
    """How `command`'s --help shows the defaults that are its own (None: both commands', for
    the settings where they differ)."""
    if command is None:
        serve, run = help_defaults("serve"), help_defaults("run")
        return {
            name: ", ".join(
                shown.get(name, f"{shown_default(name)} (for {which})")
                for which, shown in (("serve", serve), ("run", run))
            )
            for name in {**SERVE_FALLBACKS, **RUN_FALLBACKS}
        }
    if command == "serve":
        return {name: fallback.help_text("serve") for name, fallback in SERVE_FALLBACKS.items()}
    shown = {name: fallback.help_text("run") for name, fallback in RUN_FALLBACKS.items()}
    for name, variables in CALLER_URLS.items():
        caller = " or ".join(variables)
        shown[name] = f"this shell's {caller}, else {shown_default(name)} (for run)"
    shown["host"] = f"{shown_default('host')} (run: always loopback)"
    shown["port"] = f"{shown_default('port')} (run: a free port)"
    return shown


def shown_default(name: str) -> str:
    """A setting's own default as --help shows it."""
    from recovery_proxy.config import Settings

    value = Settings.model_fields[name].get_default(call_default_factory=True)
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
