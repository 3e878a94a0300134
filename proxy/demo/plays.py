"""The demo's plays, one per wire format: each drives the scripted agent through the proxy
over HTTP and reports to a `Show` what the agent sent and what the model received. Chat
Completions is the full walkthrough (repeats, an escalation, compaction, a model acting on the
failure summary); in OpenAI Responses, Anthropic Messages and Gemini generateContent the model
follows the first block's hint and changes course.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from recovery_proxy.demo.mock_model import Entry, Turn
from recovery_proxy.demo.scenario import (
    CLAUDE_READ,
    COMPACT_AFTER,
    COMPACTED,
    GEMINI_MODEL,
    GEMINI_READ,
    GEMINI_SCRIPT,
    MESSAGES_SCRIPT,
    RESPONSES_SCRIPT,
    SCRIPT,
    SYSTEM,
    TASK,
    run_shell,
    run_tool,
)
from recovery_proxy.demo.show import Play, Show, rule

FORMATS = ("chat", "responses", "messages", "gemini")


def show_difference(
    show: Show,
    sent: list[dict[str, Any]],
    received: list[dict[str, Any]],
    new_from: int,
    shown: set[str],
) -> None:
    """Show what the proxy changed in the system prompt and in this turn's new messages
    (earlier blocks are re-applied byte for byte and not shown again; nor is a system prompt
    already in `shown`)."""
    changed = False
    for index, (before, after) in enumerate(zip(sent, received, strict=False)):
        if before != after and (index >= new_from or after["role"] == "system"):
            changed = True
            content = str(after.get("content"))
            if after["role"] == "system" and content in shown:
                show.say("  [system] the summary re-applied byte for byte (as above)")
                continue
            if after["role"] == "system":
                shown.add(content)
            show.received(after["role"], content)
    for extra in received[len(sent) :]:
        changed = True
        show.say(f"  [{extra['role']}] added by the proxy:")
        show.say("    " + str(extra.get("content")).replace("\n", "\n    "))
    if not changed:
        show.say("  (forwarded unchanged)")


def play_chat(proxy_url: str, model: Any, show: Show) -> None:
    """The Chat Completions walkthrough: repeats, an escalation, compaction."""
    play = show.play("chat", "Chat Completions: POST /v1/chat/completions")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    headers = {"Authorization": "Bearer sk-demo", "X-Session-Id": "demo-session"}
    new_from = 0
    shown: set[str] = set()
    with httpx.Client(base_url=proxy_url, headers=headers, timeout=30) as client:
        for turn, entry in enumerate(SCRIPT, 1):
            body = {"model": "gpt-4o-mini", "messages": messages}
            response = client.post("/v1/chat/completions", json=body)
            show.say(rule(f"request {turn}"))
            last = messages[-1]
            show.say(
                f"  agent sent {len(messages)} messages; last: [{last['role']}] "
                + str(last.get("content"))[:100].replace("\n", " | ")
            )
            received = model.state.received[-1]
            show.request(play, response, body, received)
            if response.status_code != 200:
                show.say("  " + response.text)
                return
            show_difference(show, messages, received["messages"], new_from, shown)
            reply = response.json()["choices"][0]["message"]
            if reply.get("content") and reply.get("tool_calls"):
                show.model(play, f"says: {reply['content']}")
            plain = entry({"messages": messages}) if callable(entry) else reply
            messages.append(reply)
            new_from = len(messages)
            for tool_call in reply.get("tool_calls") or []:
                fn = tool_call["function"]
                show.model(play, f"calls {fn['name']}({fn['arguments']})")
                result = run_tool(fn["name"], json.loads(fn["arguments"]))
                play.failures += result.startswith("Error:")
                messages.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": result}
                )
                if tool_call["id"] == COMPACT_AFTER:
                    show.say(rule("the agent compacts its history"))
                    messages = [messages[0], {"role": "user", "content": COMPACTED}]
                    new_from = 0
            if plain != reply:
                play.turned_at = len(play.requests)
                play.without = without(show, plain, run_tool)
            if not reply.get("tool_calls"):
                show.model(play, f"answers: {reply['content']}")


def without(show: Show, plain: Turn, run: Any) -> str:
    """Show, on one line, the turn the same scripted model picks from the request as the agent
    sent it, without the proxy's text (no second session: the script is a function of the
    request, so this is exactly what it would answer); return it for the summary."""
    said = []
    for tool_call in plain.get("tool_calls") or []:
        fn = tool_call["function"]
        arguments = json.loads(fn["arguments"])
        output = (
            run_shell(arguments["command"]) if fn["name"] == "shell" else run(fn["name"], arguments)
        )
        result = output.splitlines()[-1] if fn["name"] == "shell" else output.splitlines()[0]
        said.append(f"it calls {fn['name']}({fn['arguments']}) -> {result}")
    line = "; ".join(said) or "it answers without a tool call"
    show.say(f"  without the proxy, the same script: {line}")
    return line


def answered(show: Show, response: httpx.Response) -> bool:
    """True for a 200; otherwise show what the proxy answered."""
    if response.status_code != 200:
        show.say(f"  proxy: status {response.status_code}: {response.text}")
    return response.status_code == 200


def turned(
    play: Play, script: Sequence[Entry], index: int, sent: dict[str, Any], show: Show, run: Any
) -> None:
    """After the request that carried the first block: what the same script does without the
    block (`run` gives the tool output the agent would send)."""
    entry = script[index]
    if callable(entry) and not play.without:
        play.turned_at = len(play.requests)
        play.without = without(show, entry(sent), run)


def claude_tool(name: str, arguments: dict[str, Any]) -> str:
    """Claude Code's tools: its own text for a missing file."""
    output = run_tool(name, arguments)
    return CLAUDE_READ if output.startswith("Error:") else output


