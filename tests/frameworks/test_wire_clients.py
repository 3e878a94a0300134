"""Real clients of the OpenAI Responses and Anthropic Messages APIs through the proxy (issue 10).

Like `test_frameworks.py`: each client is a script in `clients/`, run in its own process with
the frameworks venv's interpreter, through the proxy against the scripted mock model, which
answers in the client's own format (JSON or SSE) so the SDK really parses every answer. The
model calls read_file("src/config.ts") twice (it fails both times), then
read_file("src/settings.ts") (it succeeds), then answers. The requests the mock received must
show: a recovery block on the first failed result, the first attempt listed in the block on the
second, no block after the success, and (when the client resends its transcript) every request
extending the one before it byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import orjson
import pytest

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings
from tests.frameworks.test_frameworks import (
    ANSWER,
    BLOCK,
    EARLIER_ATTEMPT,
    FILE_TEXT,
    MISSING,
    frameworks_python,
    model_script,
    run_client,
)

ANTHROPIC_SYSTEM = [  # what anthropic_client.py sends, breakpoints included
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


@dataclass(frozen=True)
class Client:
    """One client script, its arguments, its API and how its failed read_file result reads."""

    script: str
    args: tuple[str, ...]
    api: str  # "responses" or "messages"
    error_start: str
    chain: bool = False  # sends only new items, with previous_response_id


RESPONSES_ERROR = "FileNotFoundError: [Errno 2] No such file or directory: 'src/config.ts'"
CLIENTS = {
    "openai-responses": Client(
        "openai_responses_client.py", ("--mode", "plain"), "responses", RESPONSES_ERROR
    ),
    "openai-responses-stream": Client(
        "openai_responses_client.py", ("--mode", "stream"), "responses", RESPONSES_ERROR
    ),
    "openai-responses-chain": Client(
        "openai_responses_client.py", ("--mode", "chain"), "responses", RESPONSES_ERROR, True
    ),
    "openai-agents-responses": Client(
        "openai_agents_responses_agent.py",
        (),
        "responses",
        "An error occurred while running the tool.",
    ),
    "anthropic-create": Client(
        "anthropic_client.py", ("--mode", "create"), "messages", "File does not exist."
    ),
    "anthropic-stream": Client(
        "anthropic_client.py", ("--mode", "stream"), "messages", "File does not exist."
    ),
}


def history(body: dict[str, Any], api: str) -> list[Any]:
    """The request's item list: Responses `input`, Messages `messages`."""
    items = body.get("input" if api == "responses" else "messages")
    return items if isinstance(items, list) else []


def _text(content: Any, joiner: str) -> str:
    if isinstance(content, list):
        return joiner.join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def result_texts(body: dict[str, Any], api: str) -> list[str]:
    """Every tool result of a request as the model received it, oldest first. (The proxy adds
    its block to a list of Anthropic blocks as one more text block: joined by a blank line.)"""
    if api == "responses":
        return [
            _text(item.get("output"), "")
            for item in history(body, api)
            if item.get("type") == "function_call_output"
        ]
    return [
        _text(block.get("content"), "\n\n")
        for message in history(body, api)
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def nth_failure(received: list[dict[str, Any]], client: Client, n: int) -> str:
    """Failed result number `n` (1-based), from the first request that shows it. A chain
    request carries only its new outputs, so failures are counted across requests there."""
    seen: list[str] = []
    for body in received:
        found = [t for t in result_texts(body, client.api) if t.startswith(client.error_start)]
        seen = seen + found if client.chain else found
        if len(seen) >= n:
            return seen[n - 1]
    raise AssertionError(f"no failure number {n} reached the model")


def assert_extends(received: list[dict[str, Any]], api: str) -> None:
    """Request N+1 starts with request N's items, each byte-identical as JSON."""
    for n, (before, after) in enumerate(pairwise(received), start=1):
        old, new = history(before, api), history(after, api)
        assert len(new) > len(old), f"request {n + 1} is no longer than request {n}"
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            assert orjson.dumps(a) == orjson.dumps(b), f"request {n + 1} changed item {i}"


def assert_chain(received: list[dict[str, Any]]) -> None:
    """Every request after the first continues a stored response with only new items."""
    previous = [body.get("previous_response_id") for body in received]
    assert previous[0] is None and all(previous[1:]), previous
    assert len(set(previous[1:])) == len(previous) - 1, previous
    for body in received[1:]:
        kinds = {item.get("type") for item in history(body, "responses")}
        assert kinds == {"function_call_output"}, kinds


@pytest.mark.parametrize("name", list(CLIENTS))
def test_client_tool_errors_get_recovery_blocks(name: str) -> None:
    client = CLIENTS[name]
    frameworks_python()
    mock = create_mock_app(model_script())
    with BackgroundServer(mock) as upstream:
        settings = make_settings(upstream=f"{upstream.url}/v1", anthropic_upstream=upstream.url)
        with BackgroundServer(create_app(settings)) as proxy:
            base = f"{proxy.url}/v1" if client.api == "responses" else proxy.url
            done = run_client(client.script, base, *client.args)
    received: list[dict[str, Any]] = mock.state.received
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    assert ANSWER in done.stdout
    assert len(received) == 4, f"{len(received)} requests, expected 4"

    own_words, _, block = nth_failure(received, client, 1).partition(BLOCK)
    assert block, f"no recovery block on {name}'s failed tool result: {own_words!r}"
    assert block.startswith("Operation: "), block
    # chained too: the call lives in the stored response, which the proxy read as it relayed it
    assert block.startswith(f'Operation: read_file("{MISSING}")'), block

    second = nth_failure(received, client, 2)
    assert BLOCK in second, f"no recovery block on {name}'s second failure: {second!r}"
    assert EARLIER_ATTEMPT.search(second.partition(BLOCK)[2]), second

    successes = [t for body in received for t in result_texts(body, client.api) if FILE_TEXT in t]
    assert successes, f"{name}'s successful read never reached the model"
    assert not any(BLOCK in t for t in successes), f"a block after {name}'s successful read"

    if client.chain:
        assert_chain(received)
    else:
        assert_extends(received, client.api)
    if client.api == "messages":
        for body in received:  # breakpoints exactly where the client put them, none added
            assert body["system"] == ANTHROPIC_SYSTEM, body["system"]
            assert orjson.dumps(body).count(b'"cache_control"') == len(ANTHROPIC_SYSTEM)
