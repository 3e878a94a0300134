"""Scripted agents speaking Responses (Codex-like) and Messages (Claude Code-like) through the
real app; a real mock provider on loopback plays the provider and keeps the exact bytes it received."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import orjson

from tests.conftest import ANTHROPIC_UPSTREAM, UPSTREAM
from tests.upstream import MockRoute, upstream_mock

_ids = itertools.count(1)

CODEX_INSTRUCTIONS = (
    "You are Codex, a coding agent based on GPT-5. You run in a sandboxed terminal."
)
CODEX_SESSION = "0199a1f2-4c1e-7d3a-9b0e-5f2d8c6e1a47"
CLAUDE_SESSION = "6f1c2b7e-3d4a-4e8b-9a61-2c5d7e8f9a10"
CLAUDE_SYSTEM_TEXT = "You are Claude Code, Anthropic's official CLI for Claude."


class Provider:
    """What one mocked upstream call received."""

    def __init__(self, route: MockRoute) -> None:
        self.route = route

    @property
    def body(self) -> bytes:
        return self.route.calls.last.request.content

    @property
    def url(self) -> str:
        return str(self.route.calls.last.request.url)


class ResponsesAgent:
    """Codex-like: the whole transcript every turn (`store: false`), or with `chain=True` an
    openai-agents-like `previous_response_id` chain sending only the new items."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        task: str = "Fix the rounding bug in invoice totals.",
        headers: dict[str, str] | None = None,
        chain: bool = False,
        prefix: str = "",
    ) -> None:
        self.client = client
        self.prefix = prefix  # `/s/{session}` for a path-scoped session
        self.headers = {"Authorization": "Bearer sk-proj-codex-tenant", **(headers or {})}
        self.chain = chain
        self.input: list[dict[str, Any]] = [user_item(task)]
        self.sent_upto = 0
        self.previous: str | None = None
        self.instructions = CODEX_INSTRUCTIONS
        self.sent: list[bytes] = []
        self.forwarded: list[bytes] = []
        self.responses: list[httpx.Response] = []

    def add_call(self, name: str, arguments: dict[str, Any], output: Any) -> str:
        call_id = f"call_{next(_ids):08d}"
        self.input.append(
            {
                "type": "function_call",
                "name": name,
                "arguments": orjson.dumps(arguments).decode(),
                "call_id": call_id,
            }
        )
        self.input.append({"type": "function_call_output", "call_id": call_id, "output": output})
        return call_id

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"model": "gpt-5-codex", "instructions": self.instructions}
        if self.chain and self.previous:
            body["previous_response_id"] = self.previous
            body["input"] = self.input[self.sent_upto :]
        else:
            body["input"] = self.input
            body["store"] = False
            body["prompt_cache_key"] = CODEX_SESSION
        body["stream"] = True
        return body

    async def send(self) -> httpx.Response:
        raw = orjson.dumps(self.body())
        answer = {"id": f"resp_{next(_ids):012x}", "object": "response", "output": []}
        with upstream_mock(assert_all_called=False) as mock:
            route = mock.post(f"{UPSTREAM}/responses").mock(
                return_value=httpx.Response(200, json=answer)
            )
            response = await self.client.post(
                f"{self.prefix}/v1/responses", content=raw, headers=self.headers
            )
        self.sent.append(raw)
        self.responses.append(response)
        if route.called:
            self.forwarded.append(Provider(route).body)
            self.previous = answer["id"]
            self.sent_upto = len(self.input)
        return response

    async def call(self, name: str, arguments: dict[str, Any], output: Any) -> httpx.Response:
        self.add_call(name, arguments, output)
        return await self.send()

    @property
    def last(self) -> dict[str, Any]:
        return orjson.loads(self.forwarded[-1])

    @property
    def last_output(self) -> Any:
        """What the model received for the newest tool output."""
        return self.last["input"][-1]["output"]


class ClaudeAgent:
    """Claude Code-like: Messages with system blocks (billing line first, then cached
    blocks), `tool_use`/`tool_result` with `is_error`, `?beta=true`, `metadata.user_id`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        task: str = "Fix the flaky retry test in src/retry.ts.",
        headers: dict[str, str] | None = None,
        prefix: str = "",
    ) -> None:
        self.client = client
        self.prefix = prefix  # `/s/{session}`: the ANTHROPIC_BASE_URL form
        self.headers = {
            "x-api-key": "sk-ant-api03-claude-tenant",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
            **(headers or {}),
        }
        self.messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": task}]}
        ]
        self.sent: list[bytes] = []
        self.forwarded: list[bytes] = []
        self.urls: list[str] = []
        self.responses: list[httpx.Response] = []

    def system(self) -> list[dict[str, Any]]:
        cch = f"{next(_ids):05x}"  # changes on every request, like Claude Code's
        return [
            {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.90; cch={cch};"},
            {"type": "text", "text": CLAUDE_SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}},
            {
                "type": "text",
                "text": "You are an interactive CLI tool that helps users with software tasks.",
                "cache_control": {"type": "ephemeral"},
            },
        ]

    def add_call(
        self, name: str, arguments: dict[str, Any], output: Any, is_error: bool | None = None
    ) -> str:
        tool_id = f"toolu_01{next(_ids):08d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": arguments}],
            }
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        if is_error is not None:
            result["is_error"] = is_error
        self.messages.append({"role": "user", "content": [result]})
        return tool_id

    def body(self) -> dict[str, Any]:
        return {
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 32000,
            "system": self.system(),
            "messages": self.messages,
            "metadata": {"user_id": f"user_9c1f2e_account__session_{CLAUDE_SESSION}"},
            "stream": True,
        }

    async def send(self) -> httpx.Response:
        raw = orjson.dumps(self.body())
        with upstream_mock(assert_all_called=False) as mock:
            route = mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages").mock(
                return_value=httpx.Response(200, json={"type": "message", "content": []})
            )
            response = await self.client.post(
                f"{self.prefix}/v1/messages?beta=true", content=raw, headers=self.headers
            )
        self.sent.append(raw)
        self.responses.append(response)
        if route.called:
            self.forwarded.append(Provider(route).body)
            self.urls.append(Provider(route).url)
        return response

    async def call(
        self, name: str, arguments: dict[str, Any], output: Any, is_error: bool | None = None
    ) -> httpx.Response:
        self.add_call(name, arguments, output, is_error)
        return await self.send()

    @property
    def last(self) -> dict[str, Any]:
        return orjson.loads(self.forwarded[-1])

    @property
    def last_result(self) -> dict[str, Any]:
        """The newest tool_result block the model received."""
        return self.last["messages"][-1]["content"][0]


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
