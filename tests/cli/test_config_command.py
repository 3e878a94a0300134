"""`recovery-proxy config` (issue 26, item 10): every effective setting, its value and where it
came from (flag, environment, config file, the command's own default, default), secrets masked,
and the same one-line error as `serve` for a bad value. The real command, as a process or
through `main`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recovery_proxy.cli.main import main
from recovery_proxy.config import Settings, default_sqlite_path

REPO = Path(__file__).resolve().parents[2]
TOKEN = "adm-7Qx2fR9kLm4vWp8s"
SALT = "salt-Hj3nB6tY1cZe"
REDIS_PASSWORD = "Zq8-rT2x"
UPSTREAM_PASSWORD = "gw-pw-5521"


@pytest.fixture(autouse=True)
def no_operator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("RECOVERY_PROXY_")]:
        monkeypatch.delenv(name)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def config(*argv: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    """`recovery-proxy config ARGV` as a process, with only `env` as RECOVERY_PROXY_*."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    return subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "config", *argv],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def rows(table: str) -> dict[str, tuple[str, str]]:
    """The table's rows: setting -> (value, source)."""
    lines = table.splitlines()
    assert lines[0].split() == ["setting", "value", "source"]
    found = {}
    for line in lines[1:]:
        name, value, source = line.split(None, 2)
        found[name] = (value, source)
    return found


def test_each_setting_says_where_it_came_from(tmp_path: Path) -> None:
    (tmp_path / "proxy.yaml").write_text("port: 9100\nlog_format: json\nhot_reload: false\n")
    done = config(
        "--config",
        "proxy.yaml",
        "--log-level",
        "debug",
        "--no-log-bodies",
        cwd=tmp_path,
        RECOVERY_PROXY_UPSTREAM="http://10.20.0.4:4000/v1",
        RECOVERY_PROXY_PORT="9200",  # env over the file
    )
    assert done.returncode == 0 and done.stderr == ""
    shown = rows(done.stdout)
    assert list(shown) == list(Settings.model_fields)  # every setting, in order
    assert shown["config"] == ("proxy.yaml", "flag --config")
    assert shown["log_level"] == ("debug", "flag --log-level")
    assert shown["log_bodies"] == ("false", "flag --no-log-bodies")
    assert shown["upstream"] == ("http://10.20.0.4:4000/v1", "env RECOVERY_PROXY_UPSTREAM")
    assert shown["port"] == ("9200", "env RECOVERY_PROXY_PORT")
    assert shown["log_format"] == ("json", "file proxy.yaml")
    assert shown["hot_reload"] == ("false", "file proxy.yaml")
    assert shown["store"][1] == "serve default"
    assert shown["host"] == ("127.0.0.1", "default")
    assert shown["rules"] == ("(unset)", "default")
    assert shown["max_body_bytes"] == ("33554432", "default")


