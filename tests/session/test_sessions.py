"""Sessions that hold for every agent (issue 11), over HTTP: path-scoped sessions on every
format, reused and empty call ids, first sight of a long conversation, repeats across tools,
a summary that keeps every distinct failure."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.agent import ScriptedAgent
from tests.conftest import ANTHROPIC_UPSTREAM, UPSTREAM
from tests.upstream import upstream_mock
from tests.wire.agents import ClaudeAgent, ResponsesAgent

SUMMARY_HEAD = "## Recent failures (from earlier in this session)"
NONE_BEFORE = "Previous attempts"  # the section a first attempt does not have


def enoent(path: str) -> str:
    return f"Error: ENOENT: no such file or directory, open '{path}'"


# ---- path-scoped sessions ---------------------------------------------------------------


async def test_path_sessions_on_chat_separate_two_ids_and_equal_the_header(client) -> None:
    alpha = ScriptedAgent(client, session=None, prefix="/s/alpha-7f3c")
    beta = ScriptedAgent(client, session=None, prefix="/s/beta-91d0")
    await alpha.call("read_file", {"path": "src/config.ts"}, enoent("src/config.ts"))
    await beta.call("read_file", {"path": "src/config.ts"}, enoent("src/config.ts"))
    assert NONE_BEFORE not in beta.last_tool_text  # another id: another session
    # The same id as a header is the same session as the path named.
    header = ScriptedAgent(client, session="alpha-7f3c", task="Another task in alpha")
    await header.call("read_file", {"path": "src/config.ts"}, enoent("src/config.ts"))
    assert '  1. read_file("src/config.ts") -> not_found' in header.last_tool_text


async def test_path_sessions_on_responses(client) -> None:
    one = ResponsesAgent(client, prefix="/s/codex-run-1")
    two = ResponsesAgent(client, prefix="/s/codex-run-2")
    for agent in (one, two):
        await agent.call("shell", {"command": "cargo build"}, "error[E0308]: mismatched types")
    await one.call("shell", {"command": "cargo build"}, "error[E0308]: mismatched types")
    assert "has happened 2 times" in one.last_output
    assert NONE_BEFORE not in orjson.loads(two.forwarded[-1])["input"][-1]["output"]
    assert "has happened" not in orjson.loads(two.forwarded[-1])["input"][-1]["output"]


async def test_path_sessions_on_messages_like_anthropic_base_url(client) -> None:
    one = ClaudeAgent(client, prefix="/s/claude-a")
    two = ClaudeAgent(client, prefix="/s/claude-b")
    for agent in (one, two):
        await agent.call("Read", {"file_path": "/repo/src/retry.ts"}, "File does not exist.", True)
    await one.call("Read", {"file_path": "/repo/src/retry.ts"}, "File does not exist.", True)
    assert "has happened 2 times" in str(one.last_result["content"])
    assert "has happened" not in str(two.last_result["content"])
    assert one.urls[-1] == f"{ANTHROPIC_UPSTREAM}/v1/messages?beta=true"  # prefix removed


async def test_path_prefix_is_removed_for_passthrough(client) -> None:
    with upstream_mock() as mock:
        route = mock.get(f"{UPSTREAM}/models").respond(200, json={"data": []})
        response = await client.get("/s/run-42/v1/models", headers={"Authorization": "Bearer sk-a"})
    assert response.status_code == 200
    assert route.calls.last.request.url.path == "/v1/models"


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/s//v1/chat/completions", "openai"),
        ("/s/a%20b/v1/chat/completions", "openai"),
        ("/s/sessi\u00f3n/v1/chat/completions", "openai"),
        ("/s/" + "x" * 129 + "/v1/responses", "openai"),
        ("/s/bad$id/v1/messages", "anthropic"),
        ("/s/only-an-id", "openai"),
    ],
)
async def test_malformed_session_paths_are_400_in_the_wire_shape(client, path, shape) -> None:
    with upstream_mock(assert_all_called=False) as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={})
        response = await client.post(path, json={"model": "m", "messages": []})
    assert response.status_code == 400
    assert not route.called
    body = response.json()
    if shape == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    else:
        assert body["error"]["code"] == "invalid_session_path"


# ---- result identity: reused and empty ids ----------------------------------------------


def exchange(call_id: str, tool: str, arguments: dict[str, Any], result: str) -> list[Any]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": orjson.dumps(arguments).decode()},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def tool_texts(agent: ScriptedAgent) -> list[str]:
    return [m["content"] for m in agent.forwarded[-1]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("call_id", ["call_0", ""])
async def test_reused_and_empty_ids_each_get_their_own_block(client, call_id) -> None:
    """llama.cpp / Ollama send `call_0` every turn; some parsers send `""`."""
    agent = ScriptedAgent(client, session=f"local-model-{call_id or 'empty'}")
    files = ["src/app.py", "src/db.py", "src/app.py"]
    for path in files:
        agent.messages += exchange(call_id, "read_file", {"path": path}, enoent(path))
        await agent.send()
    texts = tool_texts(agent)
    assert len(texts) == 3
    for path, text in zip(files, texts, strict=True):
        assert f'Operation: read_file("{path}")' in text
    assert NONE_BEFORE not in texts[1]  # db.py: its own target, no earlier attempt
    assert '  1. read_file("src/app.py") -> not_found' in texts[2]
    before = agent.forwarded[-2]["messages"]
    assert agent.forwarded[-1]["messages"][: len(before)] == before  # blocks re-applied as is


async def test_parallel_calls_sharing_an_empty_id_name_their_own_targets(client) -> None:
    agent = ScriptedAgent(client, session="parallel-empty-ids")
    calls = [
        {"id": "", "type": "function", "function": {"name": "read_file", "arguments": a}}
        for a in ('{"path": "a.ts"}', '{"path": "b.ts"}')
    ]
    agent.messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    agent.messages.append({"role": "tool", "tool_call_id": "", "content": enoent("a.ts")})
    agent.messages.append({"role": "tool", "tool_call_id": "", "content": enoent("b.ts")})
    await agent.send()
    first, second = tool_texts(agent)
    assert 'Operation: read_file("a.ts")' in first
    assert 'Operation: read_file("b.ts")' in second


# ---- first sight of a long conversation -------------------------------------------------


def forty_turns() -> list[dict[str, Any]]:
    """40 tool turns with 8 failures spread through them, the newest one a failure."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /repo."},
        {"role": "user", "content": "Migrate the settings loader to pydantic v2."},
    ]
    for turn in range(39):
        if turn % 5 == 2:
            path = f"src/settings_{turn}.py"
            messages += exchange(f"call_h{turn:03d}", "read_file", {"path": path}, enoent(path))
        else:
            path = f"src/module_{turn}.py"
            body = f"def load_{turn}():\n    return {turn}\n"
            messages += exchange(f"call_h{turn:03d}", "read_file", {"path": path}, body)
    messages += exchange(
        "call_h039",
        "edit_file",
        {"path": "src/settings_2.py", "old_string": "BaseSettings"},
        enoent("src/settings_2.py"),
    )
    return messages


