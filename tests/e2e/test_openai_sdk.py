"""The official openai SDK pointed at the proxy (uvicorn on 127.0.0.1) in front of a mock."""

from __future__ import annotations

import itertools
import time

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CALL = {
    "id": "call_w1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
}
SCRIPT = [{"role": "assistant", "content": None, "tool_calls": [CALL]}]


@pytest.fixture
def sdk_client():
    mock = create_mock_app(SCRIPT)
    with (
        BackgroundServer(mock) as up,
        BackgroundServer(create_app(make_settings(upstream=f"{up.url}/v1"))) as proxy,
    ):
        yield openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0), mock


def test_non_streaming_chat_with_tools(sdk_client) -> None:
    client, mock = sdk_client
    completion = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=TOOLS
    )
    call = completion.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and call.id == "call_w1"
    assert mock.state.received[-1]["tools"] == TOOLS


def test_streaming_chat_with_tools(sdk_client) -> None:
    client, _ = sdk_client
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    calls = [c for ch in chunks for choice in ch.choices for c in (choice.delta.tool_calls or [])]
    assert calls[0].function.name == "get_weather"
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_rate_limit_surfaces_after_sdk_retries_honouring_retry_after() -> None:
    calls: list[float] = []

    async def limited(request: Request) -> JSONResponse:
        calls.append(time.monotonic())
        body = {
            "error": {
                "message": "Rate limit reached for gpt-4o-mini",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
        return JSONResponse(
            body, status_code=429, headers={"retry-after-ms": "300", "retry-after": "1"}
        )

    upstream = Starlette(routes=[Route("/v1/chat/completions", limited, methods=["POST"])])
    with (
        BackgroundServer(upstream) as up,
        BackgroundServer(create_app(make_settings(upstream=f"{up.url}/v1"))) as proxy,
    ):
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=2)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
    assert caught.value.status_code == 429
    assert caught.value.code == "rate_limit_exceeded"
    assert len(calls) == 3
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert all(0.25 <= gap < 0.9 for gap in gaps), gaps  # retry-after-ms, not the 1 s header
