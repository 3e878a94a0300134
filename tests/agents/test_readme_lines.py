"""The README's adoption lines for the agent CLIs are the forms tests/agents runs."""

from __future__ import annotations

import json

from tests.agents.agents import CODEX_SWITCH, OPENCODE_CONFIG
from tests.agents.harness import REPO

README = (REPO / "README.md").read_text()
ROOT = "http://127.0.0.1:8787"


def test_codex_line_is_the_switch_the_tests_pass() -> None:
    assert f"codex -c {CODEX_SWITCH.format(root=ROOT)} exec" in README


def test_claude_code_and_gemini_lines() -> None:
    assert f"ANTHROPIC_BASE_URL={ROOT} claude" in README
    assert f"GOOGLE_GEMINI_BASE_URL={ROOT}" in README
    assert '"selectedType": "gemini-api-key"' in README and "--skip-trust" in README


def test_opencode_line_is_the_config_the_tests_write() -> None:
    base_url = OPENCODE_CONFIG["provider"]["proxy"]["options"]["baseURL"]  # type: ignore[index]
    assert f'"baseURL": {json.dumps(base_url)}' in README