async def test_first_sight_of_a_forty_turn_conversation_keeps_history_identical(client) -> None:
    agent = ScriptedAgent(client, session="mid-session-start")
    agent.messages = forty_turns()
    response = await agent.send()
    assert response.headers["x-recovery-proxy-injected"] == "1"
    sent = agent.forwarded[-1]["messages"]
    assert sent[:-1] == agent.messages[:-1]  # history byte-identical (no old result rewritten)
    newest = sent[-1]["content"]
    assert 'Operation: edit_file("src/settings_2.py")' in newest
    # The history's failures were recorded: the same target's earlier attempt is listed.
    assert '  1. read_file("src/settings_2.py") -> not_found' in newest
    agent.messages += exchange(
        "call_h040", "read_file", {"path": "src/settings_7.py"}, enoent("src/settings_7.py")
    )
    await agent.send()
    later = agent.forwarded[-1]["messages"]
    assert later[: len(sent)] == sent  # the rewritten request N+1 extends request N
    assert '  1. read_file("src/settings_7.py") -> not_found' in later[-1]["content"]


# ---- repeats across tools; summary keeps every distinct failure -------------------------


async def test_same_failure_on_one_target_counts_across_tools_and_stops_on_the_third(
    client,
) -> None:
    agent = ScriptedAgent(client, session="cross-tool")
    missing = "src/routes/users.ts"
    await agent.call("edit_file", {"path": missing, "old_string": "get("}, enoent(missing))
    await agent.call("read_file", {"path": missing}, enoent(missing))
    assert f'this not_found failure on "{missing}" has happened 2 times' in agent.last_tool_text
    await agent.call("edit_file", {"path": missing, "old_string": "router.get("}, enoent(missing))
    assert f'STOP: occurrence #3 of the same not_found failure on "{missing}"' in (
        agent.last_tool_text
    )


