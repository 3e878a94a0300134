"""Anthropic Messages: tool_use/tool_result, is_error, system blocks, Claude Code's hints."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import orjson

from recovery_proxy.core.plan import Plan
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.anthropic_messages import error_body, parse, session_hint, splice
from tests.conftest import ANTHROPIC_UPSTREAM, local_rules, make_settings, proxy_client
from tests.upstream import upstream_mock
from tests.wire.agents import ClaudeAgent

APPEND = Placement(mode="append")
SESSION = "6f1c2b7e-3d4a-4e8b-9a61-2c5d7e8f9a10"


def billing(cch: str) -> dict[str, Any]:
    return {
        "type": "text",
        "text": f"x-anthropic-billing-header: cc_version=2.1.90.a1b; cch={cch};",
    }


def claude_code_system(cch: str = "7f3e1") -> list[dict[str, Any]]:
    return [
        billing(cch),
        {
            "type": "text",
            "text": "You are Claude Code, Anthropic's official CLI for Claude.",
            "cache_control": {"type": "ephemeral"},
        },
        {
            "type": "text",
            "text": "You are an interactive CLI tool that helps users with software engineering tasks.",
            "cache_control": {"type": "ephemeral"},
        },
    ]


def tool_use(tool_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}


def tool_result(tool_id: str, content: Any, is_error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def body(*turns: dict[str, Any], system: Any = None) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "system": claude_code_system() if system is None else system,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix the flaky retry test."}]},
            *turns,
        ],
        "metadata": {"user_id": f"user_9c1f_account__session_{SESSION}"},
        "stream": True,
    }


EDIT = tool_use(
    "toolu_01Edit", "Edit", file_path="/repo/src/retry.ts", old_string="3", new_string="5"
)
EDIT_FAILED = "<tool_use_error>String to replace not found in file.\nString: 3</tool_use_error>"


def test_tool_results_with_is_error_both_ways() -> None:
    conv = parse(
        body(
            {"role": "assistant", "content": [{"type": "text", "text": "Editing."}, EDIT]},
            {
                "role": "user",
                "content": [
                    tool_result("toolu_01Edit", EDIT_FAILED, True),
                    tool_result("toolu_01Grep", "src/retry.ts:4: throw new Error('x')", False),
                    tool_result("toolu_01Read", [{"type": "text", "text": "export {}"}]),
                ],
            },
        )
    )
    assert conv is not None
    edit, grep, read = conv.results
    assert [r.is_error for r in conv.results] == [True, False, None]
    assert [r.position for r in conv.results] == [(2, 0), (2, 1), (2, 2)]
    assert edit.tool == "Edit" and edit.call is not None
    assert edit.call.arguments["file_path"] == "/repo/src/retry.ts"
    assert grep.call is None and read.text == "export {}"
    assert conv.ends_with_result and not conv.ends_with_user


def test_billing_line_is_not_system_text_nor_part_of_the_fingerprint() -> None:
    first = parse(body(system=claude_code_system("7f3e1")))
    second = parse(body(system=claude_code_system("0b9d4")))
    assert first is not None and second is not None
    assert "billing" not in first.system and first.system.startswith("You are Claude Code")
    assert first.thread == second.thread


def test_a_typed_user_turn_ends_with_user() -> None:
    conv = parse(
        body({"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks"})
    )
    assert conv is not None and conv.ends_with_user and not conv.ends_with_result
    assert [i for i, _ in conv.user_anchors] == [0, 2]


def test_splice_appends_after_the_content_inside_the_tool_result() -> None:
    results = {
        "role": "user",
        "content": [
            tool_result("toolu_01Edit", EDIT_FAILED, True)
            | {"cache_control": {"type": "ephemeral"}},
            tool_result("toolu_01Bash", [{"type": "text", "text": "Exit code 2\nnpm ERR!"}], True),
            {"type": "text", "text": "<system-reminder>Todo list updated.</system-reminder>"},
        ],
    }
    payload = body({"role": "assistant", "content": [EDIT]}, results)
    before = copy.deepcopy(payload)
    out = splice(payload, Plan(appends={(2, 0): "[B0]", (2, 1): "[B1]"}), APPEND)
    content = out["messages"][2]["content"]
    assert content[0]["content"] == EDIT_FAILED + "\n\n[B0]"
    assert content[0]["cache_control"] == {"type": "ephemeral"}
    assert content[1]["content"][-1] == {"type": "text", "text": "[B1]"}
    assert [b["type"] for b in content] == ["tool_result", "tool_result", "text"]
    assert out["messages"][1] is payload["messages"][1] and payload == before


def test_message_placement_closes_the_user_message_with_one_text_block() -> None:
    payload = body(
        {"role": "assistant", "content": [EDIT]},
        {"role": "user", "content": [tool_result("toolu_01Edit", EDIT_FAILED, True)]},
    )
    out = splice(payload, Plan(appends={(2, 0): "[B0]"}), Placement(mode="message"))
    assert out["messages"][2]["content"] == [
        tool_result("toolu_01Edit", EDIT_FAILED, True),
        {"type": "text", "text": "[B0]"},
    ]


def test_summary_is_a_text_block_after_the_cached_system_blocks() -> None:
    payload = body()
    out = splice(payload, Plan(summary="## Recent failures"), APPEND)
    assert out["system"][:3] == claude_code_system()
    assert out["system"][3] == {"type": "text", "text": "## Recent failures"}
    assert sum("cache_control" in b for b in out["system"]) == 2
    as_string = splice(body(system="You are a helpful agent."), Plan(summary="[S]"), APPEND)
    assert as_string["system"] == "You are a helpful agent.\n\n[S]"
    missing = {k: v for k, v in payload.items() if k != "system"}
    assert splice(missing, Plan(summary="[S]"), APPEND)["system"] == "[S]"


def test_claude_code_session_hints() -> None:
    legacy = body()
    assert session_hint({}, legacy) == SESSION
    modern = body()
    modern["metadata"] = {
        "user_id": orjson.dumps(
            {"device_id": "d41d8cd98f00", "account_uuid": "", "session_id": SESSION}
        ).decode()
    }
    assert session_hint({}, modern) == SESSION
    assert session_hint({}, {"metadata": {"user_id": "customer-42"}}) is None
    assert session_hint({}, {"messages": []}) is None


def test_errors_use_anthropics_shape() -> None:
    error = orjson.loads(
        error_body(413, "Request body is over the proxy's limit.", "request_too_large")
    )
    assert error == {
        "type": "error",
        "error": {
            "type": "request_too_large",
            "message": "Request body is over the proxy's limit.",
        },
    }
    assert (
        orjson.loads(error_body(504, "Upstream timed out", "upstream_timeout"))["error"]["type"]
        == "timeout_error"
    )


# ---- over HTTP: the real app, a mock provider on loopback ---------------------------------------------

NOT_FOUND = "File does not exist. Current working directory: /repo"
EXIT_2 = "Exit code 2\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 2\nnpm ERR! retry@1.0.0 test: `vitest run`"
READ = {"file_path": "/repo/src/retry.ts"}


def messages_extend(previous: bytes, current: bytes) -> bool:
    """Request N+1 keeps request N's messages and cached system blocks byte for byte (the
    billing line in system[0] is the client's own, new every request)."""
    before, after = orjson.loads(previous), orjson.loads(current)
    n = len(before["messages"])
    dump = orjson.dumps
    return dump(before["system"][1:]) == dump(after["system"][1 : len(before["system"])]) and [
        dump(m) for m in after["messages"][:n]
    ] == [dump(m) for m in before["messages"]]


