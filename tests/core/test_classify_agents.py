"""Failed tool results exactly as today's agent CLIs send them (recorded against the mock model,
tests/agents): each is a failure with the tool's own error line, wrappers stripped."""

from __future__ import annotations

import pytest

from recovery_proxy.core.classify import classify
from recovery_proxy.rules.model import Rules

ERROR = "cat: missing.txt: No such file or directory"
RECORDED = {
    # Claude Code 2.1.197, Bash tool_result (is_error: true on the wire)
    "claude-code": ("Bash", f"Exit code 1\n{ERROR}", True),
    # Codex 0.169.0, unified exec function_call_output (no flag)
    "codex": (
        "exec_command",
        "Chunk ID: 030d35\nWall time: 0.0000 seconds\nProcess exited with code 1\n"
        f"Original token count: 11\nOutput:\n{ERROR}\n",
        None,
    ),
    # Gemini CLI 0.61.0, run_shell_command functionResponse.response.output
    "gemini-cli": (
        "run_shell_command",
        f"<untrusted_context>\nOutput: {ERROR}\nExit Code: 1\nProcess Group PGID: 25208\n"
        "</untrusted_context>",
        None,
    ),
    # OpenCode 1.18.33, Chat Completions role: tool, bare stderr
    "opencode": ("bash", f"{ERROR}\n", None),
}


@pytest.mark.parametrize("agent", RECORDED)
def test_a_failed_shell_call_is_a_failure_with_the_bare_error_line(
    rules: Rules, agent: str
) -> None:
    tool, text, flag = RECORDED[agent]
    verdict = classify(rules, tool, text, flag)
    assert verdict.error and verdict.category == "not_found"
    assert verdict.key_line == ERROR


def test_gemini_cli_shell_without_output_names_its_exit_code(rules: Rules) -> None:
    text = "<untrusted_context>\nOutput: (empty)\nExit Code: 2\nProcess Group PGID: 7\n</untrusted_context>"
    verdict = classify(rules, "run_shell_command", text)
    assert verdict.error and verdict.key_line == "Exit Code: 2"


def test_gemini_cli_shell_exit_zero_is_a_success(rules: Rules) -> None:
    text = "<untrusted_context>\nOutput: Error: none\nExit Code: 0\nProcess Group PGID: 7\n</untrusted_context>"
    assert not classify(rules, "run_shell_command", text).error
