"""A hand-written agent loop on the anthropic SDK whose read_file tool can fail.

Run with the frameworks venv:
`python anthropic_client.py --base-url http://127.0.0.1:PORT --mode create|stream`.
Failed results go back with `is_error: true` (the first as a string, later ones as text
blocks); the successful one says `Error` in its text but carries `is_error: false`. The system
prompt is two text blocks carrying `cache_control`, as Claude Code sends it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from anthropic import Anthropic
from anthropic.types import Message

MISSING = "src/config.ts"
SYSTEM: list[Any] = [
    {
        "type": "text",
        "text": "You are a coding agent. Use read_file to inspect the project.",
        "cache_control": {"type": "ephemeral"},
    },
    {
        "type": "text",
        "text": "Project: acme-web, a TypeScript dev server under src/.",
        "cache_control": {"type": "ephemeral"},
    },
]
TASK = "Change the dev server port to 8080 in src/config.ts."
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a text file of the project.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


def read_file(path: str) -> tuple[str, bool]:
    """The tool: (text, is_error)."""
    if path == MISSING:
        return "File does not exist. Note: your current working directory is /repo.", True
    name = Path(path).name
    return f"// {name}\nexport const port = 3000;\n// throws Error when PORT is unset\n", False


def ask(client: Anthropic, mode: str, messages: list[Any]) -> Message:
    """One model turn, from `messages.create` or the `messages.stream` helper."""
    options: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    options |= {"system": SYSTEM, "tools": TOOLS, "messages": messages}
    if mode == "stream":
        with client.messages.stream(**options) as stream:
            return stream.get_final_message()
    return client.messages.create(**options)


def tool_result(block: Any, failures: int) -> dict[str, Any]:
    """The tool_result block answering one tool_use block."""
    text, failed = read_file(**block.input)
    content: Any = text if failures == 0 or not failed else [{"type": "text", "text": text}]
    return {"type": "tool_result", "tool_use_id": block.id, "content": content, "is_error": failed}


def run(base_url: str, mode: str) -> str:
    """Run the loop until the model answers without calling a tool; its answer."""
    headers = {"X-Session-Id": f"frameworks-anthropic-{mode}"}
    client = Anthropic(
        base_url=base_url, api_key="sk-ant-test", max_retries=0, default_headers=headers
    )
    messages: list[Any] = [{"role": "user", "content": TASK}]
    failures = 0
    for _ in range(8):
        message = ask(client, mode, messages)
        messages.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in message.content],
            }
        )
        calls = [block for block in message.content if block.type == "tool_use"]
        if not calls:
            return "".join(block.text for block in message.content if block.type == "text")
        results = [tool_result(block, failures) for block in calls]
        failures += sum(1 for r in results if r["is_error"])
        messages.append({"role": "user", "content": results})
    raise SystemExit("no final answer after 8 turns")


def main() -> None:
    """Run the loop against --base-url and print the model's final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--mode", choices=("create", "stream"), default="create")
    args = parser.parse_args()
    print(run(args.base_url, args.mode))


if __name__ == "__main__":
    main()
