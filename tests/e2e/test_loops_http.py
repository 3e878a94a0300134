"""Loop detection over HTTP: the real app, a real mock upstream, a scripted chat agent."""

from __future__ import annotations

from pathlib import Path

from tests.agent import ScriptedAgent
from tests.conftest import local_rules, make_settings, proxy_client

CONTINUE = "Please continue working on the task on whatever approach you think is suitable."
SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context."
    " Summary: the invoices export job is being fixed; step {n}."
)


async def test_identical_call_and_result_gets_a_notice_naming_its_rule(client) -> None:
    agent = ScriptedAgent(client)
    for _ in range(3):
        await agent.call("bash", {"command": "git status"}, "On branch main\nnothing to commit")
    assert agent.last_tool_text.endswith("(loop rule: same-call)")


async def test_scrolling_with_new_content_each_time_is_not_a_loop(client) -> None:
    agent = ScriptedAgent(client)
    for page in range(1, 7):
        await agent.call(
            "browser_action", {"action": "scroll_down"}, f"Page {page} of 9\nOrder #{1000 + page}"
        )
        assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"


async def test_repetition_inside_a_window(client) -> None:
    agent = ScriptedAgent(client)
    a = ("read_file", {"path": "src/config.ts"}, "export const port = 8080;")
    x = ("bash", {"command": "npm run lint"}, "src/app.ts\n  3:1  warning  no-console")
    for i, (tool, args, out) in enumerate((a, x, x, a, x)):
        await agent.call(tool, args, out)
        if i < 4:
            assert "Loop notice" not in agent.last_tool_text
    assert (
        'bash("npm run lint") has been called 3 times in the last 5 calls' in agent.last_tool_text
    )
    assert agent.last_tool_text.endswith("(loop rule: same-call-window)")


async def test_interleaved_different_calls_are_not_a_loop(client) -> None:
    agent = ScriptedAgent(client)
    for i in range(6):
        await agent.call("bash", {"command": f"npm run lint -- src/mod{i}.ts"}, "ok")
        await agent.call("read_file", {"path": f"src/mod{i}.ts"}, f"export const m{i} = {i};")
        assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"


async def test_a_human_message_restarts_loop_counting(client) -> None:
    agent = ScriptedAgent(client)
    for _ in range(2):
        await agent.call("bash", {"command": "git status"}, "On branch main")
    agent.say("I pushed a fix to main; check the status again.")
    await agent.call("bash", {"command": "git status"}, "On branch main")
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    await agent.call("bash", {"command": "git status"}, "On branch main")
    await agent.call("bash", {"command": "git status"}, "On branch main")
    assert "3 times in a row" in agent.last_tool_text


async def test_smolagents_tool_output_in_user_text_is_not_a_human_message(client) -> None:
    agent = ScriptedAgent(client)
    for n in range(1, 4):
        search = {"name": "web_search", "arguments": {"query": "acme invoices api"}}
        call = "Calling tools:\n" + repr(
            [{"id": f"call_{n}", "type": "function", "function": search}]
        )
        agent.think(call)
        agent.say(f"Call id: call_{n}\nObservation:\nNo results for 'acme invoices api'.")
        await agent.send()
    user = agent.forwarded[-1]["messages"][-1]["content"]
    assert 'web_search("acme invoices api") has been called 3 times in a row' in user


async def test_the_same_assistant_message_repeated_is_a_loop(tmp_path: Path) -> None:
    # OpenHands headless: the agent repeats itself; the harness answers "continue" each time.
    rules = local_rules(tmp_path, {"action: annotate ": "action: block "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        await agent.call("bash", {"command": "ls"}, "src\ntests")
        for n in range(1, 6):
            agent.think("I will now run the test suite to verify the fix.")
            agent.say(CONTINUE)
            response = await agent.send()
            assert response.status_code == (409 if n == 5 else 200)
        assert "(loop rule repeated-message)" in response.json()["error"]["message"]
        assert (await agent.send()).status_code == 409  # re-sent unchanged
        agent.say("Stop. Summarise what you found.")
        assert (await agent.send()).status_code == 200


async def test_a_repeated_message_notice_travels_with_the_next_tool_result(client) -> None:
    agent = ScriptedAgent(client)
    for _ in range(3):
        agent.think("Checking the configuration next.")
        agent.say(CONTINUE)
        await agent.send()
    assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"
    await agent.call("read_file", {"path": "config/app.yaml"}, "port: 8080")
    assert "same message 3 times without calling a tool" in agent.last_tool_text
    assert "(loop rule: repeated-message)" in agent.last_tool_text


async def test_repeated_messages_with_tool_calls_between_are_not_a_loop(client) -> None:
    agent = ScriptedAgent(client)
    for i in range(4):
        agent.think("Let me look at the next module.")
        await agent.call("read_file", {"path": f"src/mod{i}.ts"}, f"export const m{i} = {i};")
        assert agent.responses[-1].headers["x-recovery-proxy-injected"] == "0"


async def test_compactions_with_no_tool_call_between_are_a_loop(tmp_path: Path) -> None:
    rules = local_rules(tmp_path, {"action: annotate ": "action: block "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        await agent.call("bash", {"command": "make export"}, "wrote 120 invoices")
        statuses = []
        for n in range(1, 4):
            agent.messages = [agent.messages[0], {"role": "user", "content": SUMMARY.format(n=n)}]
            statuses.append((await agent.send()).status_code)
        assert statuses == [200, 200, 409]
        assert "(loop rule compaction-loop)" in agent.responses[-1].json()["error"]["message"]


async def test_compactions_with_tool_progress_between_are_not_a_loop(tmp_path: Path) -> None:
    rules = local_rules(tmp_path, {"action: annotate ": "action: block "})
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = ScriptedAgent(client)
        for n in range(1, 5):
            agent.messages = [agent.messages[0], {"role": "user", "content": SUMMARY.format(n=n)}]
            assert (await agent.send()).status_code == 200
            await agent.call("bash", {"command": f"make export PART={n}"}, f"wrote part {n}")
            assert agent.responses[-1].status_code == 200
        assert "Loop notice" not in agent.last_tool_text
