"""OpenAI Responses: every tool-output item, explicit flags, splicing without copies."""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.core.classify import classify
from recovery_proxy.core.plan import Plan
from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.openai_responses import parse, splice
from tests.conftest import local_rules, make_settings, proxy_client
from tests.wire.agents import CODEX_INSTRUCTIONS, ResponsesAgent, user_item

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


# ---- over HTTP: the real app, a mock provider on loopback ---------------------------------------------

ENOENT = "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: src/billing/rounding.py: No such file or directory"
PYTEST_FAILED = (
    "Exit code: 1\nWall time: 2.4 seconds\nOutput:\n"
    "FAILED tests/test_invoice.py::test_total - assert 10.0 == 10.5\n1 failed, 11 passed in 0.31s"
)
CAT = {"command": ["bash", "-lc", "cat src/billing/rounding.py"], "path": "src/billing/rounding.py"}


def extends(previous: bytes, current: bytes) -> bool:
    """Request N+1 keeps request N's items byte for byte, instructions too."""
    before, after = orjson.loads(previous), orjson.loads(current)
    n = len(before["input"])
    return before["instructions"] == after["instructions"] and [
        orjson.dumps(item) for item in after["input"][:n]
    ] == [orjson.dumps(item) for item in before["input"]]


async def test_block_after_a_failure_and_the_second_lists_the_first(client) -> None:
    agent = ResponsesAgent(client)
    response = await agent.call("shell", CAT, ENOENT)
    assert response.status_code == 200
    assert response.headers["x-recovery-proxy-injected"] == "1"
    first = agent.last_output
    assert first.startswith(ENOENT + "\n\n[Error Recovery Context]\n")
    assert 'Operation: shell("src/billing/rounding.py")' in first
    assert "Previous attempts" not in first and first.count(ENOENT) == 1
    await agent.call("read_file", {"path": "src/billing/rounding.py"}, ENOENT)
    second = agent.last_output
    assert '  1. shell("src/billing/rounding.py") -> not_found' in second
    assert agent.last["input"][2]["output"] == first  # re-applied byte for byte


async def test_repeats_end_in_stop(client) -> None:
    agent = ResponsesAgent(client)
    for i in range(3):
        await agent.call("shell", CAT, ENOENT)
        if i < 2:
            await agent.call("shell", {"command": ["bash", "-lc", f"ls src/{i}"]}, "invoice.py")
    assert "STOP: occurrence #3 of the same not_found failure" in agent.last_output


async def test_escalation_block_is_a_409_in_openai_shape(tmp_path) -> None:
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: block ",
        },
    )
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ResponsesAgent(client)
        assert (
            await agent.call("shell", {"command": ["pytest", "-q"]}, PYTEST_FAILED)
        ).status_code == 200
        blocked = await agent.call("shell", {"command": ["pytest", "-x"]}, PYTEST_FAILED)
    assert blocked.status_code == 409 and blocked.headers["x-should-retry"] == "false"
    error = blocked.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == error["code"] == "recovery_escalation"
    assert "2 consecutive tool calls have failed" in error["message"]
    assert len(agent.forwarded) == 1


async def test_nothing_to_add_is_forwarded_byte_for_byte(client) -> None:
    agent = ResponsesAgent(client)
    await agent.call("shell", {"command": ["bash", "-lc", "ls src/billing"]}, "invoice.py\ntax.py")
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    assert agent.forwarded[-1] == agent.sent[-1]


async def test_every_request_extends_the_previous_one(client) -> None:
    agent = ResponsesAgent(client)
    script = [
        ("shell", CAT, ENOENT),
        ("shell", {"command": ["bash", "-lc", "ls src/billing"]}, "invoice.py\ntax.py"),
        ("shell", {"command": ["pytest", "-q"]}, PYTEST_FAILED),
        ("read_file", {"path": "src/billing/invoice.py"}, "def total(self): ..."),
        ("shell", CAT, ENOENT),
    ]
    for _ in range(3):
        for name, arguments, output in script:
            assert (await agent.call(name, arguments, output)).status_code == 200
    for previous, current in zip(agent.forwarded, agent.forwarded[1:], strict=False):
        assert extends(previous, current)


async def test_compaction_summary_goes_into_instructions(client) -> None:
    agent = ResponsesAgent(client)
    await agent.call("shell", CAT, ENOENT)
    await agent.call("shell", {"command": ["pytest", "-q"]}, PYTEST_FAILED)
    agent.input = [
        agent.input[0],
        user_item(
            "Another language model started to solve this problem and produced a summary of its "
            "thinking process.\nSummary: the rounding helper is missing."
        ),
    ]
    await agent.send()
    instructions = agent.last["instructions"]
    assert instructions.startswith(CODEX_INSTRUCTIONS + "\n\n## Recent failures")
    assert 'shell("src/billing/rounding.py")' in instructions
    await agent.call("shell", {"command": ["bash", "-lc", "ls src"]}, "billing\nmain.py")
    assert agent.last["instructions"] == instructions  # frozen until the next compaction


async def test_previous_response_id_chain_is_annotated_without_a_compaction(client) -> None:
    agent = ResponsesAgent(client, chain=True, headers={"session-id": "agents-run-7"})
    await agent.send()  # the first turn: only the task
    await agent.call(
        "read_file",
        {"path": "src/billing/rounding.py"},
        "An error occurred while running the tool. Please try again.",
    )
    first = agent.last_output
    assert 'Operation: read_file("src/billing/rounding.py")' in first
    assert [item["type"] for item in agent.last["input"]] == [
        "function_call",
        "function_call_output",
    ]
    await agent.call(
        "read_file",
        {"path": "src/billing/rounding.py"},
        "An error occurred while running the tool. Please try again.",
    )
    assert '  1. read_file("src/billing/rounding.py")' in agent.last_output
    assert agent.last["instructions"] == CODEX_INSTRUCTIONS  # no summary: nothing was compacted
    metrics = (await client.get("/metrics")).text
    assert "recovery_proxy_compactions_total 0.0" in metrics


async def test_explicit_flags_decide_over_http(client) -> None:
    agent = ResponsesAgent(client)
    agent.input.append(
        {
            "type": "shell_call_output",
            "call_id": "call_sh_ok",
            "output": [
                {
                    "stdout": "grep: error handling in src/billing/errors.py\n",
                    "stderr": "",
                    "outcome": {"type": "exit", "exit_code": 0},
                }
            ],
        }
    )
    await agent.send()
    assert agent.forwarded[-1] == agent.sent[-1]
    agent.input.append(
        {"type": "apply_patch_call_output", "call_id": "call_ap1", "status": "failed"}
    )
    await agent.send()
    assert agent.last_output.startswith("[Error Recovery Context]\nOperation: unknown_tool_call()")
