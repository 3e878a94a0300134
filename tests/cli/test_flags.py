"""Every setting is reachable (issue 26, item 10): each one but the secrets has a flag on
`serve` (and on `run`, but the listen address), and each one but `config` is a config file key;
the secrets have no flag. Checked through the real CLI, `recovery-proxy config --json`, which
says where each value came from, so a flag that parsed but was never read would show."""

from __future__ import annotations

import json
import os
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from recovery_proxy.cli.config import shown_value
from recovery_proxy.cli.flags import flag_name
from recovery_proxy.cli.main import build_parser, main
from recovery_proxy.cli.run import run_settings
from recovery_proxy.config import Settings, secret_settings

# A valid, non-default value for the settings whose type alone does not give one.
SAMPLES: dict[str, str] = {
    "host": "0.0.0.0",
    "upstream": "http://10.20.0.4:4000/v1",
    "anthropic_upstream": "http://10.20.0.4:4001",
    "gemini_upstream": "http://10.20.0.4:4002",
    "store": "redis://10.20.0.9:6379/3",
}


@pytest.fixture(autouse=True)
def no_operator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("RECOVERY_PROXY_")]:
        monkeypatch.delenv(name)


def sample(name: str, tmp_path: Path) -> Any:
    """A value for setting `name` that validates and differs from its default."""
    if name in SAMPLES:
        return SAMPLES[name]
    field = Settings.model_fields[name]
    default = field.get_default(call_default_factory=True)
    kind = typing.get_args(field.annotation) or (field.annotation,)
    kind = [arg for arg in kind if arg is not type(None)]
    if field.annotation is bool:
        return not default
    if typing.get_origin(field.annotation) is typing.Literal:
        return next(choice for choice in typing.get_args(field.annotation) if choice != default)
    if kind[0] is int:
        return (default or 4000) + 1
    if kind[0] is float:
        return default / 2 if default else 0.25
    if kind[0] is Path:
        return str(tmp_path / name)
    return f"sample-{name}"


def effective(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """`recovery-proxy config --json ARGV`: each setting's value and source."""
    assert main(["config", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def as_flags(name: str, value: Any) -> list[str]:
    if isinstance(value, bool):
        return [flag_name(name) if value else flag_name(name).replace("--", "--no-")]
    return [flag_name(name), str(value)]


def expected(name: str, value: Any) -> Any:
    """What `config` shows for `value` once validated."""
    return shown_value(name, getattr(Settings(**{name: value}), name))


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_has_a_flag_unless_it_is_a_secret(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = sample(name, tmp_path)
    if name == "config":  # the file names itself: an empty one
        (tmp_path / "config.yaml").write_text("{}\n")
        value = str(tmp_path / "config.yaml")
    if name in secret_settings():
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", *as_flags(name, value)])
        assert "unrecognized arguments" in capsys.readouterr().err
        return
    shown = effective(capsys, *as_flags(name, value))[name]
    assert shown["source"] == as_flags(name, value)[0].replace("--", "flag --", 1)
    assert shown["value"] == expected(name, value)
    serve = build_parser().parse_args(["serve", *as_flags(name, value)])
    assert getattr(serve, name) == (value if isinstance(value, bool) else str(value))
    if name not in ("host", "port"):  # run always listens on a free loopback port
        run = build_parser().parse_args(["run", *as_flags(name, value), "--", "true"])
        settings = run_settings(run, {})
        assert shown_value(name, getattr(settings, name)) == expected(name, value)


def test_every_setting_but_config_is_a_config_file_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = {name: sample(name, tmp_path) for name in Settings.model_fields if name != "config"}
    path = tmp_path / "proxy.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    shown = effective(capsys, "--config", str(path))
    assert shown.pop("config") == {"value": str(path), "source": "flag --config"}
    assert shown == {
        name: {"value": expected(name, value), "source": f"file {path}"}
        for name, value in values.items()
    }


def test_the_secrets_are_the_admin_token_and_the_session_salt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert secret_settings() == {"admin_token", "session_salt"}
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--admin-token" not in text and "--session-salt" not in text
    assert (
        "Secrets have no flag, since a command line shows in ps: set RECOVERY_PROXY_ADMIN_TOKEN, "
        "RECOVERY_PROXY_SESSION_SALT in the environment or the config file." in text
    )


def test_the_existing_flag_names_still_work() -> None:
    names = {
        "serve": ["--host", "--port", "--config", "--upstream", "--anthropic-upstream"],
        "run": ["--config", "--upstream", "--gemini-upstream", "--models", "--rules"],
    }
    for command, flags in names.items():
        for flag in [*flags, "--extra-rules", "--store", "--log-level"]:
            value = "debug" if flag == "--log-level" else "x"
            tail = ["--", "true"] if command == "run" else []
            args = build_parser().parse_args([command, flag, value, *tail])
            assert getattr(args, flag[2:].replace("-", "_")) == value


def test_the_readme_table_names_each_flag() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Configuration reference", 1)[1].split("\n\n| setting |", 1)[1]
    cells = re.findall(r"^\| `RECOVERY_PROXY_([A-Z_]+)` \| ([^|]*) \|", table, re.M)
    assert len(cells) > 20
    for variable, cell in cells:
        name = variable.lower()
        if name in secret_settings():
            assert cell == "none (secret)", name
        else:
            assert cell.strip("`") in (flag_name(name), flag_name(name).replace("--", "--no-")), (
                name
            )
