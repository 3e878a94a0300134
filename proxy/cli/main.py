"""Command line: `recovery-proxy serve | run -- CMD | config | demo | explain | rules check |
sessions list | sessions purge | sessions outcome | report`. The parser, its help text and the
dispatch to each command's own module (cli/serve.py, cli/run.py, ..., demo/runner.py)."""

from __future__ import annotations

import argparse
import os
import sys
import typing
from pathlib import Path

from recovery_proxy.cli.fallbacks import RUN_IGNORES, help_defaults, shown_default
from recovery_proxy.cli.flags import add_setting_flags
from recovery_proxy.cli.serve import StartupError

EXTRA_RULES_HELP = (
    "a rules directory on top of the bundled (or --rules) ones: a rule or category with the "
    "same id replaces the bundled one (default: RECOVERY_PROXY_EXTRA_RULES or the config file)"
)
CONFIG_HELP = "YAML or TOML file of settings (default: RECOVERY_PROXY_CONFIG)"
STORE_HELP = "store spec, as for serve (default: as serve)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="recovery-proxy",
        description="OpenAI-compatible proxy that adds recovery context to failed tool calls.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=env_help(help_defaults(None)),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the proxy in front of a provider",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=env_help(help_defaults("serve")),
    )
    add_setting_flags(serve, "serve")

    run = commands.add_parser(
        "run",
        help="run one agent command behind its own proxy: run [flags] -- CMD [ARGS...]",
        description=RUN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=RUN_EPILOG + "\n\n" + env_help(help_defaults("run")),
    )
    add_setting_flags(run, "run", skip=RUN_IGNORES)
    run.add_argument(
        "--session",
        metavar="NAME",
        help="session id for the path (default: a fresh random id per run)",
    )
    run.add_argument("--quiet", action="store_true", help="no summary on stderr at the end")
    run.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the agent command"
    )

    config = commands.add_parser(
        "config",
        help="print every effective setting and where it came from (secrets masked)",
        description=CONFIG_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=env_help(help_defaults("serve")),
    )
    config.add_argument(
        "--for",
        dest="for_command",
        choices=["serve", "run"],
        default="serve",
        help="whose own defaults apply (default: serve)",
    )
    config.add_argument("--json", action="store_true", help="machine-readable output")
    add_setting_flags(config, "serve")

    demo = commands.add_parser(
        "demo", help="play a scripted agent session offline against a mock model"
    )
    demo.add_argument(
        "--format",
        action="append",
        choices=["chat", "responses", "messages", "gemini"],
        help="only this wire format (repeatable; default: all four)",
    )
    shown = demo.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="only the closing summary")
    shown.add_argument("--json", action="store_true", help="one JSON document: every request")

    explain = commands.add_parser(
        "explain", help="dry run over a saved request body: what each tool result gets"
    )
    explain.add_argument("file", help="request body (JSON, any supported wire format), or -")
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    explain.add_argument("--rules", type=Path, help="rules directory (default: bundled)")
    explain.add_argument("--extra-rules", type=Path, help=EXTRA_RULES_HELP)
    explain.add_argument(
        "--format",
        metavar="NAME",
        help="the body's wire format: openai_chat, openai_responses, anthropic_messages or "
        "gemini (default: detected from its shape)",
    )

    rules = commands.add_parser("rules", help="work with rule files")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    check = rules_commands.add_parser("check", help="validate rules and run their examples")
    check.add_argument("dir", nargs="?", type=Path, help="rules directory (default: bundled)")
    check.add_argument("--extra-rules", type=Path, help=EXTRA_RULES_HELP)

    sessions = commands.add_parser("sessions", help="work with stored session state")
    sessions_commands = sessions.add_subparsers(dest="sessions_command", required=True)
    listing = sessions_commands.add_parser("list", help="one row per stored session")
    listing.add_argument("--store", help=STORE_HELP)
    listing.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.add_argument(
        "--limit", type=int, default=50, help="most recent sessions to show (default 50)"
    )
    listing.add_argument("--name", help="only sessions whose name contains this (any case)")
    purge = sessions_commands.add_parser("purge", help="delete one stored session or all")
    purge.add_argument("--store", help=STORE_HELP)
    purge.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    which = purge.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", help="the session key to delete (tenant:digest)")
    which.add_argument(
        "--session", metavar="NAME", help="delete the sessions of this name (the id agents sent)"
    )
    which.add_argument("--all", action="store_true", help="delete every session")
    outcome = sessions_commands.add_parser(
        "outcome",
        help="record how a session ended, for the A/B report (the latest report counts)",
    )
    outcome.add_argument(
        "session", metavar="NAME", help="the session's name, as `sessions list` shows it, or key"
    )
    outcome.add_argument("result", choices=["succeeded", "failed", "abandoned"])
    outcome.add_argument("--score", type=float, help="a grade from 0 to 1")
    outcome.add_argument("--note", help="a short note (at most 500 characters)")
    outcome.add_argument("--store", help=STORE_HELP)
    outcome.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)

    report = commands.add_parser(
        "report", help="A/B report: treatment vs control sessions (RECOVERY_PROXY_CONTROL_FRACTION)"
    )
    report.add_argument("--store", help=STORE_HELP)
    report.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    report.add_argument(
        "--control-fraction",
        type=float,
        help="the fraction the proxy ran with (default: RECOVERY_PROXY_CONTROL_FRACTION or the "
        "config file)",
    )
    report.add_argument(
        "--limit", type=int, default=100_000, help="read at most this many recent sessions"
    )
    report.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("recovery-proxy")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """The `recovery-proxy` command. Output piped into `head` and cut short ends quietly;
    settings that do not validate are one message, not a traceback."""
    try:
        return _command(build_parser().parse_args(argv))
    except StartupError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away: point stdout at /dev/null so the interpreter's final flush
        # does not complain again (the Python docs' recipe for SIGPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _command(args: argparse.Namespace) -> int:
    if args.command == "serve":
        from recovery_proxy.cli.serve import serve

        return serve(args)
    if args.command == "config":
        from recovery_proxy.cli.config import show_config

        return show_config(args)
    if args.command == "demo":
        from recovery_proxy.demo.plays import FORMATS
        from recovery_proxy.demo.runner import run_demo

        formats = tuple(dict.fromkeys(args.format)) if args.format else FORMATS
        mode = "json" if args.json else "quiet" if args.quiet else "text"
        return run_demo(formats, mode)
    if args.command == "rules":
        from recovery_proxy.cli.rules_check import check_rules
        from recovery_proxy.cli.serve import serve_settings

        return check_rules(args.dir, serve_settings(args).extra_rules)
    if args.command == "run":
        from recovery_proxy.cli.run import run

        return run(args)
    if args.command == "sessions":
        from recovery_proxy.cli.serve import serve_settings
        from recovery_proxy.cli.sessions import list_sessions, purge_sessions

        if args.sessions_command == "list":
            return list_sessions(serve_settings(args), args.limit, args.json, args.name)
        if args.sessions_command == "outcome":
            from recovery_proxy.cli.outcome import set_outcome

            settings = serve_settings(args)
            return set_outcome(settings, args.session, args.result, args.score, args.note)
        return purge_sessions(serve_settings(args), args.key, args.session)
    if args.command == "report":
        from recovery_proxy.cli.report import run_report
        from recovery_proxy.cli.serve import serve_settings

        return run_report(serve_settings(args), args.limit, args.json)
    if args.command == "explain":
        from recovery_proxy.cli.explain import run_explain
        from recovery_proxy.cli.serve import serve_settings

        settings = serve_settings(args)  # --rules stays: default bundled
        return run_explain(
            args.file, args.json, args.rules, settings.extra_rules, args.format, settings
        )
    return 2