EDITS = ("src/api/users.py", "src/api/orders.py", "src/api/billing.py")
MISMATCH = "String to replace not found in file."


async def test_three_edit_failures_on_three_files_all_appear_in_the_summary(client) -> None:
    agent = ScriptedAgent(client, session="three-edits")
    for path in EDITS:
        await agent.call("edit_file", {"path": path, "old_string": "def handler("}, MISMATCH)
        await agent.call("read_file", {"path": path}, "def handle(request):\n    ...\n")
    agent.messages = [
        agent.messages[0],
        {
            "role": "user",
            "content": "This session is being continued from a previous conversation that "
            "ran out of context. Summary: the handlers were renamed.",
        },
    ]
    await agent.send()
    system = agent.system_text
    for path in EDITS:
        assert f'- [edit_mismatch] edit_file("{path}") failed (turn' in system
    assert system.count(f': "{MISMATCH}"') == len(EDITS)


async def test_requests_without_json_messages_are_untouched_by_session_lookup(client) -> None:
    """A body the format cannot parse never reaches the session code (fail-open stays)."""
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=httpx.Response(200, json={"choices": []})
        )
        raw = b'{"model": "gpt-4o-mini", "prompt": "hello"}'
        response = await client.post(
            "/s/plain/v1/chat/completions",
            content=raw,
            headers={"Authorization": "Bearer sk-a"},
        )
    assert response.status_code == 200
    assert route.calls.last.request.content == raw


async def test_a_result_first_seen_in_history_is_recorded_not_annotated(client) -> None:
    """Also mid-session (not only on a first request): a result the proxy never saw that sits
    before the newest turn stays as sent; it still counts as an earlier attempt."""
    agent = ScriptedAgent(client, session="late-result")
    await agent.call("list_dir", {"path": "src"}, "app.py\ndb.py")
    agent.add_call("read_file", {"path": "src/cache.py"}, enoent("src/cache.py"))
    agent.add_call("read_file", {"path": "src/cache.py"}, enoent("src/cache.py"))
    await agent.send()
    older, newest = tool_texts(agent)[-2:]
    assert older == enoent("src/cache.py")
    assert '  1. read_file("src/cache.py") -> not_found' in newest


async def test_an_assistant_prefill_after_the_results_keeps_them_the_newest_batch(client) -> None:
    agent = ScriptedAgent(client, session="prefill")
    agent.add_call("read_file", {"path": "src/cache.py"}, enoent("src/cache.py"))
    agent.messages.append({"role": "assistant", "content": "The file is missing, so"})
    await agent.send()
    assert "[Error Recovery Context]" in tool_texts(agent)[-1]


async def test_path_sessions_on_gemini_generate_content(client) -> None:
    """`GOOGLE_GEMINI_BASE_URL=http://HOST/s/ID`: the model path is routed after the prefix."""
    path = "/v1beta/models/gemini-2.5-pro:generateContent"
    missing = "File not found: /home/dev/invoice/src/totals.py"

    def turn(n: int) -> list[dict[str, Any]]:
        call = {"name": "read_file", "args": {"file_path": "/home/dev/invoice/src/totals.py"}}
        answer = {"name": "read_file", "response": {"error": missing}}
        return [
            {"role": "model", "parts": [{"functionCall": {**call, "id": f"read_file-{n}"}}]},
            {"role": "user", "parts": [{"functionResponse": {**answer, "id": f"read_file-{n}"}}]},
        ]

    async def send(session: str, turns: int) -> dict[str, Any]:
        contents: list[dict[str, Any]] = [
            {"role": "user", "parts": [{"text": "Fix the rounding bug in invoice totals."}]}
        ]
        for n in range(turns):
            contents += turn(n)
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM.removesuffix('/v1')}{path}").respond(200, json={})
            response = await client.post(
                f"/s/{session}{path}",
                json={"contents": contents},
                headers={"x-goog-api-key": "AIza-gemini-tenant"},
            )
        assert response.status_code == 200
        assert route.calls.last.request.url.path == path  # prefix removed
        return orjson.loads(route.calls.last.request.content)

    await send("gemini-a", 1)
    await send("gemini-b", 1)
    second_a = await send("gemini-a", 2)
    text = orjson.dumps(second_a["contents"][-1]).decode()
    assert "has happened 2 times" in text
    second_b = orjson.dumps((await send("gemini-b", 2))["contents"][-1]).decode()
    assert "has happened 2 times" in second_b and "STOP" not in second_b  # its own count
