"""One settings path (issue 21): flags > `RECOVERY_PROXY_*` > the config file (YAML or TOML) >
a command's fallbacks > defaults, and the store spec parsed once into a `StoreSpec`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recovery_proxy.cli.main import build_parser, main
from recovery_proxy.cli.run import run_settings
from recovery_proxy.cli.serve import StartupError, serve_settings
from recovery_proxy.config import (
    Settings,
    SettingsFileError,
    StoreSpec,
    default_sqlite_path,
    load_settings,
    mask_url,
    trace_settings,
)

REPO = Path(__file__).resolve().parents[1]
YAML = """\
# recovery-proxy on the build host
port: 9100
upstream: http://10.20.0.4:4000/v1
store: sqlite:/var/lib/recovery-proxy/sessions.db
session_ttl_seconds: 7200
log_level: warning
"""
TOML = """\
# recovery-proxy on the build host
port = 9100
upstream = "http://10.20.0.4:4000/v1"
store = "sqlite:/var/lib/recovery-proxy/sessions.db"
session_ttl_seconds = 7200
log_level = "warning"
"""
FILES = {"yaml": YAML, "toml": TOML}


@pytest.fixture(autouse=True)
def no_operator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests set every `RECOVERY_PROXY_*` variable they need; none leak in."""
    for name in [name for name in os.environ if name.startswith("RECOVERY_PROXY_")]:
        monkeypatch.delenv(name)


def config_file(tmp_path: Path, kind: str, text: str | None = None) -> Path:
    path = tmp_path / f"proxy.{kind}"
    path.write_text(FILES[kind] if text is None else text, encoding="utf-8")
    return path


# ---- layering ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["yaml", "toml"])
def test_flag_beats_env_beats_config_file_beats_default(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, kind)
    assert Settings().port == 8787  # the default
    settings = load_settings({"config": path})
    assert (settings.port, settings.upstream) == (9100, "http://10.20.0.4:4000/v1")
    assert settings.session_ttl_seconds == 7200 and settings.log_level == "warning"
    assert settings.store == StoreSpec("sqlite", path=Path("/var/lib/recovery-proxy/sessions.db"))
    assert settings.host == "127.0.0.1"  # not in the file: the default
    monkeypatch.setenv("RECOVERY_PROXY_PORT", "9200")
    assert load_settings({"config": path}).port == 9200
    assert load_settings({"config": path, "port": 9300}).port == 9300
    assert load_settings({"config": path, "port": None}).port == 9200  # None: no flag


def test_the_environment_can_name_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECOVERY_PROXY_CONFIG", str(config_file(tmp_path, "toml")))
    assert Settings().port == 9100  # the library reads it too (the LiteLLM hook)
    other = config_file(tmp_path, "yaml", "port: 9400\n")
    assert load_settings({"config": other}).port == 9400  # --config beats the variable


def test_serve_flags_reach_the_layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = config_file(tmp_path, "yaml")
    monkeypatch.setenv("RECOVERY_PROXY_UPSTREAM", "http://gateway.internal:8000/v1")
    args = build_parser().parse_args(["serve", "--config", str(path), "--log-level", "debug"])
    settings = serve_settings(args)
    assert settings.port == 9100  # the file
    assert settings.upstream == "http://gateway.internal:8000/v1"  # env over the file
    assert settings.log_level == "debug"  # the flag over the file


def test_a_command_fallback_loses_to_env_and_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve = build_parser().parse_args(["serve"])
    assert serve_settings(serve).store == StoreSpec("sqlite", path=default_sqlite_path())
    monkeypatch.setenv(
        "RECOVERY_PROXY_CONFIG", str(config_file(tmp_path, "yaml", "store: memory\n"))
    )
    assert serve_settings(serve).store == StoreSpec("memory")  # the file over serve's sqlite
    monkeypatch.setenv("RECOVERY_PROXY_STORE", "redis://127.0.0.1:6390/2")
    assert serve_settings(serve).store.kind == "redis"  # env over both
    monkeypatch.setenv("RECOVERY_PROXY_STORE", "")  # empty is unset, as it always was
    assert serve_settings(serve).store == StoreSpec("memory")


