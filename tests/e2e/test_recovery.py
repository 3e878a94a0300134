"""Recovery blocks, repeats, escalation, loops, systemic notices, budget: over HTTP."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from tests.agent import ScriptedAgent
from tests.conftest import UPSTREAM, local_rules, make_settings, proxy_client
from tests.upstream import upstream_mock

ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
REFUSED = "connect ECONNREFUSED 127.0.0.1:5432"


async def test_block_after_a_failure_and_previous_attempts_after_a_repeat(client) -> None:
    agent = ScriptedAgent(client)
    response = await agent.call(
        "edit_file", {"path": "src/config.ts", "old": "3000", "new": "8080"}, ENOENT
    )
    assert response.headers["x-recovery-proxy-injected"] == "1"
    first = agent.last_tool_text
    assert first.startswith(ENOENT + "\n\n[Error Recovery Context]\n")
    assert 'Operation: edit_file("src/config.ts")' in first
    assert f"Error: {ENOENT.removeprefix('Error: ')}" in first
    assert "Error: Error:" not in first
    assert "Previous attempts" not in first
    assert "Recovery suggestions:\n  - Verify the path or name exists" in first

    response = await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    # One new block, the first one re-applied; the session key names the tenant and session.
    assert response.headers["x-recovery-proxy-injected"] == "1"
    assert response.headers["x-recovery-proxy-reapplied"] == "1"
    assert int(response.headers["x-recovery-proxy-tokens"]) > 0  # both blocks' tokens
    tenant, _, session = response.headers["x-recovery-proxy-session"].partition(":")
    assert len(tenant) == 16 and session
    repeat = await agent.send()  # the same request again: nothing new, both re-applied
    assert repeat.headers["x-recovery-proxy-injected"] == "0"
    assert repeat.headers["x-recovery-proxy-reapplied"] == "2"
    second = agent.last_tool_text
    assert '  1. edit_file("src/config.ts") -> not_found: the same error' in second
    # Same category on the same target counts as a repeat whatever the tool (issue 11).
    assert 'this not_found failure on "src/config.ts" has happened 2 times' in second
    # The first block is re-applied byte for byte.
    assert agent.forwarded[1]["messages"][3]["content"] == first


async def test_a_call_without_a_target_is_named_by_its_arguments_with_a_hint_for_its_error(
    client,
) -> None:
    """A Chat tool call whose arguments have no target key (`service`, `level`): the block
    names what was tried, and the rejected-value error gets the allowed-values hint."""
    agent = ScriptedAgent(client)
    error = (
        "Error: 422 Unprocessable Entity: level: Input should be 'debug', 'info', 'warning' "
        "or 'error'"
    )
    await agent.call("set_log_level", {"service": "api", "level": "verbose"}, error)
    text = agent.last_tool_text
    assert text.startswith(
        error + '\n\n[Error Recovery Context]\nOperation: set_log_level(service="api", '
        'level="verbose")\n\nRecovery suggestions:\n  - Use exactly one of the values the error '
        "lists, spelled as listed\n"
    )
    assert "Do not retry the rejected value" in text
    await agent.call("set_log_level", {"service": "api", "level": "trace"}, error)
    assert '1. set_log_level(service="api", level="verbose") -> invalid_params' in (
        agent.last_tool_text
    )


async def test_repeats_warn_then_stop(client) -> None:
    agent = ScriptedAgent(client)
    await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    await agent.call("list_dir", {"path": "src"}, "index.ts\nserver.ts")
    await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert 'this not_found failure on "src/config.ts" has happened 2 times' in agent.last_tool_text
    await agent.call("list_dir", {"path": "lib"}, "util.ts")
    await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    text = agent.last_tool_text
    assert 'STOP: occurrence #3 of the same not_found failure on "src/config.ts"' in text
    assert text.count('read_file("src/config.ts") -> not_found') == 2


async def test_successful_turns_get_nothing(client) -> None:
    agent = ScriptedAgent(client)
    raw_before = orjson.dumps({"model": agent.model, "messages": agent.messages})
    await agent.call("read_file", {"path": "README.md"}, "# Project\nErrors are logged to stderr.")
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    assert agent.forwarded[-1]["messages"] == agent.messages
    assert raw_before  # (byte identity is covered in test_forward)


async def test_a_result_ending_with_exactly_its_block_is_not_annotated_twice(client) -> None:
    first = ScriptedAgent(client, session="echo-1")
    await first.call("read_file", {"path": "a.ts"}, ENOENT)
    annotated = first.last_tool_text  # what the model saw: the output and its block
    echo = ScriptedAgent(client, session="echo-2")
    await echo.call("read_file", {"path": "a.ts"}, annotated)
    assert echo.last_tool_text == annotated


async def test_tool_output_quoting_the_proxys_marker_still_gets_its_block(client) -> None:
    """A build log or web page that contains `[Error Recovery Context]` cannot switch the
    proxy off: only its own block, byte for byte at the end, counts as already there."""
    agent = ScriptedAgent(client)
    quoted = ENOENT + "\n(see docs: the proxy adds a [Error Recovery Context] block)"
    await agent.call("read_file", {"path": "a.ts"}, quoted)
    assert agent.last_tool_text.startswith(quoted + "\n\n[Error Recovery Context]\n")


async def test_consecutive_failures_escalate_with_annotate(client) -> None:
    agent = ScriptedAgent(client)
    failures = [
        ("read_file", {"path": "a.py"}, "Error: ENOENT: no such file or directory, open 'a.py'"),
        ("bash", {"command": "make"}, "make: *** [Makefile:3: all] Error 2"),
        ("bash", {"command": "npm test"}, "npm error code ELIFECYCLE"),
        (
            "fetch",
            {"url": "https://api.example.dev/x"},
            "404 Client Error: Not Found for url: https://api.example.dev/x",
        ),
        ("edit_file", {"path": "b.py"}, "String to replace not found in file."),
    ]
    for tool, args, result in failures:
        await agent.call(tool, args, result)
    assert "ESCALATION: 5 consecutive tool calls have failed" in agent.last_tool_text
    assert "ESCALATION" not in agent.forwarded[-2]["messages"][-1]["content"]


async def test_escalation_block_answers_409_and_stays_blocked(tmp_path) -> None:
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: block ",
        },
    )
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        ok = await agent.call("bash", {"command": "make"}, "make: *** [all] Error 2")
        assert ok.status_code == 200
        blocked = await agent.call("bash", {"command": "make -j1"}, "make: *** [all] Error 2")
        assert blocked.status_code == 409
        error = blocked.json()["error"]
        assert (
            error["type"] == "recovery_escalation"
            and "2 consecutive tool calls have failed" in error["message"]
        )
        assert blocked.headers["x-should-retry"] == "false"
        assert blocked.headers["x-recovery-proxy-session"] == ok.headers["x-recovery-proxy-session"]
        assert len(agent.forwarded) == 1  # not forwarded
        again = await agent.send()  # the SDK or agent retries the same request
        assert again.status_code == 409
        agent.messages.append({"role": "user", "content": "Try building only the docs."})
        assert (await agent.send()).status_code == 200


async def test_escalation_webhook_posts_an_event_in_the_background(tmp_path) -> None:
    hook = "https://hooks.example.test/recovery-events"  # httpx: respx answers it, no socket
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: webhook ",
            "  # webhook_url: http://127.0.0.1:9000/recovery-events": f"  webhook_url: {hook}",
        },
    )
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        with upstream_mock() as mock, respx.mock() as hooks:
            events = hooks.post(hook).respond(204)
            upstream = mock.post(f"{UPSTREAM}/chat/completions").mock(
                return_value=httpx.Response(200, json={"choices": []})
            )
            for command in ("make", "make all"):
                agent.add_call("bash", {"command": command}, "make: *** [all] Error 2")
                response = await client.post(
                    "/v1/chat/completions",
                    content=orjson.dumps({"model": "gpt-4o-mini", "messages": agent.messages}),
                    headers=agent.headers,
                )
                assert response.status_code == 200
            pipeline = client.app.rewriter  # type: ignore[attr-defined]
            for task in list(pipeline.webhooks.background):
                await task
        assert upstream.call_count == 2
        assert events.call_count == 1
        event = orjson.loads(events.calls.last.request.content)
        assert event["event"] == "recovery_escalation" and event["tool"] == "bash"
        assert "2 consecutive tool calls have failed" in event["reason"]


async def test_same_call_in_a_row_gets_a_loop_notice_even_when_it_succeeds(client) -> None:
    agent = ScriptedAgent(client)
    for _ in range(2):
        await agent.call("bash", {"command": "git status"}, "On branch main\nnothing to commit")
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    await agent.call("bash", {"command": "git status"}, "On branch main\nnothing to commit")
    text = agent.last_tool_text
    assert text.startswith("On branch main\nnothing to commit\n\n[Recovery Notice]\n")
    assert 'bash("git status") has been called 3 times in a row' in text
    await agent.call("bash", {"command": "git status"}, "On branch main\nnothing to commit")
    await agent.call("bash", {"command": "git status"}, "On branch main\nnothing to commit")
    assert 'ESCALATION: bash("git status") has been called 5 times in a row' in agent.last_tool_text


async def test_cycles_are_detected(client) -> None:
    agent = ScriptedAgent(client)
    for i in range(3):
        await agent.call("read_file", {"path": "a.py"}, "print('a')")
        await agent.call("read_file", {"path": "b.py"}, "print('b')")
        if i < 2:
            assert "Loop notice" not in agent.last_tool_text
    assert (
        'Loop notice: the last 6 calls repeat the cycle read_file("a.py") -> read_file("b.py") 3 times'
        in agent.last_tool_text
    )


async def test_systemic_failures_become_one_compact_notice(client) -> None:
    agent = ScriptedAgent(client)
    await agent.call("query_db", {"query": "select 1"}, REFUSED)
    assert "Recovery suggestions" in agent.last_tool_text
    await agent.call("migrate", {"command": "alembic upgrade head"}, REFUSED)
    await agent.call("seed", {"command": "python seed.py"}, REFUSED)
    text = agent.last_tool_text
    assert (
        "Environment problem, not your arguments: connection_error failures across 3 different operations (migrate, query_db, seed)"
        in text
    )
    assert "Recovery suggestions" not in text and "Previous attempts" not in text


async def test_sessions_are_scoped_by_credential(client) -> None:
    a = ScriptedAgent(client, session="shared-id", api_key="sk-tenant-a")
    b = ScriptedAgent(client, session="shared-id", api_key="sk-tenant-b")
    await a.call("read_file", {"path": "src/config.ts"}, ENOENT)
    await b.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert "Previous attempts" not in b.last_tool_text
    await a.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert '  1. read_file("src/config.ts")' in a.last_tool_text


async def test_session_from_body_field_and_fingerprint(client) -> None:
    fp1 = ScriptedAgent(client, session=None, task="Task one")
    await fp1.call(
        "read_file", {"path": "x.py"}, "Error: ENOENT: no such file or directory, open 'x.py'"
    )
    fp2 = ScriptedAgent(client, session=None, task="Task one")  # same system + first message
    await fp2.call(
        "read_file", {"path": "x.py"}, "Error: ENOENT: no such file or directory, open 'x.py'"
    )
    assert '  1. read_file("x.py")' in fp2.last_tool_text
    other = ScriptedAgent(client, session=None, task="Task two")
    await other.call(
        "read_file", {"path": "x.py"}, "Error: ENOENT: no such file or directory, open 'x.py'"
    )
    assert "Previous attempts" not in other.last_tool_text


async def test_message_placement_inserts_one_message_after_the_batch(tmp_path) -> None:
    rules = local_rules(tmp_path, {"  mode: append ": "  mode: message "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        agent.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_p1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.ts"}'},
                    },
                    {
                        "id": "call_p2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "b.ts"}'},
                    },
                ],
            }
        )
        agent.messages.append(
            {
                "role": "tool",
                "tool_call_id": "call_p1",
                "content": "Error: ENOENT: no such file or directory, open 'a.ts'",
            }
        )
        agent.messages.append(
            {"role": "tool", "tool_call_id": "call_p2", "content": "export const b = 1;"}
        )
        await agent.send()
    sent = agent.forwarded[-1]["messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "tool", "user"]
    assert sent[-3]["content"] == "Error: ENOENT: no such file or directory, open 'a.ts'"
    assert sent[-1]["content"].startswith('[Error Recovery Context]\nOperation: read_file("a.ts")')


async def test_request_budget_caps_new_tokens(tmp_path) -> None:
    rules = local_rules(tmp_path, {"request_tokens: 1000 ": "request_tokens: 150 "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        for name in ("a", "b", "c"):
            agent.add_call(
                "read_file",
                {"path": f"{name}.ts"},
                f"Error: ENOENT: no such file or directory, open '{name}.ts'",
            )
        await agent.send()
    tools = [m["content"] for m in agent.forwarded[-1]["messages"] if m["role"] == "tool"]
    annotated = [t for t in tools if "[Error Recovery Context]" in t]
    assert len(annotated) == 1  # one block fits in 150 tokens, the others wait


async def test_near_the_context_window_only_escalations_are_added(tmp_path) -> None:
    rules = local_rules(tmp_path, {"consecutive_failures: 5 ": "consecutive_failures: 2 "})
    async with proxy_client(make_settings(rules=rules, context_window=10_000)) as client:
        agent = ScriptedAgent(client, task="Summarise the logs. " + "log line " * 4400)
        await agent.call(
            "read_file", {"path": "a.ts"}, "Error: ENOENT: no such file or directory, open 'a.ts'"
        )
        assert "[Error Recovery Context]" not in agent.last_tool_text
        await agent.call(
            "read_file", {"path": "b.ts"}, "Error: ENOENT: no such file or directory, open 'b.ts'"
        )
        text = agent.last_tool_text
        assert "[Error Recovery Context]" not in text
        assert "ESCALATION: 2 consecutive tool calls have failed" in text


async def test_block_token_cap_trims_older_attempts_and_hints(tmp_path) -> None:
    rules = local_rules(tmp_path, {"block_tokens: 200 ": "block_tokens: 120 "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        for _ in range(6):
            await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
            await agent.call("list_dir", {"path": "src"}, "a.ts")
    from recovery_proxy import tokens

    failed = [m["content"] for m in agent.forwarded[-1]["messages"] if m["role"] == "tool"][-2]
    block = failed.split("\n\n", 1)[1]
    notices = [
        p for p in block.split("\n\n") if p.startswith(("STOP", "Note", "Loop", "ESCALATION"))
    ]
    body = block
    for notice in notices:
        body = body.replace("\n\n" + notice, "")
    assert tokens.count(body, "gpt-4o-mini") <= 120
    assert "Recovery suggestions" in block


async def test_results_are_classified_once(client, monkeypatch) -> None:
    import recovery_proxy.core.tracker

    calls: list[str] = []
    real = recovery_proxy.core.tracker.classify

    def counting(rules, tool, text, is_error=None, command=""):
        calls.append(text)
        return real(rules, tool, text, is_error, command)

    monkeypatch.setattr(recovery_proxy.core.tracker, "classify", counting)
    agent = ScriptedAgent(client)
    for i in range(5):
        await agent.call("read_file", {"path": f"f{i}.py"}, f"content {i}")
    assert len(calls) == 5


@pytest.mark.parametrize("turns", [40])
async def test_forty_turn_session_is_prompt_cache_safe(client, turns) -> None:
    """Every forwarded request extends the previous forwarded request, except the new tail."""
    agent = ScriptedAgent(client)
    script = [
        ("read_file", {"path": "src/config.ts"}, ENOENT),
        ("read_file", {"path": "src/config.ts"}, ENOENT),
        ("list_dir", {"path": "src"}, "index.ts\nsettings.ts"),
        ("read_file", {"path": "src/settings.ts"}, "export const port = 3000;"),
        (
            "edit_file",
            {"path": "src/settings.ts", "old_string": "port = 300"},
            "String to replace not found in file.",
        ),
        (
            "bash",
            {"command": "npm test"},
            "FAILED tests/app.test.ts - expected 8080, got 3000\n1 failed, 4 passed",
        ),
        ("bash", {"command": "git status"}, "On branch main"),
        ("bash", {"command": "git status"}, "On branch main"),
        ("bash", {"command": "git status"}, "On branch main"),
        ("query_db", {"query": "select 1"}, REFUSED),
    ]
    for turn in range(turns):
        tool, args, result = script[turn % len(script)]
        response = await agent.call(tool, args, result)
        assert response.status_code == 200
    assert len(agent.forwarded) == turns
    last = agent.responses[-1].headers
    # Each turn adds at most one new text; every earlier one is re-applied byte for byte.
    assert int(last["x-recovery-proxy-injected"]) <= 1
    assert int(last["x-recovery-proxy-reapplied"]) > 10
    for previous, current in zip(agent.forwarded, agent.forwarded[1:], strict=False):
        before = previous["messages"]
        assert current["messages"][: len(before)] == before


async def test_tracker_bug_fails_open_without_counting_a_store_outage(client, monkeypatch) -> None:
    import recovery_proxy.core.tracker

    def broken(*args, **kwargs):
        raise KeyError("classifier bug")

    monkeypatch.setattr(recovery_proxy.core.tracker, "classify", broken)
    agent = ScriptedAgent(client)
    response = await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert response.status_code == 200
    assert agent.forwarded[-1]["messages"] == agent.messages  # the original, unchanged
    metrics = (await client.get("/metrics")).text
    assert "recovery_proxy_rewrite_failures_total 1.0" in metrics
    assert "recovery_proxy_store_outages_total 0.0" in metrics


async def test_escalations_are_counted_by_action(client) -> None:
    agent = ScriptedAgent(client)
    for i in range(5):
        await agent.call("bash", {"command": f"make step{i}"}, "make: *** [all] Error 2")
    metrics = (await client.get("/metrics")).text
    assert 'recovery_proxy_escalations_total{action="annotate"} 1.0' in metrics
