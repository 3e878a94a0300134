"""OpenAI Responses: every tool-output item, explicit flags, splicing without copies."""

from __future__ import annotations

from typing import Any

import orjson

from proxy.core.classify import classify
from proxy.core.plan import Plan
from proxy.rules import Placement, default_rules_dir, load_rules
from proxy.wire.openai_responses import parse, splice

RULES = load_rules(default_rules_dir())
APPEND = Placement(mode="append")
INSTRUCTIONS = "You are Codex, a coding agent based on GPT-5. You run in a sandboxed terminal."
PATCH = (
    "*** Begin Patch\n*** Update File: src/billing/invoice.py\n@@ def total(self):\n"
    "-        return sum(self.lines)\n+        return sum(line.amount for line in self.lines)\n"
    "*** End Patch"
)
PATCH_FAILED = (
    "apply_patch verification failed: Failed to find expected lines in src/billing/invoice.py:\n"
    "        return sum(self.lines)"
)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def codex_body(*items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-5-codex",
        "instructions": INSTRUCTIONS,
        "input": [user("Fix the rounding bug in invoice totals."), *items],
        "tools": [{"type": "custom", "name": "apply_patch", "description": "Edit files."}],
        "store": False,
        "stream": True,
        "prompt_cache_key": "0199a1f2-4c1e-7d3a-9b0e-5f2d8c6e1a47",
        **extra,
    }


SHELL_CALL = {
    "type": "function_call",
    "name": "shell",
    "arguments": '{"command":["bash","-lc","pytest -q tests/test_invoice.py"],"workdir":"/repo"}',
    "call_id": "call_Qm3VxTz8",
}


def test_function_call_output_string_list_and_codex_json() -> None:
    exec_json = orjson.dumps(
        {
            "output": "FAILED tests/test_invoice.py::test_total - assert 10.0 == 10.5\n1 failed",
            "metadata": {"exit_code": 1, "duration_seconds": 1.3},
        }
    ).decode()
    conv = parse(
        codex_body(
            SHELL_CALL,
            {"type": "function_call_output", "call_id": "call_Qm3VxTz8", "output": exec_json},
            {
                "type": "function_call",
                "name": "read",
                "arguments": '{"path": "a.md"}',
                "call_id": "c2",
            },
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "# Billing"}, {"type": "input_image"}],
            },
        )
    )
    assert conv is not None and conv.system == INSTRUCTIONS and not conv.partial
    shell, read = conv.results
    assert (shell.position, shell.tool, read.position, read.text) == (2, "shell", 4, "# Billing")
    assert shell.text.startswith("Exit code: 1\nWall time: 1.3 seconds\nOutput:\nFAILED tests/")
    verdict = classify(RULES, shell.tool, shell.text, shell.is_error)
    assert verdict.error and verdict.key_line.startswith("FAILED tests/test_invoice.py")
    assert conv.ends_with_result and not conv.ends_with_user


def test_custom_tool_call_apply_patch_targets_the_patched_file() -> None:
    conv = parse(
        codex_body(
            {
                "type": "custom_tool_call",
                "call_id": "call_p1",
                "name": "apply_patch",
                "input": PATCH,
            },
            {"type": "custom_tool_call_output", "call_id": "call_p1", "output": PATCH_FAILED},
        )
    )
    assert conv is not None
    [result] = conv.results
    assert result.tool == "apply_patch" and result.call is not None
    assert result.call.arguments["path"] == "src/billing/invoice.py"


def test_local_shell_output_by_id_or_call_id() -> None:
    call = {
        "type": "local_shell_call",
        "id": "lsh_01",
        "call_id": "call_ls1",
        "status": "completed",
        "action": {"type": "exec", "command": ["bash", "-lc", "make test"], "env": {}},
    }
    for key in ("id", "call_id"):
        output = {"type": "local_shell_call_output", key: call[key], "output": "make: *** Error 2"}
        conv = parse(codex_body(call, output))
        assert conv is not None
        [result] = conv.results
        assert result.tool == "local_shell" and result.call is not None
        assert result.call.arguments == {"command": "make test"}


