"""Starting the server: `Settings` from flags over environment over fallbacks, the start-up
checks that turn a bad rules directory, store path or `--models` file into one line for the
user (`StartupError`) instead of a traceback, and uvicorn with the garbage collector tuned.
`serve` is the `recovery-proxy serve` command; `recovery_proxy.cli.run` starts its own proxy with
`serve_settings` and `settings_and_app`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recovery_proxy.config import Settings


def serve_settings(args: argparse.Namespace, fallbacks: dict[str, Any] | None = None) -> Settings:
    """Settings for `serve` and `run`: flags over environment over `fallbacks` over defaults.
    The store falls back to the sqlite file in the user's state directory (the library
    default, used by tests and embedders, stays `memory`); `run` passes its own fallbacks."""
    from recovery_proxy.cli.sessions import DEFAULT_SERVE_STORE
    from recovery_proxy.config import Settings

    fallbacks = {"store": DEFAULT_SERVE_STORE, **(fallbacks or {})}
    in_env = {name.upper() for name, value in os.environ.items() if value}
    values = {
        key: value
        for key, value in fallbacks.items()
        if f"RECOVERY_PROXY_{key.upper()}" not in in_env
    }
    values.update(
        {
            key: value
            for key in (
                "host",
                "port",
                "upstream",
                "anthropic_upstream",
                "gemini_upstream",
                "rules",
                "extra_rules",
                "models",
                "store",
                "log_level",
            )
            if (value := getattr(args, key, None)) is not None
        }
    )
    return Settings(**values)


class StartupError(Exception):
    """A problem that stops `serve` or `run` before they start, as one line for the user."""


def start_app(settings: Settings, rewriter_factory: Any = None) -> Any:
    """The app `serve` and `run` start: logging configured, then everything that can be
    wrong checked once, each problem a `StartupError` naming its file, path or field rather
    than a traceback from inside the server's lifespan."""
    from recovery_proxy.logs import configure
    from recovery_proxy.rules.load import load_rules
    from recovery_proxy.rules.model import RulesError
    from recovery_proxy.server.app import create_app
    from recovery_proxy.store import StoreUnavailable, open_store

    configure(settings.log_level, settings.log_format, settings.log_bodies)
    try:
        if settings.store.kind == "sqlite":  # a bad path
            asyncio.run(_open_and_close(open_store(settings)))
        load_rules(settings.rules, settings.extra_rules)
        return create_app(settings, rewriter_factory)  # a bad --models file
    except RulesError as exc:
        where = settings.rules or "bundled rules"
        extra = f" + {settings.extra_rules}" if settings.extra_rules else ""
        raise StartupError(f"rules invalid ({where}{extra}): {exc}") from None
    except (ValueError, StoreUnavailable) as exc:
        raise StartupError(str(exc)) from None


def settings_and_app(
    make_settings: Callable[[], Settings], rewriter_factory: Any = None
) -> tuple[Settings, Any]:
    """The settings `make_settings` builds and the app `start_app` starts; settings that do
    not validate are a `StartupError` too."""
    from pydantic import ValidationError

    try:
        settings = make_settings()
    except ValidationError as exc:
        raise StartupError(f"invalid settings:\n{exc}") from None
    return settings, start_app(settings, rewriter_factory)


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the proxy app; SIGINT/SIGTERM shut it down cleanly."""
    import uvicorn

    from recovery_proxy.server.background import SERVER_OPTIONS

    try:
        settings, app = settings_and_app(lambda: serve_settings(args))
    except StartupError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    _tune_gc()
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's own lines go through the handler `configure` set up
        **SERVER_OPTIONS,
    )
    return 0


def _tune_gc() -> None:
    """Request bodies are large acyclic JSON trees freed by reference counting; with the
    default thresholds the cyclic collector walks every live object every few requests
    (measured: ~7% of the CPU per request and most of the p99 at 32 connections). Objects
    alive at start-up are frozen out of its sweeps; young collections run less often."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


async def _open_and_close(opening: Any) -> None:
    store = await opening
    await store.close()
