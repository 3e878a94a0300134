"""`--help` lists the `RECOVERY_PROXY_*` environment variables, generated from `Settings`:
every field, with its default and description, in the real command's output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from recovery_proxy.config import Settings

REPO = Path(__file__).resolve().parents[2]


def help_text(*command: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", *command, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("command", [(), ("serve",), ("run",)])
def test_help_lists_every_setting_as_an_environment_variable(command: tuple[str, ...]) -> None:
    text = help_text(*command)
    assert "environment variables (flags override them):" in text
    for name, field in Settings.model_fields.items():
        assert f"  RECOVERY_PROXY_{name.upper()}=" in text, name
        assert field.description, f"Settings.{name} needs a description for --help"
        assert f"      {field.description}\n" in text, name
    assert "  RECOVERY_PROXY_MAX_BODY_BYTES=33554432\n" in text  # the default, as it is
    assert "  RECOVERY_PROXY_ADMIN_TOKEN=(unset)\n" in text


def test_each_command_shows_its_own_store_default() -> None:
    assert "RECOVERY_PROXY_STORE=sqlite in the user's state directory (for serve)" in help_text(
        "serve"
    )
    run = help_text("run")
    assert "RECOVERY_PROXY_STORE=memory (for run)" in run
    assert "-- CMD [ARGS...]" in run
    assert "OPENAI_BASE_URL" in run and "ANTHROPIC_BASE_URL" in run
