"""Result identity: the call a result answers, without the fields agents move between turns."""

from __future__ import annotations

from recovery_proxy.core.conversation import ToolResult, identify

CALL = {"type": "tool_use", "id": "toolu_4", "name": "Bash", "input": {"command": "ls"}}


def key(call: dict[str, object]) -> str:
    result = ToolResult("toolu_4", "Exit code 1", 0, call)
    identify([result])
    return result.key


def test_a_moved_cache_control_breakpoint_is_the_same_call() -> None:
    assert key({**CALL, "cache_control": {"type": "ephemeral"}}) == key(CALL)


def test_volatile_fields_of_other_formats_are_the_same_call() -> None:
    call = {"name": "run_shell_command", "args": {"command": "ls"}}
    assert key({**call, "thoughtSignature": "c2ln"}) == key(call)
    assert key({**call, "status": "completed", "index": 0}) == key(call)


def test_other_arguments_are_another_call() -> None:
    assert key({**CALL, "input": {"command": "ls -a"}}) != key(CALL)