def gemini_tool(name: str, arguments: dict[str, Any]) -> str:
    """Gemini CLI's tools: its own text for a missing file."""
    output = run_tool(name, arguments)
    return GEMINI_READ if output.startswith("Error:") else output


def play_responses(client: httpx.Client, model: Any, show: Show) -> None:
    """OpenAI Responses: the whole transcript each turn (`store: false`), as Codex sends it."""
    play = show.play("responses", "OpenAI Responses: POST /v1/responses (Codex-style exec output)")
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for index in range(len(RESPONSES_SCRIPT)):
        body = {"model": "gpt-5-codex", "instructions": SYSTEM, "input": items, "store": False}
        response = client.post("/v1/responses", json=body, headers={"X-Session-Id": "demo-codex"})
        if not answered(show, response):
            return
        received = model.state.received[-1]
        show.request(play, response, body, received)
        last = received["input"][-1]
        if last.get("type") == "function_call_output" and "[Error Recovery" in last["output"]:
            show.received("function_call_output", last["output"])
            turned(play, RESPONSES_SCRIPT, index, body, show, run_tool)
        output = response.json()["output"]
        items += output
        for item in output:
            if item["type"] == "message":
                show.model(play, f"answers: {item['content'][0]['text']}")
                continue
            show.model(play, f"calls {item['name']}({item['arguments']})")
            result = run_shell(json.loads(item["arguments"])["command"])
            play.failures += result.startswith("Exit code: 1")
            items.append(
                {"type": "function_call_output", "call_id": item["call_id"], "output": result}
            )


def play_messages(client: httpx.Client, model: Any, show: Show) -> None:
    """Anthropic Messages: `is_error` tool results, a system block with `cache_control`."""
    play = show.play(
        "messages", "Anthropic Messages: POST /v1/messages (Claude Code-style is_error results)"
    )
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    headers = {"X-Session-Id": "demo-claude", "anthropic-version": "2023-06-01"}
    for index in range(len(MESSAGES_SCRIPT)):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system}
        body["messages"] = messages
        response = client.post("/v1/messages", json=body, headers=headers)
        if not answered(show, response):
            return
        sent = model.state.received[-1]
        show.request(play, response, body, sent)
        last = sent["messages"][-1]["content"]
        if isinstance(last, list) and last[0].get("is_error"):
            show.received("tool_result is_error=true", last[0]["content"])
            kept = "kept" if sent["system"] == system else "CHANGED"
            show.say(f"  system block with cache_control: {kept}")
            turned(play, MESSAGES_SCRIPT, index, body, show, claude_tool)
        content = response.json()["content"]
        messages = [*messages, {"role": "assistant", "content": content}]
        results = []
        for block in content:
            if block["type"] == "text":
                show.model(play, f"answers: {block['text']}")
                continue
            show.model(play, f"calls {block['name']}({json.dumps(block['input'])})")
            output = claude_tool(block["name"], block["input"])
            failed = output == CLAUDE_READ
            play.failures += failed
            result = {"tool_use_id": block["id"], "content": output}
            results.append({"type": "tool_result", **result, "is_error": failed})
        if results:
            messages.append({"role": "user", "content": results})


def sse_data(text: str) -> list[dict[str, Any]]:
    """The JSON of each `data:` event of a Gemini `alt=sse` stream."""
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def play_gemini(proxy_url: str, model: Any, show: Show) -> None:
    """Gemini generateContent: `functionResponse {id, name, response: {"error": ...}}` parts,
    streamed with `alt=sse`, authenticated with `x-goog-api-key`, as Gemini CLI sends them."""
    path = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"
    play = show.play(
        "gemini", "Gemini: POST /v1beta/models/{model}:streamGenerateContent (Gemini CLI-style)"
    )
    system = {"role": "user", "parts": [{"text": SYSTEM}]}
    tools = [{"functionDeclarations": [{"name": "read_file"}, {"name": "list_directory"}]}]
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    headers = {"x-goog-api-key": "demo-key", "X-Session-Id": "demo-gemini"}
    with httpx.Client(base_url=proxy_url, headers=headers, timeout=30) as client:
        for index in range(len(GEMINI_SCRIPT)):
            body = {"contents": contents, "systemInstruction": system, "tools": tools}
            response = client.post(path, json=body)
            if not answered(show, response):
                return
            sent = model.state.received[-1]
            show.request(play, response, body, sent)
            last = sent["contents"][-1]["parts"][0]
            error = last.get("functionResponse", {}).get("response", {}).get("error")
            if error:
                show.received("functionResponse response.error", error)
                kept = "kept" if sent["systemInstruction"] == system else "CHANGED"
                show.say(f"  systemInstruction: {kept}")
                turned(play, GEMINI_SCRIPT, index, body, show, gemini_tool)
            parts = [
                p
                for chunk in sse_data(response.text)
                for p in chunk["candidates"][0]["content"]["parts"]
            ]
            contents = [*contents, {"role": "model", "parts": parts}]
            answers = []
            for part in parts:
                if part.get("text"):
                    show.model(play, f"answers: {part['text']}")
                if "functionCall" not in part:
                    continue
                fc = part["functionCall"]
                show.model(play, f"calls {fc['name']}({json.dumps(fc['args'])})")
                output = gemini_tool(fc["name"], fc["args"])
                failed = output == GEMINI_READ
                play.failures += failed
                response_part = {"error": output} if failed else {"output": output}
                answer = {"id": f"{fc['name']}-{index}", "name": fc["name"]}
                answers.append({"functionResponse": answer | {"response": response_part}})
            if answers:
                contents.append({"role": "user", "parts": answers})
