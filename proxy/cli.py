"""Command line: `recovery-proxy serve | demo | rules check`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

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
    serve.add_argument("--rules", type=Path, help="rules directory (default: bundled rules)")
    serve.add_argument("--store", help="memory | sqlite:PATH | redis://HOST:PORT/DB")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    commands.add_parser("demo", help="play a scripted agent session offline against a mock model")

    rules = commands.add_parser("rules", help="work with rule files")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    check = rules_commands.add_parser("check", help="validate rules and run their examples")
    check.add_argument("dir", nargs="?", type=Path, help="rules directory (default: bundled)")
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
    return 2


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the proxy app; SIGINT/SIGTERM shut it down cleanly."""
    import uvicorn
    from pydantic import ValidationError

    from proxy.app import create_app
    from proxy.config import Settings

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    overrides = {
        key: value
        for key in ("host", "port", "upstream", "rules", "store")
        if (value := getattr(args, key)) is not None
    }
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        print(f"recovery-proxy: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