def test_the_environment_can_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text('store = "memory"\n')
    monkeypatch.setenv("RECOVERY_PROXY_CONFIG", str(path))
    assert main(["config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["config"] == {"value": str(path), "source": "env RECOVERY_PROXY_CONFIG"}
    assert shown["store"] == {"value": "memory", "source": f"file {path}"}


def test_json_has_every_setting_with_its_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["config", "--json", "--port", "9300", "--require-credential"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown) == set(Settings.model_fields)
    assert shown["port"] == {"value": 9300, "source": "flag --port"}  # JSON's own types
    assert shown["require_credential"] == {"value": True, "source": "flag --require-credential"}
    assert shown["context_window"] == {"value": None, "source": "default"}
    assert shown["connect_timeout"] == {"value": 10.0, "source": "default"}
    assert shown["store"] == {"value": f"sqlite:{default_sqlite_path()}", "source": "serve default"}


def test_for_run_shows_runs_own_defaults_and_not_the_listen_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.7:4000/v1")
    monkeypatch.setenv("RECOVERY_PROXY_ANTHROPIC_UPSTREAM", "http://10.0.0.8:4001")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://ignored:1")  # RECOVERY_PROXY_* wins
    assert main(["config", "--for", "run"]) == 0
    shown = rows(capsys.readouterr().out)
    assert "host" not in shown and "port" not in shown  # run: a free loopback port
    assert shown["store"] == ("memory", "run default")
    assert shown["log_level"] == ("warning", "run default")
    assert shown["upstream"] == ("http://10.0.0.7:4000/v1", "env OPENAI_BASE_URL (run)")
    assert shown["anthropic_upstream"] == (
        "http://10.0.0.8:4001",
        "env RECOVERY_PROXY_ANTHROPIC_UPSTREAM",
    )
    assert shown["gemini_upstream"][1] == "default"


def test_secrets_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "proxy.yaml"
    path.write_text(
        f"session_salt: {SALT}\nstore: redis://default:{REDIS_PASSWORD}@cache.internal:6379/0\n"
    )
    env = {
        "RECOVERY_PROXY_ADMIN_TOKEN": TOKEN,
        "RECOVERY_PROXY_UPSTREAM": f"https://proxy-user:{UPSTREAM_PASSWORD}@gw.internal/v1",
    }
    for output in ([], ["--json"]):
        done = config("--config", str(path), *output, **env)
        assert done.returncode == 0, done.stderr
        for secret in (TOKEN, SALT, REDIS_PASSWORD, UPSTREAM_PASSWORD, "proxy-user"):
            assert secret not in done.stdout
    shown = json.loads(done.stdout)
    assert shown["admin_token"] == {"value": "***", "source": "env RECOVERY_PROXY_ADMIN_TOKEN"}
    assert shown["session_salt"] == {"value": "***", "source": f"file {path}"}
    assert shown["store"]["value"] == "redis://***@cache.internal:6379/0"
    assert shown["upstream"]["value"] == "https://***@gw.internal/v1"
    unset = json.loads(config("--json").stdout)
    assert unset["admin_token"] == {"value": None, "source": "default"}


@pytest.mark.parametrize(
    ("argv", "env", "line"),
    [
        (
            ["--port", "99999"],
            {},
            "recovery-proxy: invalid setting: port (--port / RECOVERY_PROXY_PORT) = '99999': "
            "Input should be less than or equal to 65535",
        ),
        (
            [],
            {"RECOVERY_PROXY_CONTROL_FRACTION": "2"},
            "recovery-proxy: invalid setting: control_fraction (--control-fraction / "
            "RECOVERY_PROXY_CONTROL_FRACTION) = '2': Input should be less than or equal to 1",
        ),
        (
            ["--log-format", "xml"],
            {},
            "recovery-proxy config: error: argument --log-format: invalid choice: 'xml' (choose "
            "from 'text', 'json') (see recovery-proxy config --help)",
        ),
        (
            ["--config", "missing.yaml"],
            {},
            "recovery-proxy: config file missing.yaml: no such file",
        ),
    ],
    ids=["flag", "env", "choice", "file"],
)
def test_a_bad_value_is_one_line_and_exit_2_as_for_serve(
    argv: list[str], env: dict[str, str], line: str
) -> None:
    done = config(*argv, **env)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
    served = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "serve", "--store", "memory", *argv],
        cwd=REPO,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_")}, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (served.returncode, served.stderr) == (
        2,
        line.replace("recovery-proxy config", "recovery-proxy serve") + "\n",
    )


def test_the_readme_example_is_the_real_output(tmp_path: Path) -> None:
    """The README shows part of the table for its own example file: each line it shows is a
    line of the real output, in order (columns compared word by word)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration reference", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    (tmp_path / "proxy.yaml").write_text(example)
    shown = section.split("```console\n$ ", 1)[1].split("\n```", 1)[0].splitlines()
    command, lines = shown[0], [line for line in shown[1:] if line != "..."]
    env, argv = command.split(" recovery-proxy config ")
    name, value = env.split("=", 1)
    assert name == "RECOVERY_PROXY_ADMIN_TOKEN" and value == "$(openssl rand -hex 24)"
    done = config(*argv.split(), cwd=tmp_path, RECOVERY_PROXY_ADMIN_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    real = [line.split() for line in done.stdout.splitlines()]
    assert len(lines) >= 6
    at = 0
    for line in lines:
        assert line.split() in real[at:], line
        at = real.index(line.split(), at) + 1
