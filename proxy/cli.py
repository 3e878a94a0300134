"""Command line: `recovery-proxy serve | demo | rules check | sessions purge`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proxy.config import Settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recovery-proxy",
        description="OpenAI-compatible proxy that adds recovery context to failed tool calls.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the proxy in front of a provider")
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 8787)")
    serve.add_argument("--upstream", help="provider base URL, like OPENAI_BASE_URL")
    serve.add_argument(
        "--anthropic-upstream", help="Anthropic base URL (default https://api.anthropic.com)"
    )
    serve.add_argument(
        "--gemini-upstream",
        help="Gemini base URL (default https://generativelanguage.googleapis.com)",
    )
    serve.add_argument(
        "--models", type=Path, help="LiteLLM model_list YAML: these models go through litellm"
    )
    serve.add_argument("--rules", type=Path, help="rules directory (default: bundled rules)")
    serve.add_argument(
        "--store",
        help="memory | sqlite[:PATH] | redis://HOST:PORT/DB "
        "(default: RECOVERY_PROXY_STORE, else sqlite in the user's state directory)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    commands.add_parser("demo", help="play a scripted agent session offline against a mock model")

    rules = commands.add_parser("rules", help="work with rule files")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    check = rules_commands.add_parser("check", help="validate rules and run their examples")
    check.add_argument("dir", nargs="?", type=Path, help="rules directory (default: bundled)")

    sessions = commands.add_parser("sessions", help="work with stored session state")
    sessions_commands = sessions.add_subparsers(dest="sessions_command", required=True)
    purge = sessions_commands.add_parser("purge", help="delete one stored session or all")
    purge.add_argument("--store", help="store spec, as for serve (default: as serve)")
    which = purge.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="KEY", help="the store key (tenant:session) to delete")
    which.add_argument("--all", action="store_true", help="delete every session (the default)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "demo":
        from proxy.demo import run_demo

        return run_demo()
    if args.command == "rules":
        from proxy.rules_check import check_rules

        return check_rules(args.dir)
    if args.command == "sessions":
        from proxy.sessions_cli import purge_sessions, store_spec

        return purge_sessions(store_spec(args.store), args.session)
    return 2


def serve_settings(args: argparse.Namespace) -> Settings:
    """Settings for `serve`: flags over environment over defaults, except that the store
    defaults to the sqlite file in the user's state directory (the library default, used by
    tests and embedders, stays `memory`)."""
    from proxy.config import Settings
    from proxy.sessions_cli import store_spec

    overrides = {
        key: value
        for key in (
            "host",
            "port",
            "upstream",
            "anthropic_upstream",
            "gemini_upstream",
            "rules",
            "models",
        )
        if (value := getattr(args, key)) is not None
    }
    return Settings(**overrides, store=store_spec(args.store))


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the proxy app; SIGINT/SIGTERM shut it down cleanly."""
    import uvicorn
    from pydantic import ValidationError

    from proxy.app import create_app
    from proxy.store import check_spec

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = serve_settings(args)
        check_spec(settings.store)
        app = create_app(settings)
    except ValidationError as exc:
        print(f"recovery-proxy: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