def test_shell_and_apply_patch_outputs_carry_explicit_flags() -> None:
    def shell_output(call_id: str, outcome: dict[str, Any], stderr: str = "") -> dict[str, Any]:
        chunk = {"stdout": "collected 12 items\n", "stderr": stderr, "outcome": outcome}
        return {"type": "shell_call_output", "call_id": call_id, "output": [chunk]}

    shell_call = {"type": "shell_call", "call_id": "sh1", "action": {"commands": ["pytest -q"]}}
    conv = parse(
        codex_body(
            shell_call,
            shell_output("sh1", {"type": "exit", "exit_code": 0}, "warning: deprecated"),
            shell_output("sh2", {"type": "exit", "exit_code": 2}, "error: no tests ran"),
            shell_output("sh3", {"type": "timeout"}),
            {"type": "apply_patch_call_output", "call_id": "ap1", "status": "failed"},
            {"type": "apply_patch_call_output", "call_id": "ap2", "status": "completed"},
        )
    )
    assert conv is not None
    assert [r.is_error for r in conv.results] == [False, True, True, True, False]
    assert conv.results[0].tool == "shell" and conv.results[0].call is not None
    assert conv.results[0].call.arguments == {"command": "pytest -q"}
    assert conv.results[1].text == "collected 12 items\n\nerror: no tests ran"


def test_previous_response_id_means_a_partial_history() -> None:
    body = {
        "model": "gpt-4.1",
        "previous_response_id": "resp_68a1c2f0e4b88190a7c4c5f1",
        "input": [{"type": "function_call_output", "call_id": "call_w1", "output": "timeout"}],
    }
    conv = parse(body)
    assert conv is not None and conv.partial and conv.results[0].call is None


def test_splice_appends_inside_each_output_shape_and_shares_the_rest() -> None:
    body = codex_body(
        SHELL_CALL,
        {"type": "function_call_output", "call_id": "call_Qm3VxTz8", "output": "boom"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "x"}],
        },
        {
            "type": "shell_call_output",
            "call_id": "sh2",
            "output": [{"stdout": "", "stderr": "E1", "outcome": {"type": "exit", "exit_code": 1}}],
        },
        {"type": "apply_patch_call_output", "call_id": "ap1", "status": "failed"},
    )
    plan = Plan(appends={2: "[B2]", 3: "[B3]", 4: "[B4]", 5: "[B5]"}, summary="[S]")
    out = splice(body, plan, APPEND)
    items = out["input"]
    assert items[2]["output"] == "boom\n\n[B2]"
    assert items[3]["output"][-1] == {"type": "input_text", "text": "\n\n[B3]"}
    assert items[4]["output"][0]["stderr"] == "E1\n\n[B4]"
    assert items[4]["output"][0]["outcome"] == {"type": "exit", "exit_code": 1}
    assert items[5]["output"] == "[B5]"
    assert out["instructions"] == INSTRUCTIONS + "\n\n[S]"
    assert items[0] is body["input"][0] and items[1] is body["input"][1]
    assert list(out) == list(body) and body["input"][2]["output"] == "boom"


def test_message_placement_adds_one_user_item_after_the_batch() -> None:
    body = codex_body(
        {"type": "function_call_output", "call_id": "a", "output": "Error: ENOENT"},
        {"type": "function_call_output", "call_id": "b", "output": "ok"},
        user("Keep going."),
    )
    out = splice(body, Plan(appends={1: "[B1]"}), Placement(mode="message"))
    kinds = [item.get("type") for item in out["input"]]
    assert kinds == [
        "message",
        "function_call_output",
        "function_call_output",
        "message",
        "message",
    ]
    assert out["input"][3]["content"] == [{"type": "input_text", "text": "[B1]"}]
    assert out["input"][1] is body["input"][1]


def test_summary_without_instructions_becomes_the_instructions() -> None:
    body = {"model": "gpt-4.1", "input": [user("Hi")]}
    assert splice(body, Plan(summary="[S]"), APPEND)["instructions"] == "[S]"


def test_requests_without_an_item_list_are_not_parsed() -> None:
    assert parse({"model": "gpt-4.1", "input": "Write a haiku about invoices."}) is None
