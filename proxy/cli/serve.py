"""Starting the server: `Settings` from flags over environment over the config file over a
command's fallbacks, the start-up checks that turn a bad config file, rules directory, store
path or `--models` file into one line for the user (`StartupError`) instead of a traceback,
and uvicorn with the garbage collector tuned. `serve` is the `recovery-proxy serve` command;
`recovery_proxy.cli.run` starts its own proxy with `serve_settings` and `start_app`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from recovery_proxy.cli.fallbacks import SERVE_FALLBACKS, Fallback, values

if TYPE_CHECKING:
    from recovery_proxy.config import Origin, Settings


def serve_settings(
    args: argparse.Namespace, fallbacks: Mapping[str, Fallback] | None = None
) -> Settings:
    """Settings for a command: its flags (each parsed into the attribute of a setting's name)
    over `RECOVERY_PROXY_*` over the config file over `fallbacks` over the defaults. The
    fallbacks start from serve's: the store is the sqlite file in the user's state directory
    (the library default, used by tests and embedders, stays `memory`). Settings that do not
    validate are a `StartupError`."""
    return traced_settings(args, fallbacks)[0]


def traced_settings(
    args: argparse.Namespace, fallbacks: Mapping[str, Fallback] | None = None
) -> tuple[Settings, dict[str, Origin]]:
    """`serve_settings`, and the layer each setting came from (`recovery-proxy config`)."""
    from pydantic import ValidationError

    from recovery_proxy.config import Settings, SettingsFileError, trace_settings

    flags = {name: getattr(args, name, None) for name in Settings.model_fields}
    try:
        return trace_settings(flags, values({**SERVE_FALLBACKS, **(fallbacks or {})}))
    except ValidationError as exc:
        raise StartupError(settings_problem(exc)) from None
    except SettingsFileError as exc:
        raise StartupError(str(exc)) from None


def settings_problem(exc: Any) -> str:
    """A pydantic ValidationError of `Settings` as one line naming each flag and variable (a
    secret's value is not repeated)."""
    from recovery_proxy.config import secret_settings

    secrets = secret_settings()
    problems = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "settings"
        value = "***" if name in secrets else repr(error.get("input"))[:60]
        flag = "" if name in secrets else f"--{name.replace('_', '-')} / "
        problems.append(f"{name} ({flag}RECOVERY_PROXY_{name.upper()}) = {value}: {error['msg']}")
    return "invalid setting: " + "; ".join(problems)


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
        rules = load_rules(settings.rules, settings.extra_rules)  # loaded once, handed on
        return create_app(settings, rewriter_factory, rules)  # a bad --models file
    except RulesError as exc:
        where = settings.rules or "bundled rules"
        extra = f" + {settings.extra_rules}" if settings.extra_rules else ""
        raise StartupError(f"rules invalid ({where}{extra}): {exc}") from None
    except (ValueError, StoreUnavailable) as exc:
        raise StartupError(str(exc)) from None


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the proxy app; SIGINT/SIGTERM shut it down cleanly."""
    import uvicorn

    from recovery_proxy.server.background import SERVER_OPTIONS
    from recovery_proxy.server.protocol import with_head_timeout

    try:
        settings = serve_settings(args)
        listening = listen(settings.host, settings.port)  # before "ready": a taken port is
        app = start_app(settings)  # one line, not uvicorn's eight and exit 3
    except StartupError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    _tune_gc()
    logging.getLogger("recovery_proxy").info(
        "listening on http://%s:%d", settings.host, listening.getsockname()[1]
    )
    config = uvicorn.Config(
        app,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's own lines go through the handler `configure` set up
        **{**SERVER_OPTIONS, "http": with_head_timeout(settings.head_timeout)},
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled
        uvicorn.Server(config).run(sockets=[listening])
    return 0


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound now; `StartupError` naming host and port if it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        message = f"cannot listen on {host}:{port} (--host/--port): {exc.strerror}"
        raise StartupError(message) from None
    return sock


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