async def test_block_inside_the_failed_tool_result_and_the_second_lists_the_first(client) -> None:
    agent = ClaudeAgent(client)
    response = await agent.call("Read", READ, NOT_FOUND, is_error=True)
    assert response.status_code == 200 and response.headers["x-recovery-proxy-injected"] == "1"
    assert agent.urls[-1] == f"{ANTHROPIC_UPSTREAM}/v1/messages?beta=true"
    first = agent.last_result["content"]
    assert first.startswith(NOT_FOUND + "\n\n[Error Recovery Context]\n")
    assert 'Operation: Read("/repo/src/retry.ts")' in first
    await agent.call("Edit", {**READ, "old_string": "3", "new_string": "5"}, NOT_FOUND, True)
    assert '  1. Read("/repo/src/retry.ts") -> not_found' in agent.last_result["content"]
    assert agent.last["messages"][2]["content"][0]["content"] == first


async def test_is_error_false_is_never_annotated_and_forwarded_byte_for_byte(client) -> None:
    agent = ClaudeAgent(client)
    await agent.call("Bash", {"command": "npm test"}, EXIT_2, is_error=False)
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    assert agent.forwarded[-1] == agent.sent[-1]


async def test_the_commands_answer_gets_no_block_and_a_sequence_is_judged_by_its_output(
    client,
) -> None:
    """Claude Code flags `grep -c`'s exit 1 on no match; the Bash call's command says it is
    the answer. `ruff; pytest` exits 0 on passing tests, but the lint failure above counts."""
    agent = ClaudeAgent(client)
    count = {"command": "grep -c ERROR logs/a.log logs/b.log"}
    await agent.call("Bash", count, "Exit code 1\nlogs/a.log:0\nlogs/b.log:0", is_error=True)
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    assert agent.forwarded[-1] == agent.sent[-1]
    lint = "src/a.py:3:1: F401 `os` imported but unused\nFound 1 error.\n...\n3 passed in 0.2s"
    await agent.call("Bash", {"command": "ruff check src; pytest -q"}, lint, is_error=False)
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "1"
    assert "[Error Recovery Context]" in agent.last_result["content"]