def test_run_falls_back_to_the_callers_base_url_below_the_config_file(tmp_path: Path) -> None:
    caller = {"OPENAI_BASE_URL": "http://10.0.0.7:4000/v1", "ANTHROPIC_BASE_URL": "http://a:1"}
    run = build_parser().parse_args(["run", "--", "codex"])
    plain = run_settings(run, caller)
    assert (plain.upstream, plain.store.kind, plain.log_level) == (
        "http://10.0.0.7:4000/v1",
        "memory",
        "warning",
    )
    path = config_file(tmp_path, "toml")
    configured = build_parser().parse_args(["run", "--config", str(path), "--", "codex"])
    settings = run_settings(configured, caller)
    assert settings.upstream == "http://10.20.0.4:4000/v1"  # the file over the caller's URL
    assert settings.anthropic_upstream == "http://a:1"  # not in the file: the caller's
    assert settings.store.kind == "sqlite" and settings.log_level == "warning"


def test_trace_settings_names_the_layer_each_setting_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config_file(tmp_path, "toml")  # port, upstream, store, session_ttl_seconds, log_level
    monkeypatch.setenv("RECOVERY_PROXY_UPSTREAM", "http://gateway.internal:8000/v1")
    monkeypatch.setenv("RECOVERY_PROXY_HOST", "")  # empty is unset
    flags = {"config": path, "log_level": "debug", "port": None}
    settings, origins = trace_settings(flags, {"store": "memory", "max_sessions": 5})
    assert list(origins) == list(Settings.model_fields)
    assert (origins["config"], origins["log_level"]) == ("flag", "flag")
    assert origins["port"] == "file"  # a None flag is no flag
    assert origins["upstream"] == "env"
    assert (origins["store"], settings.store.kind) == ("file", "sqlite")  # the file over fallback
    assert (origins["max_sessions"], settings.max_sessions) == ("fallback", 5)
    assert (origins["host"], origins["read_timeout"]) == ("default", "default")
    untraced = load_settings(flags, {"store": "memory", "max_sessions": 5})
    assert settings.model_dump() == untraced.model_dump()
    assert Settings.origins is None  # nothing kept on the class itself


def test_mask_url_hides_who_connects() -> None:
    assert mask_url("https://svc:pw-1@gw.internal:8443/v1") == "https://***@gw.internal:8443/v1"
    assert mask_url("https://sk-token@gw.internal/v1") == "https://***@gw.internal/v1"
    assert mask_url("https://gw.internal/v1") == "https://gw.internal/v1"


# ---- a bad config file: one line naming the file and the key -----------------------------


