"""The demo's plays, one per wire format: each drives the scripted agent through the proxy
over HTTP and prints what the agent sent next to what the model received. Chat Completions is
the full walkthrough (repeats, a loop, compaction, a model acting on the failure summary); the
OpenAI Responses, Anthropic Messages and Gemini generateContent runs are short.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from recovery_proxy.demo.mock_model import Turn
from recovery_proxy.demo.scenario import (
    CLAUDE_READ,
    CODEX_EXEC,
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
    run_tool,
)


def rule(title: str) -> str:
    """A section heading."""
    return f"\n{'=' * 8} {title} {'=' * max(0, 70 - len(title))}"


def show_difference(
    sent: list[dict[str, Any]], received: list[dict[str, Any]], new_from: int, shown: set[str]
) -> None:
    """Print what the proxy changed in the system prompt and in this turn's new messages
    (earlier blocks are re-applied byte for byte and not shown again; nor is a system prompt
    already in `shown`)."""
    changed = False
    for index, (before, after) in enumerate(zip(sent, received, strict=False)):
        if before != after and (index >= new_from or after["role"] == "system"):
            changed = True
            content = str(after.get("content"))
            if after["role"] == "system" and content in shown:
                print("  [system] the summary re-applied byte for byte (as above)")
                continue
            if after["role"] == "system":
                shown.add(content)
            print(f"  [{after['role']}] as the model received it:")
            print("    " + content.replace("\n", "\n    "))
    for extra in received[len(sent) :]:
        changed = True
        print(f"  [{extra['role']}] added by the proxy:")
        print("    " + str(extra.get("content")).replace("\n", "\n    "))
    if not changed:
        print("  (forwarded unchanged)")


def play(proxy_url: str, model: Any) -> None:
    """The Chat Completions walkthrough: repeats, a loop, compaction."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    headers = {"Authorization": "Bearer sk-demo", "X-Session-Id": "demo-session"}
    new_from = 0
    shown: set[str] = set()
    with httpx.Client(base_url=proxy_url, headers=headers, timeout=30) as client:
        for turn, entry in enumerate(SCRIPT, 1):
            response = client.post(
                "/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": messages}
            )
            print(rule(f"request {turn}"))
            last = messages[-1]
            print(
                f"  agent sent {len(messages)} messages; last: [{last['role']}] "
                + str(last.get("content"))[:100].replace("\n", " | ")
            )
            print(
                f"  proxy: status {response.status_code}, "
                f"injected {response.headers.get('x-recovery-proxy-injected', '0')}, "
                f"overhead {response.headers.get('x-recovery-proxy-overhead-ms', '?')} ms"
            )
            if response.status_code != 200:
                print("  " + response.text)
                return
            show_difference(messages, model.state.received[-1]["messages"], new_from, shown)
            reply = response.json()["choices"][0]["message"]
            if reply.get("content") and reply.get("tool_calls"):
                print(f"  model says: {reply['content']}")
            plain = entry({"messages": messages}) if callable(entry) else reply
            messages.append(reply)
            new_from = len(messages)
            for tool_call in reply.get("tool_calls") or []:
                fn = tool_call["function"]
                print(f"  model calls {fn['name']}({fn['arguments']})")
                result = run_tool(fn["name"], json.loads(fn["arguments"]))
                messages.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": result}
                )
                if tool_call["id"] == COMPACT_AFTER:
                    print(rule("the agent compacts its history"))
                    messages = [messages[0], {"role": "user", "content": COMPACTED}]
                    new_from = 0
            if plain != reply:
                show_without_summary(plain)
            if not reply.get("tool_calls"):
                print(f"  model answers: {reply['content']}")


def show_without_summary(plain: Turn) -> None:
    """One line on the turn the same scripted model picks from the request as the agent sent
    it, without the proxy's summary (no second session: the script is a function of the
    request, so this is exactly what it would answer)."""
    for tool_call in plain.get("tool_calls") or []:
        fn = tool_call["function"]
        result = run_tool(fn["name"], json.loads(fn["arguments"])).splitlines()[0]
        print(
            f"  without the proxy (no summary), the same script calls "
            f"{fn['name']}({fn['arguments']}) -> {result}"
        )


def answered(response: httpx.Response) -> bool:
    """True for a 200; otherwise print what the proxy answered."""
    if response.status_code != 200:
        print(f"  proxy: status {response.status_code}: {response.text}")
    return response.status_code == 200


def show_received(kind: str, text: str) -> None:
    """Print a failed result as the model received it."""
    print(f"  [{kind}] as the model received it:")
    print("    " + text.replace("\n", "\n    "))


