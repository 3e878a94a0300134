"""Provider-compaction requests built by the SDKs themselves (anthropic's beta Messages with
`context_management` and `compaction`, openai's Responses with `context_management`, a
`compaction` item and `responses.compact`), sent through the proxy.

Run with the frameworks venv: `python compaction_client.py --base-url http://127.0.0.1:PORT`.
Each request is one the SDK serialises from its own parameter types; the test reads what the
mock provider received. Prints one line per request sent.
"""

from __future__ import annotations

import argparse
from typing import Any

from anthropic import Anthropic
from openai import OpenAI

ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
SYSTEM: list[Any] = [
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
]
USE = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file"}
RESULT = {"type": "tool_result", "tool_use_id": USE["id"], "content": ENOENT, "is_error": True}
MESSAGES: list[Any] = [
    {"role": "user", "content": "Change the port."},
    {"role": "assistant", "content": [{**USE, "input": {"path": "src/config.ts"}}]},
    {"role": "user", "content": [RESULT]},
]
EDITS: list[Any] = [
    {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}},
    {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 150000},
        "instructions": "Keep file paths.",
    },
]
BETAS: list[Any] = ["compact-2026-01-12", "context-management-2025-06-27"]


def anthropic_requests(base_url: str) -> None:
    client = Anthropic(
        base_url=base_url,
        api_key="sk-ant-sdk",
        default_headers={"X-Session-Id": "sdk-anthropic"},
        max_retries=0,
    )
    create = client.beta.messages.create
    create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=SYSTEM,
        messages=MESSAGES,
        context_management={"edits": EDITS},
        betas=BETAS,
    )
    print("threshold compaction edit sent")
    block = {"type": "compaction", "content": "Summary of the work.", "signature": "sig-1"}
    compacted = [*MESSAGES, {"role": "assistant", "content": [block]}]
    compacted.append({"role": "user", "content": "Continue."})
    create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=SYSTEM,
        messages=compacted,
        context_management={"edits": EDITS},
        betas=BETAS,
    )
    print("compaction block sent")
    create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=SYSTEM,
        messages=MESSAGES,
        compaction={"type": "summarize"},
        betas=["compact-2026-09-04"],
    )
    print("on-demand compaction sent")


def openai_requests(base_url: str) -> None:
    client = OpenAI(
        base_url=base_url + "/v1",
        api_key="sk-sdk",
        default_headers={"X-Session-Id": "sdk-openai"},
        max_retries=0,
    )
    call = {"type": "function_call", "call_id": "call_Zq81nF3kP0aLx7Rt2mVw", "name": "shell"}
    call["arguments"] = '{"command": "npm test"}'
    output = {"type": "function_call_output", "call_id": call["call_id"]}
    output["output"] = "Error: Cannot find module 'jest'"
    items: list[Any] = [{"role": "user", "content": "Fix the tests."}, call, output]
    client.responses.create(
        model="gpt-5.1-codex",
        instructions="You are Codex.",
        input=items,
        context_management=[{"type": "compaction", "compact_threshold": 10}],
    )
    print("threshold compaction sent")
    client.responses.compact(model="gpt-5.1-codex", instructions="You are Codex.", input=items)
    print("compact endpoint sent")
    item = {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB-opaque"}
    client.responses.create(
        model="gpt-5.1-codex",
        instructions="You are Codex.",
        input=[items[0], item, {"role": "user", "content": "Continue."}],
        context_management=[{"type": "compaction", "compact_threshold": 200000}],
    )
    print("compaction item sent")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    anthropic_requests(args.base_url)
    openai_requests(args.base_url)


if __name__ == "__main__":
    main()