@pytest.mark.parametrize(
    ("kind", "text", "problem"),
    [
        ("yaml", "port: 9100\nprot: 9101\n", "unknown setting 'prot'"),
        ("toml", 'port = 9100\nupstrem = "http://10.20.0.4/v1"\n', "unknown setting 'upstrem'"),
        ("yaml", "port: 70000\n", "port: Input should be less than or equal to 65535"),
        ("toml", 'log_level = "verbose"\n', "log_level: Input should be 'debug', 'info', "),
        ("yaml", "upstream: ftp://10.20.0.4/v1\n", "upstream: Value error, upstream must be"),
        ("toml", 'store = "etcd://10.20.0.4:2379"\n', "store: Value error, unknown session store"),
        ("yaml", "store: 6379\n", "store: Value error, unknown session store 6379"),
        ("yaml", "config: other.yaml\n", "unknown setting 'config'"),
        ("yaml", "- port\n- 9100\n", "not a mapping of settings"),
        ("yaml", "port: [9100\n", "cannot read it: while parsing a flow sequence"),
        ("toml", "port = \n", "cannot read it: Invalid value"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, kind: str, text: str, problem: str
) -> None:
    path = config_file(tmp_path, kind, text)
    with pytest.raises(StartupError) as raised:
        serve_settings(build_parser().parse_args(["serve", "--config", str(path)]))
    message = str(raised.value)
    assert message.startswith(f"config file {path}: {problem}")
    assert "\n" not in message


def test_a_config_file_that_is_not_there_or_not_yaml_or_toml(tmp_path: Path) -> None:
    with pytest.raises(SettingsFileError, match=r"proxy\.yaml: no such file"):
        load_settings({"config": tmp_path / "proxy.yaml"})
    ini = tmp_path / "proxy.ini"
    ini.write_text("[proxy]\nport = 9100\n")
    with pytest.raises(SettingsFileError, match=r"proxy.ini: use a \.yaml, \.yml or \.toml file"):
        load_settings({"config": ini})


def test_serve_stops_with_that_one_line_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "proxy.yaml").write_text("port: 70000\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "serve", "--config", "proxy.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    # Word for word the line the README's configuration section shows.
    line = (
        "recovery-proxy: config file proxy.yaml: port: Input should be less than or equal to 65535"
    )
    assert done.stderr == line + "\n"
    assert line.removeprefix("recovery-proxy: ") in (REPO / "README.md").read_text()


def test_the_other_commands_read_the_same_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, "yaml", "store: memory\n")
    assert main(["sessions", "list", "--config", str(path)]) == 2
    assert "the memory store lives inside the running proxy" in capsys.readouterr().err
    bad = config_file(tmp_path, "toml", "control_fraction = 1.5\n")
    assert main(["report", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"recovery-proxy: config file {bad}: control_fraction: Input should be less than or equal to 1\n"
    )


def test_the_readme_example_is_a_valid_config_file(tmp_path: Path) -> None:
    section = (REPO / "README.md").read_text().split("## Configuration reference", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    settings = load_settings({"config": config_file(tmp_path, "yaml", example)})
    assert (settings.port, settings.store.kind, settings.control_fraction) == (8788, "redis", 0.2)


# ---- the store spec, parsed once ---------------------------------------------------------


def test_each_store_spec_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    default = tmp_path / "state" / "recovery-proxy" / "sessions.db"
    forms = {
        "memory": StoreSpec("memory"),
        "  memory\n": StoreSpec("memory"),
        "sqlite": StoreSpec("sqlite", path=default),
        "sqlite:": StoreSpec("sqlite", path=default),
        "sqlite:/srv/proxy/sessions.db": StoreSpec("sqlite", path=Path("/srv/proxy/sessions.db")),
        "sqlite:///srv/proxy/sessions.db": StoreSpec("sqlite", path=Path("/srv/proxy/sessions.db")),
        "sqlite:state/sessions.db": StoreSpec("sqlite", path=Path("state/sessions.db")),
        "sqlite:~/sessions.db": StoreSpec("sqlite", path=Path.home() / "sessions.db"),
        "redis://10.20.0.9:6379/0": StoreSpec("redis", url="redis://10.20.0.9:6379/0"),
        "rediss://cache.internal:6380/2": StoreSpec("redis", url="rediss://cache.internal:6380/2"),
    }
    for text, spec in forms.items():
        assert StoreSpec.parse(text) == spec, text
        assert Settings(store=text).store == spec, text
    assert Settings(store=StoreSpec("memory")).store == StoreSpec("memory")


@pytest.mark.parametrize(
    "text", ["Memory", "sqlite3", "postgres://10.20.0.9/sessions", "redis:10.20.0.9", ""]
)
def test_a_bad_store_spec_names_the_forms(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        StoreSpec.parse(text)
    assert str(raised.value) == (
        f"unknown session store {text!r}: use memory, sqlite, sqlite:PATH, "
        "redis://HOST:PORT/DB or rediss://HOST:PORT/DB"
    )
    with pytest.raises(ValueError, match="unknown session store"):
        Settings(store=text)


def test_describe_hides_the_redis_password() -> None:
    secret = StoreSpec.parse("redis://default:Zq8-rT2x@cache.internal:6379/0")
    assert secret.url == "redis://default:Zq8-rT2x@cache.internal:6379/0"  # still usable
    assert secret.describe() == "redis://***@cache.internal:6379/0"
    shown = (
        repr(secret),
        repr(Settings(store=secret)),
        StoreSpec.parse("rediss://:Zq8-rT2x@h/1").describe(),
    )
    assert all("Zq8-rT2x" not in text for text in shown)
    assert (
        StoreSpec.parse("redis://cache.internal:6379/0").describe()
        == "redis://cache.internal:6379/0"
    )
    assert StoreSpec.parse("sqlite:/srv/proxy/sessions.db").describe() == "/srv/proxy/sessions.db"
    assert StoreSpec.parse("memory").describe() == "memory"


def test_rules_check_takes_extra_rules_from_the_same_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for team in ("platform", "payments"):
        (tmp_path / team).mkdir()
        (tmp_path / team / f"{team}.yaml").write_text("categories: [\n")  # a broken rule file
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(
        "RECOVERY_PROXY_CONFIG", str(config_file(tmp_path, "yaml", "extra_rules: platform\n"))
    )
    assert main(["rules", "check"]) == 1
    assert "extra rules platform.yaml: cannot read YAML" in capsys.readouterr().err
    monkeypatch.setenv("RECOVERY_PROXY_EXTRA_RULES", "payments")
    assert main(["rules", "check"]) == 1
    assert "extra rules payments.yaml: cannot read YAML" in capsys.readouterr().err
    assert main(["rules", "check", "--extra-rules", "platform"]) == 1
    assert "extra rules platform.yaml: cannot read YAML" in capsys.readouterr().err
