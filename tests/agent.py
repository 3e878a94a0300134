"""A scripted agent for tests: builds an OpenAI chat conversation turn by turn, sends it
through the real app, and keeps what the (mock) provider received."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import orjson

from tests.conftest import UPSTREAM
from tests.upstream import upstream_mock

_ids = itertools.count(1)


class ScriptedAgent:
    """`await agent.call("read_file", {"path": "a"}, "Error: ...")` = one agent turn."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        session: str | None = "sess-1",
        api_key: str = "sk-tenant-a",
        system: str = "You are a coding agent working in /repo.",
        task: str = "Fix the failing build.",
        model: str = "gpt-4o-mini",
        prefix: str = "",
    ) -> None:
        self.client = client
        self.prefix = prefix  # `/s/{session}` for a path-scoped session
        self.headers = {"Authorization": f"Bearer {api_key}"}
        if session:
            self.headers["X-Session-Id"] = session
        self.model = model
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": task},
        ]
        self.forwarded: list[dict[str, Any]] = []
        self.responses: list[httpx.Response] = []

    def add_call(self, tool: str, arguments: dict[str, Any], result: str) -> str:
        call_id = f"call_{next(_ids):06d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": orjson.dumps(arguments).decode()},
                    }
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        return call_id

    def say(self, text: str) -> None:
        """A message from the person (or the harness) in the user role."""
        self.messages.append({"role": "user", "content": text})

    def think(self, text: str) -> None:
        """An assistant message with text and no tool call."""
        self.messages.append({"role": "assistant", "content": text})

    async def send(self) -> httpx.Response:
        with upstream_mock(assert_all_called=False) as mock:
            usage = {"prompt_tokens": 100 * len(self.messages), "completion_tokens": 10}
            answer = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(
                return_value=httpx.Response(200, json={**answer, "usage": usage})
            )
            response = await self.client.post(
                f"{self.prefix}/v1/chat/completions",
                content=orjson.dumps({"model": self.model, "messages": self.messages}),
                headers=self.headers,
            )
        self.responses.append(response)
        if route.called:
            self.forwarded.append(orjson.loads(route.calls.last.request.content))
        return response

    async def call(self, tool: str, arguments: dict[str, Any], result: str) -> httpx.Response:
        self.add_call(tool, arguments, result)
        return await self.send()

    @property
    def last_tool_text(self) -> str:
        """What the model received for the latest tool result."""
        for message in reversed(self.forwarded[-1]["messages"]):
            if message["role"] == "tool":
                return message["content"]
        raise AssertionError("no tool message forwarded")

    @property
    def system_text(self) -> str:
        return self.forwarded[-1]["messages"][0]["content"]
