"""A hand-written agent loop on the openai SDK's Responses API whose read_file tool can fail.

Run with the frameworks venv:
`python openai_responses_client.py --base-url http://127.0.0.1:PORT/v1 --mode plain|stream|chain`.
`plain` and `stream` resend the whole transcript each turn (as Codex does, `store: false`);
`chain` sends only the new tool outputs with `previous_response_id`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from openai import OpenAI
from openai.types.responses import Response

MISSING = "src/config.ts"
INSTRUCTIONS = "You are a coding agent. Use read_file to inspect the project."
TASK = "Change the dev server port to 8080 in src/config.ts."
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a text file of the project.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        "strict": False,
    }
]


def read_file(path: str) -> str:
    """The tool: a file's text, or the error a Python tool runner reports."""
    if path == MISSING:
        return f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"
    return f"// {Path(path).name}\nexport const port = 3000;\n"


def ask(client: OpenAI, mode: str, items: list[Any], previous: str | None) -> Response:
    """One model turn; with `stream`, the response comes from the `response.completed` event."""
    options: dict[str, Any] = {"model": "gpt-4.1-mini", "instructions": INSTRUCTIONS}
    options |= {"tools": TOOLS, "input": items}
    if mode == "chain":
        options["previous_response_id"] = previous
    else:
        options["store"] = False
    if mode != "stream":
        return client.responses.create(**options)
    done: Response | None = None
    arguments: dict[str, str] = {}
    for event in client.responses.create(**options, stream=True):
        if event.type == "response.function_call_arguments.delta":
            arguments[event.item_id] = arguments.get(event.item_id, "") + event.delta
        elif event.type == "response.completed":
            done = event.response
    assert done is not None, "the stream ended without response.completed"
    for item in done.output:
        if item.type == "function_call":
            assert arguments.get(item.id or "") == item.arguments, "deltas != final arguments"
    return done


def run_tool(call: Any) -> str:
    """Execute one function_call item."""
    return read_file(**json.loads(call.arguments))


def run(base_url: str, mode: str) -> str:
    """Run the loop until the model answers without calling a tool; its answer."""
    headers = {"X-Session-Id": f"frameworks-openai-responses-{mode}"}
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, default_headers=headers)
    new_items: list[Any] = [{"role": "user", "content": TASK}]
    transcript = list(new_items)
    previous: str | None = None
    for _ in range(8):
        response = ask(client, mode, new_items if mode == "chain" else transcript, previous)
        previous = response.id
        transcript += [item.model_dump(mode="json", exclude_none=True) for item in response.output]
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        new_items = [
            {"type": "function_call_output", "call_id": call.call_id, "output": run_tool(call)}
            for call in calls
        ]
        transcript += new_items
    raise SystemExit("no final answer after 8 turns")


def main() -> None:
    """Run the loop against --base-url and print the model's final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--mode", choices=("plain", "stream", "chain"), default="plain")
    args = parser.parse_args()
    print(run(args.base_url, args.mode))


if __name__ == "__main__":
    main()