def play_responses(client: httpx.Client, model: Any) -> None:
    """OpenAI Responses: the whole transcript each turn (`store: false`), as Codex sends it."""
    print(rule("OpenAI Responses: POST /v1/responses (Codex-style exec output)"))
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for _ in RESPONSES_SCRIPT:
        body = {"model": "gpt-5-codex", "instructions": SYSTEM, "input": items, "store": False}
        response = client.post("/v1/responses", json=body, headers={"X-Session-Id": "demo-codex"})
        if not answered(response):
            return
        received = model.state.received[-1]["input"]
        if received[-1].get("type") == "function_call_output":
            show_received("function_call_output", received[-1]["output"])
        output = response.json()["output"]
        items += output
        for item in output:
            if item["type"] == "message":
                print(f"  model answers: {item['content'][0]['text']}")
            else:
                print(f"  model calls {item['name']}({item['arguments']})")
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": item["call_id"],
                        "output": CODEX_EXEC,
                    }
                )


def play_messages(client: httpx.Client, model: Any) -> None:
    """Anthropic Messages: `is_error` tool results, a system block with `cache_control`."""
    print(rule("Anthropic Messages: POST /v1/messages (Claude Code-style is_error results)"))
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    headers = {"X-Session-Id": "demo-claude", "anthropic-version": "2023-06-01"}
    for _ in MESSAGES_SCRIPT:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system}
        response = client.post("/v1/messages", json=body | {"messages": messages}, headers=headers)
        if not answered(response):
            return
        sent = model.state.received[-1]
        last = sent["messages"][-1]["content"]
        if isinstance(last, list) and last[0].get("type") == "tool_result":
            show_received("tool_result is_error=true", last[0]["content"])
            kept = "kept" if sent["system"] == system else "CHANGED"
            print(f"  system block with cache_control: {kept}")
        content = response.json()["content"]
        messages.append({"role": "assistant", "content": content})
        results = []
        for block in content:
            if block["type"] == "text":
                print(f"  model answers: {block['text']}")
            else:
                print(f"  model calls {block['name']}({json.dumps(block['input'])})")
                result = {"tool_use_id": block["id"], "content": CLAUDE_READ, "is_error": True}
                results.append({"type": "tool_result", **result})
        if results:
            messages.append({"role": "user", "content": results})


def sse_data(text: str) -> list[dict[str, Any]]:
    """The JSON of each `data:` event of a Gemini `alt=sse` stream."""
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def play_gemini(proxy_url: str, model: Any) -> None:
    """Gemini generateContent: `functionResponse {id, name, response: {"error": ...}}` parts,
    streamed with `alt=sse`, authenticated with `x-goog-api-key`, as Gemini CLI sends them."""
    path = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"
    print(rule("Gemini: POST /v1beta/models/{model}:streamGenerateContent (Gemini CLI-style)"))
    system = {"role": "user", "parts": [{"text": SYSTEM}]}
    tools = [{"functionDeclarations": [{"name": "read_file"}]}]
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    headers = {"x-goog-api-key": "demo-key", "X-Session-Id": "demo-gemini"}
    with httpx.Client(base_url=proxy_url, headers=headers, timeout=30) as client:
        for number, _ in enumerate(GEMINI_SCRIPT, 1):
            body = {"contents": contents, "systemInstruction": system, "tools": tools}
            response = client.post(path, json=body)
            if not answered(response):
                return
            sent = model.state.received[-1]
            last = sent["contents"][-1]["parts"][0]
            if "functionResponse" in last:
                show_received(
                    "functionResponse response.error", last["functionResponse"]["response"]["error"]
                )
                kept = "kept" if sent["systemInstruction"] == system else "CHANGED"
                print(f"  systemInstruction: {kept}")
            parts = [
                p
                for chunk in sse_data(response.text)
                for p in chunk["candidates"][0]["content"]["parts"]
            ]
            contents.append({"role": "model", "parts": parts})
            answers = []
            for part in parts:
                if "functionCall" in part:
                    fc = part["functionCall"]
                    print(f"  model calls {fc['name']}({json.dumps(fc['args'])})")
                    answer = {
                        "id": f"{fc['name']}-{number}",
                        "name": fc["name"],
                        "response": {"error": GEMINI_READ},
                    }
                    answers.append({"functionResponse": answer})
                elif part.get("text"):
                    print(f"  model answers: {part['text']}")
            if answers:
                contents.append({"role": "user", "parts": answers})
