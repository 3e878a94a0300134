"""How each agent CLI runs here: its command, its environment and the files its HOME needs,
given the proxy's root URL (`serve`) or nothing (`run --` sets the base URLs itself). Flags and
variables are from each CLI's own source and were checked against the installed release."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.agents.harness import PROMPT, cli

CODEX_SWITCH = 'openai_base_url="{root}/v1"'
OPENCODE_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "provider": {
        "proxy": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "recovery-proxy",
            "options": {"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {"mock-model": {"name": "mock-model", "tool_call": True}},
        }
    },
    "model": "proxy/mock-model",
    "autoupdate": False,
    "share": "disabled",
}


@dataclass(frozen=True)
class Agent:
    """One CLI: `argv(root)` (root: the proxy URL for `serve`, None under `run --`), the
    variables it needs, and what a HOME and a working directory must hold before it starts."""

    name: str
    argv: Callable[[str | None], list[str]]
    env: Callable[[str | None], dict[str, str]]
    prepare: Callable[[Path, Path], None]
    session_header: str | None  # the header carrying the agent's own session id
    wire: str  # the path its model requests go to


def _nothing(home: Path, work: Path) -> None:
    return None


def _claude_argv(root: str | None, *extra: str) -> list[str]:
    return [cli("claude"), *extra, "-p", PROMPT, "--dangerously-skip-permissions"]


def _claude_env(root: str | None) -> dict[str, str]:
    env = {"ANTHROPIC_API_KEY": "sk-ant-mock", "IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1"}
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return env | ({"ANTHROPIC_BASE_URL": root} if root else {})


def _codex_argv(root: str | None) -> list[str]:
    base = ["-c", CODEX_SWITCH.format(root=root)] if root else []  # the README's form
    flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    return [cli("codex"), *base, "exec", "-m", "gpt-5.1-codex", *flags, PROMPT]


def _codex_prepare(home: Path, work: Path) -> None:
    (home / ".codex").mkdir(parents=True, exist_ok=True)


def _gemini_env(root: str | None) -> dict[str, str]:
    env = {"GEMINI_API_KEY": "gemini-mock-key", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    return env | ({"GOOGLE_GEMINI_BASE_URL": root} if root else {})


def _gemini_prepare(home: Path, work: Path) -> None:
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini/settings.json").write_text(json.dumps(settings))


def _opencode_env(root: str | None) -> dict[str, str]:
    env = {"OPENAI_API_KEY": "sk-mock", "OPENCODE_DISABLE_AUTOUPDATE": "true"}
    return env | ({"OPENAI_BASE_URL": f"{root}/v1"} if root else {})


def _opencode_prepare(home: Path, work: Path) -> None:
    (work / "opencode.json").write_text(json.dumps(OPENCODE_CONFIG, indent=1))


AGENTS = {
    "claude-code": Agent(
        "claude-code",
        _claude_argv,
        _claude_env,
        _nothing,
        "x-claude-code-session-id",
        "/v1/messages",
    ),
    "codex": Agent(
        "codex",
        _codex_argv,
        lambda root: {"CODEX_API_KEY": "sk-mock"},
        _codex_prepare,
        "session-id",
        "/v1/responses",
    ),
    "gemini-cli": Agent(
        "gemini-cli",
        lambda root: [cli("gemini"), "-p", PROMPT, "--skip-trust", "--yolo"],
        _gemini_env,
        _gemini_prepare,
        None,
        "/v1beta/models/",
    ),
    "opencode": Agent(
        "opencode",
        lambda root: [cli("opencode"), "run", PROMPT],
        _opencode_env,
        _opencode_prepare,
        "x-session-affinity",
        "/v1/chat/completions",
    ),
}
