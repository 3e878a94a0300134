"""How `run` points an agent command at its proxy: the base-URL variables the SDKs read and,
for an agent that ignores them, its own switch on the command line.

Codex (0.169) reads no base-URL variable for its built-in OpenAI provider: its config key
`openai_base_url` does it, and a `-c key=value` override before the subcommand sets it for one
invocation without touching the user's `config.toml` or sign-in (`codex -c
openai_base_url="URL" exec ...`). A provider of the user's own in `config.toml` keeps its
`base_url`: such a run sends nothing through the proxy, and the summary says so.
"""

from __future__ import annotations

from pathlib import Path

BASE_URL_VARIABLES = (
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
)
CODEX_PROGRAMS = frozenset({"codex", "codex.js"})


def routed_command(command: list[str], openai_base: str) -> tuple[list[str], list[str]]:
    """`command` with the switches an agent needs to use `openai_base` (an OpenAI base URL
    with its `/v1`), and those switches as the summary names them."""
    if Path(command[0]).name in CODEX_PROGRAMS:
        override = f'openai_base_url="{openai_base}"'
        return [command[0], "-c", override, *command[1:]], [f"-c {override}"]
    return command, []