async def test_repeats_end_in_stop(client) -> None:
    agent = ClaudeAgent(client)
    for i in range(3):
        await agent.call("Read", READ, NOT_FOUND, is_error=True)
        if i < 2:
            await agent.call("Glob", {"pattern": f"src/**/{i}*.ts"}, "src/retry.test.ts", False)
    assert "STOP: occurrence #3 of the same not_found failure" in agent.last_result["content"]


async def test_escalation_block_is_a_409_in_anthropic_shape(tmp_path) -> None:
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: block ",
        },
    )
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ClaudeAgent(client)
        await agent.call("Bash", {"command": "npm test"}, EXIT_2, is_error=True)
        blocked = await agent.call("Bash", {"command": "npm test -- retry"}, EXIT_2, True)
    assert blocked.status_code == 409 and blocked.headers["x-should-retry"] == "false"
    body = blocked.json()
    assert set(body) == {"type", "error"} and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "2 consecutive tool calls have failed" in body["error"]["message"]
    assert len(agent.forwarded) == 1


async def test_compaction_summary_is_a_system_block_after_the_cached_ones(client) -> None:
    agent = ClaudeAgent(client)
    await agent.call("Read", READ, NOT_FOUND, is_error=True)
    await agent.call("Bash", {"command": "npm test"}, EXIT_2, is_error=True)
    agent.messages = [
        {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran "
            "out of context. The conversation is summarized below:\nThe retry test is flaky.",
        }
    ]
    await agent.send()
    sent, forwarded = orjson.loads(agent.sent[-1]), agent.last
    assert forwarded["system"][:3] == sent["system"]  # cache_control exactly where it was
    summary = forwarded["system"][3]
    assert set(summary) == {"type", "text"} and summary["text"].startswith("## Recent failures")
    assert 'Read("/repo/src/retry.ts")' in summary["text"]
    await agent.call("Glob", {"pattern": "src/*.ts"}, "src/retry.ts", False)
    assert agent.last["system"][3] == summary  # frozen


async def test_every_request_extends_the_previous_one(client) -> None:
    agent = ClaudeAgent(client)
    script: list[tuple[str, dict[str, Any], str, bool]] = [
        ("Read", READ, NOT_FOUND, True),
        ("Glob", {"pattern": "src/**/*.ts"}, "src/retry.ts\nsrc/index.ts", False),
        ("Bash", {"command": "npm test"}, EXIT_2, True),
        ("Read", {"file_path": "/repo/src/index.ts"}, "export * from './retry';", False),
    ]
    for _ in range(3):
        for name, arguments, output, is_error in script:
            assert (await agent.call(name, arguments, output, is_error)).status_code == 200
    for previous, current in zip(agent.forwarded, agent.forwarded[1:], strict=False):
        assert messages_extend(previous, current)


async def test_session_from_metadata_user_id_survives_the_changing_billing_line(client) -> None:
    a = ClaudeAgent(client, task="Task A")
    await a.call("Read", READ, NOT_FOUND, is_error=True)
    b = ClaudeAgent(client, task="A different first message, same Claude Code session")
    await b.call("Read", READ, NOT_FOUND, is_error=True)
    assert '  1. Read("/repo/src/retry.ts")' in b.last_result["content"]


async def test_proxy_errors_use_anthropics_shape(client) -> None:
    response = await client.post(
        "/s/bad%20id/v1/messages", content=b'{"model": "claude-sonnet-4-5", "messages": []}'
    )
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "invalid_request_error"
    async with proxy_client(make_settings(max_body_bytes=512)) as small:
        big = await small.post("/v1/messages", content=b"x" * 1024)
    assert big.status_code == 413 and big.json()["error"]["type"] == "request_too_large"


async def test_other_anthropic_paths_pass_through_to_the_anthropic_upstream(client) -> None:
    raw = (
        b'{"model": "claude-sonnet-4-5-20250929", "messages": [{"role": "user", "content": "hi"}]}'
    )
    with upstream_mock() as mock:
        route = mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages/count_tokens").mock(
            return_value=httpx.Response(200, json={"input_tokens": 9})
        )
        response = await client.post(
            "/v1/messages/count_tokens?beta=true",
            content=raw,
            headers={"x-api-key": "sk-ant-api03-x", "anthropic-version": "2023-06-01"},
        )
    assert response.json() == {"input_tokens": 9}
    request = route.calls.last.request
    assert request.content == raw and request.url.query == b"beta=true"
    assert request.headers["anthropic-version"] == "2023-06-01"
