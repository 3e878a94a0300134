"""`recovery-proxy demo`: a scripted agent session through the real HTTP path, offline.

A mock model and the proxy run on free loopback ports; a tiny scripted agent executes canned
tool results, and the demo prints what the agent sent next to what the model received.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from proxy.app import create_app
from proxy.config import Settings
from proxy.mock_model import create_mock_app
from proxy.servers import BackgroundServer

SYSTEM = "You are a coding agent. Use the tools to change the repository."
TASK = "Change the dev server port to 8080 in src/config.ts."
COMPACTED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "Summary: the user wants the dev server port changed to 8080; the config lives under src/."
)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


# What the mock model answers, request by request.
SCRIPT: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_1", "read_file", path="src/config.ts")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_2", "read_file", path="src/config.ts")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_3", "read_file", path="src/config.ts")],
    },
    {"role": "assistant", "content": None, "tool_calls": [call("call_4", "list_dir", path="src")]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_5", "read_file", path="src/settings.ts")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_6", "edit_file", path="src/config.ts", old="3000", new="8080")],
    },
    {"role": "assistant", "content": "The port lives in src/settings.ts; I changed it to 8080."},
]

# What the agent's tools return, by call id.
TOOL_RESULTS = {
    "call_1": "Error: ENOENT: no such file or directory, open 'src/config.ts'",
    "call_2": "Error: ENOENT: no such file or directory, open 'src/config.ts'",
    "call_3": "Error: ENOENT: no such file or directory, open 'src/config.ts'",
    "call_4": "index.ts\nsettings.ts\nserver.ts",
    "call_5": "export const settings = {\n  port: 3000,\n  host: 'localhost',\n};\n",
    "call_6": "Error: ENOENT: no such file or directory, open 'src/config.ts'",
}
COMPACT_AFTER = "call_5"  # the agent compacts its history after this result


def rule(title: str) -> str:
    return f"\n{'=' * 8} {title} {'=' * max(0, 70 - len(title))}"


def show_difference(
    sent: list[dict[str, Any]], received: list[dict[str, Any]], new_from: int
) -> None:
    """Print what the proxy changed in the system prompt and in this turn's new messages
    (earlier blocks are re-applied byte for byte and not shown again)."""
    changed = False
    for index, (before, after) in enumerate(zip(sent, received, strict=False)):
        if before != after and (index >= new_from or after["role"] == "system"):
            changed = True
            print(f"  [{after['role']}] as the model received it:")
            print("    " + str(after.get("content")).replace("\n", "\n    "))
    for extra in received[len(sent) :]:
        changed = True
        print(f"  [{extra['role']}] added by the proxy:")
        print("    " + str(extra.get("content")).replace("\n", "\n    "))
    if not changed:
        print("  (forwarded unchanged)")


def play(proxy_url: str, model: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    headers = {"Authorization": "Bearer sk-demo", "X-Session-Id": "demo-session"}
    new_from = 0
    with httpx.Client(base_url=proxy_url, headers=headers, timeout=30) as client:
        for turn in range(1, len(SCRIPT) + 1):
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
            show_difference(messages, model.state.received[-1]["messages"], new_from)
            reply = response.json()["choices"][0]["message"]
            messages.append(reply)
            new_from = len(messages)
            for tool_call in reply.get("tool_calls") or []:
                fn = tool_call["function"]
                print(f"  model calls {fn['name']}({fn['arguments']})")
                result = TOOL_RESULTS[tool_call["id"]]
                messages.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": result}
                )
                if tool_call["id"] == COMPACT_AFTER:
                    print(rule("the agent compacts its history"))
                    messages = [messages[0], {"role": "user", "content": COMPACTED}]
                    new_from = 0
            if not reply.get("tool_calls"):
                print(f"  model answers: {reply['content']}")


def run_demo() -> int:
    """Run the scripted session; returns the process exit code."""
    model = create_mock_app(SCRIPT, by_request=True)
    with BackgroundServer(model) as upstream:
        settings = Settings(upstream=f"{upstream.url}/v1", hot_reload=False)
        with BackgroundServer(create_app(settings)) as proxy:
            print(f"mock model on {upstream.url}, recovery-proxy on {proxy.url}")
            play(f"{proxy.url}", model)
    return 0
