"""`--help` lists the `RECOVERY_PROXY_*` environment variables, generated from `Settings`:
every field, with its default and description, in the real command's output; each flag names
the same default as the list; and how settings are layered, with the config file and a working
example of one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recovery_proxy.cli.fallbacks import RUN_IGNORES
from recovery_proxy.cli.flags import flag_name, flagged_settings
from recovery_proxy.config import Settings, load_settings

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


def test_serve_help_documents_the_layers_and_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = help_text("serve")
    assert "[--config FILE]" in text
    assert (
        "settings, first to last: flags, environment variables, the config file, defaults." in text
    )
    assert (
        "config file (--config FILE or RECOVERY_PROXY_CONFIG): YAML (.yaml, .yml) or TOML" in text
    )
    assert "An unknown key or a bad value stops the command with one\nline naming the file" in text
    # The example the help shows is a config file that loads.
    example = text.split("For example (YAML; in TOML: port = 8788):\n", 1)[1].split("\n\n", 1)[0]
    path = tmp_path / "proxy.yaml"
    path.write_text(textwrap.dedent(example), encoding="utf-8")
    for name in [name for name in os.environ if name.startswith("RECOVERY_PROXY_")]:
        monkeypatch.delenv(name)
    settings = load_settings({"config": path})
    assert (settings.port, settings.store.kind) == (8788, "redis")
    assert settings.extra_rules == Path("/etc/recovery-proxy/rules.d")


def flag_defaults(text: str) -> dict[str, str]:
    """Each flag of the help's settings group: the default its help names ('' for none)."""
    section = text.split("\nsettings:\n", 1)[1].split("\n\n", 2)[1]  # past the group's note
    entries: dict[str, str] = {}
    flag = ""
    for line in section.splitlines():
        if not line.strip():
            break
        if line.startswith("  --"):
            flag = line.split()[0].rstrip(",")
            entries[flag] = line
        else:
            entries[flag] += " " + line
    return {
        flag: (re.search(r"\(default: (.*)\)$", " ".join(entry.split())) or ["", ""])[1]
        for flag, entry in entries.items()
    }


@pytest.mark.parametrize("command", ["serve", "run"])
def test_each_flag_names_the_default_the_environment_list_gives(command: str) -> None:
    """They disagreed: run's --log-level said warning, its list RECOVERY_PROXY_LOG_LEVEL=info."""
    text = help_text(command)
    listed = dict(re.findall(r"^  RECOVERY_PROXY_(\w+)=(.*)$", text, re.M))
    flags = flag_defaults(text)
    for name in flagged_settings():
        if command == "run" and name in RUN_IGNORES:
            assert flag_name(name) not in flags
            continue
        default = listed[name.upper()]
        assert flags[flag_name(name)] == ("" if default == "(unset)" else default), name
    if command == "run":
        assert listed["LOG_LEVEL"] == flags["--log-level"] == "warning (for run)"
        assert listed["STORE"] == flags["--store"] == "memory (for run)"


def test_a_usage_error_is_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "serve", "--prot", "9100"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "recovery-proxy: error: unrecognized arguments: --prot 9100 (see recovery-proxy --help)\n"
    )