class Parser(argparse.ArgumentParser):
    """argparse's parser, with a usage error on one line (not the whole usage first)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


RUN_DESCRIPTION = """\
Start the proxy on a free loopback port, run CMD with OPENAI_BASE_URL, OPENAI_API_BASE,
ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL pointing at it (under a session path of its own),
pass SIGINT/SIGTERM on to it, exit with its exit code and print a summary of the session to
stderr."""
RUN_EPILOG = """\
The upstreams are, first to last: the flags, RECOVERY_PROXY_UPSTREAM /
RECOVERY_PROXY_ANTHROPIC_UPSTREAM / RECOVERY_PROXY_GEMINI_UPSTREAM, the config file, this
shell's own OPENAI_BASE_URL (else OPENAI_API_BASE) / ANTHROPIC_BASE_URL /
GOOGLE_GEMINI_BASE_URL, the defaults. The store is memory unless --store, RECOVERY_PROXY_STORE
or the config file says otherwise: the proxy lives exactly as long as the command.

example:
  recovery-proxy run -- codex exec "fix the failing test"
  recovery-proxy run --session fix-1234 --store sqlite -- claude"""


CONFIG_DESCRIPTION = """\
Print every setting serve (or run, with --for run) would use, its value and where it came from:
flag, env RECOVERY_PROXY_*, file PATH, the command's own default, or default. Takes the same
flags and config file as serve. Secrets (admin_token, session_salt, a redis password) are
masked."""

CONFIG_FILE_HELP = """\
settings, first to last: flags, environment variables, the config file, defaults.

config file (--config FILE or RECOVERY_PROXY_CONFIG): YAML (.yaml, .yml) or TOML (.toml), one
key per setting, named as the variables below without RECOVERY_PROXY_ and in lower case; paths
are relative to the working directory. An unknown key or a bad value stops the command with one
line naming the file and the key. For example (YAML; in TOML: port = 8788):
  port: 8788
  store: redis://127.0.0.1:6379/0
  extra_rules: /etc/recovery-proxy/rules.d"""


def env_help(defaults: dict[str, str] | None = None) -> str:
    """How settings are layered, the config file, and the `RECOVERY_PROXY_*` environment
    variables generated from `Settings`: name, default (`defaults` overrides what a command
    uses instead), description."""
    from recovery_proxy.config import Settings

    shown = defaults or {}
    lines = [CONFIG_FILE_HELP, "", "environment variables (flags override them):"]
    for name, field in Settings.model_fields.items():
        default = shown.get(name) or shown_default(name)
        lines.append(f"  RECOVERY_PROXY_{name.upper()}={default}")
        if field.description:
            lines.append(f"      {field.description}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
