"""Every start-up problem of `serve` is one line naming the flag, variable or file (full path
and line), exit 2, before anything says "ready"; never a traceback or uvicorn's own lines."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from recovery_proxy.rules.load import default_rules_dir

REPO = Path(__file__).resolve().parents[2]


def serve(*flags: str, **env: str) -> tuple[int, list[str]]:
    """`recovery-proxy serve FLAGS` as a process: (exit code, the lines on stderr)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "serve", "--store", "memory", *flags],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stderr.strip().splitlines()


def test_a_port_in_use_is_one_line_before_ready() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, lines = serve("--port", str(port))
    assert code == 2
    assert lines == [
        f"recovery-proxy: cannot listen on 127.0.0.1:{port} (--host/--port): Address already in use"
    ]


@pytest.mark.parametrize(
    ("flags", "env", "named"),
    [
        (["--port", "99999"], {}, "port (--port / RECOVERY_PROXY_PORT) = '99999'"),
        (["--upstream", "notaurl"], {}, "upstream (--upstream / RECOVERY_PROXY_UPSTREAM)"),
        ([], {"RECOVERY_PROXY_CONTROL_FRACTION": "2"}, "RECOVERY_PROXY_CONTROL_FRACTION) = '2'"),
    ],
    ids=["port", "upstream", "control-fraction"],
)
def test_invalid_settings_are_one_line_naming_flag_and_variable(
    flags: list[str], env: dict[str, str], named: str
) -> None:
    code, lines = serve(*flags, **env)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("recovery-proxy: invalid setting: ") and named in lines[0]


def test_yaml_errors_name_the_full_path_and_line(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    for path in default_rules_dir().glob("*.yaml"):
        (rules / path.name).write_text(path.read_text())
    (rules / "40-team.yaml").write_text("scan:\n  head: [1\n  bad: x: y\n")
    code, lines = serve("--rules", str(rules))
    assert code == 2 and len(lines) == 1
    assert f"{rules / '40-team.yaml'}:3:6: did not find expected" in lines[0]

    models = tmp_path / "models.yaml"
    models.write_text("model_list:\n - model_name: a\n   litellm_params: {model: x\n")
    code, lines = serve("--models", str(models))
    assert code == 2
    assert lines == [f"recovery-proxy: {models}:4:1: expected ',' or '}}', but got '<stream end>'"]


def test_sessions_commands_refuse_a_store_file_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said "no sessions" and exit 0 (and created an empty file there)."""
    from recovery_proxy.cli.main import main

    missing = tmp_path / "nowhere" / "sessions.db"
    for command in (["sessions", "list"], ["sessions", "purge", "--all"], ["report"]):
        assert main([*command, "--store", f"sqlite:{missing}"]) == 2
        assert (
            capsys.readouterr().err == f"recovery-proxy: no session store at {missing} (--store)\n"
        )
    assert not missing.parent.exists()


def test_a_bad_price_file_is_one_line(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o: {input: 2.5}\n")
    code, lines = serve("--prices", str(prices))
    assert code == 2
    assert lines == [
        f"recovery-proxy: prices file {prices}: price of 'gpt-4o': needs input and output "
        "(USD per 1M tokens)"
    ]
    code, lines = serve("--prices", str(tmp_path / "missing.yaml"))
    assert (code, lines) == (
        2,
        [f"recovery-proxy: prices file {tmp_path / 'missing.yaml'}: No such file or directory"],
    )
