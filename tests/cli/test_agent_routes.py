"""`run -- codex ...` puts Codex's own switch on its command line (Codex reads no base-URL
variable); other commands run as given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from recovery_proxy.cli.agent_routes import routed_command
from tests.cli.test_run import REPO, wrapper_env

BASE = "http://127.0.0.1:8787/s/run-1/v1"


def test_codex_gets_openai_base_url_before_its_subcommand() -> None:
    command, switches = routed_command(["/usr/bin/codex", "exec", "fix it"], BASE)
    assert command == ["/usr/bin/codex", "-c", f'openai_base_url="{BASE}"', "exec", "fix it"]
    assert switches == [f'-c openai_base_url="{BASE}"']


def test_other_commands_are_left_as_given() -> None:
    assert routed_command(["claude", "-p", "hi"], BASE) == (["claude", "-p", "hi"], [])


def test_run_hands_codex_the_switch_and_names_it_when_unused(tmp_path: Path) -> None:
    """A stand-in `codex` that records its arguments and sends nothing: the switch points at
    this run's session path, and the summary lists it with the variables."""
    codex = tmp_path / "codex"
    codex.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    codex.chmod(0o755)
    env = {**wrapper_env(), "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "recovery_proxy", "run", "--session", "cx-1", "--"]
    done = subprocess.run(
        [*command, "codex", "exec", "fix it"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    assert argv[0] == "-c" and argv[2:] == ["exec", "fix it"]
    assert argv[1].startswith('openai_base_url="http://127.0.0.1:')
    assert argv[1].endswith('/s/cx-1/v1"')
    assert "-c openai_base_url=" in done.stderr and "never used them" in done.stderr
