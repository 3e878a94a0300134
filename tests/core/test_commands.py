"""The call's command line and whether its exit status speaks for all of it."""

from __future__ import annotations

import pytest

from recovery_proxy.core.commands import (
    COMMAND_MAX,
    command_line,
    exit_status_speaks,
    piped_into_filter,
)

KEYS = ("command", "cmd")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"command": "grep -c ERROR logs/app.log"}, "grep -c ERROR logs/app.log"),
        ({"command": ["bash", "-lc", "grep -c ERROR app.log"]}, "grep -c ERROR app.log"),  # Codex
        ({"command": ["/bin/zsh", "-c", "which   terraform"]}, "which terraform"),
        ({"command": ["cmd.exe", "/c", "where", "node"]}, "where node"),
        ({"command": ["git", "diff", "--exit-code"]}, "git diff --exit-code"),  # an argv
        ({"cmd": "cd /srv/app && cd api; systemctl is-active api"}, "systemctl is-active api"),
        ({"command": "ruff check src/\n\n  pytest -q"}, "ruff check src/; pytest -q"),  # a script
        ({"command": ["bash", 7]}, ""),  # not an argv of strings
        ({"path": "README.md"}, ""),
        ({"command": "   "}, ""),
    ],
)
def test_command_line_is_the_calls_command_on_one_line(arguments, expected) -> None:
    assert command_line(arguments, KEYS) == expected


def test_command_line_is_bounded() -> None:
    assert len(command_line({"command": "echo " + "x" * 100_000}, KEYS)) <= COMMAND_MAX


@pytest.mark.parametrize(
    ("command", "speaks"),
    [
        ("pytest -q", True),
        ("", True),
        ("make 2>&1 | tail -20", True),  # a pipe: `piped_into_filter` judges that one
        ("npm test || true", True),  # the failure was meant to be ignored
        ("ruff check src/; pytest -q", False),  # pytest's exit status, not ruff's
        ("for f in *.json; do curl -sf -d @$f $URL; done", False),
        ("cd app; make", True),  # steps before the last only read or set up
        ("grep -c x a.log; grep -m2 x a.log", True),
        ("echo 'a; b' && make", True),  # quoted
        ("make;", True),
        ('echo "a \\" ; b"; make', True),  # an escaped quote inside quotes
        ('make NAME="a \\"" ; pytest', False),
    ],
)
def test_exit_status_speaks_for_the_last_step_of_a_sequence(command, speaks) -> None:
    assert exit_status_speaks(command) is speaks


@pytest.mark.parametrize(
    ("command", "tailed"),
    [
        ("cargo test 2>&1 | tail -30", True),  # tail's exit status, not cargo's
        ("uv run pytest -q 2>&1|head -n 40", True),
        ("cd web && npm run build 2>&1 | tee build.log | tail -5", True),
        ("make", False),
        ("make | grep error", True),  # grep's exit status: what it kept says how the run went
        ("& RunUAT.bat BuildCookRun 2>&1 | Select-Object -Last 14", True),  # PowerShell's tail
        ("cat app.log | tail -50", False),  # readers and queries: the exit status is theirs
        ("kubectl get events -n api --sort-by=.lastTimestamp | tail -4", False),
        ("docker logs api 2>&1 | grep -i error | head -4", False),
        ("make | tail -5; echo done", False),  # the last step is echo
        ("echo 'make | tail'", False),  # quoted
    ],
)
def test_piped_into_a_filter_is_a_run_whose_last_lines_are_shown(command, tailed) -> None:
    assert piped_into_filter(command) is tailed
