"""SSE streaming through real loopback servers: unbuffered relay, events intact, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings

FIRST = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n'
REST = [
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}\n\n',
    b'data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}\n\n',
    b"data: [DONE]\n\n",
]


class GatedUpstream:
    """Sends the first SSE event, then waits for `release` before sending the rest."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        self.stall_seconds = 0.0
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> StreamingResponse:
        await request.body()

        async def events() -> AsyncIterator[bytes]:
            try:
                yield FIRST
                while not self.release.is_set():
                    await asyncio.sleep(0.01)
                if self.stall_seconds:
                    await asyncio.sleep(self.stall_seconds)
                for chunk in REST:
                    yield chunk
                self.finished.set()
            except BaseException:
                self.cancelled.set()
                raise

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"x-request-id": "req_stream_1"}
        )


@pytest.fixture
def servers():
    upstream = GatedUpstream()
    with BackgroundServer(upstream.app) as up:
        settings = make_settings(upstream=f"{up.url}/v1", stream_chunk_timeout=1.0)
        with BackgroundServer(create_app(settings)) as proxy:
            yield upstream, proxy


BODY = {
    "model": "gpt-4o",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "hi"}],
}


def test_first_chunk_arrives_before_upstream_sends_the_last(servers) -> None:
    upstream, proxy = servers
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", f"{proxy.url}/v1/chat/completions", json=BODY) as response,
    ):
        assert response.status_code == 200
        assert response.headers["x-request-id"] == "req_stream_1"
        chunks = response.iter_raw()
        first = next(chunks)
        # The upstream has not been allowed to send anything else yet.
        assert not upstream.release.is_set() and not upstream.finished.is_set()
        assert first == FIRST
        upstream.release.set()
        rest = b"".join(chunks)
    assert first + rest == FIRST + b"".join(REST)
    events = [e for e in (first + rest).split(b"\n\n") if e]
    assert events[-1] == b"data: [DONE]"
    usage = orjson.loads(events[2].removeprefix(b"data: "))
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == 11
    assert b'"type":"server_error"' in events[3]


def test_client_disconnect_cancels_upstream(servers) -> None:
    upstream, proxy = servers
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", f"{proxy.url}/v1/chat/completions", json=BODY) as response,
    ):
        assert next(response.iter_raw()) == FIRST
    # The client hung up mid-stream; the upstream generator must be torn down.
    assert upstream.cancelled.wait(5)
    assert not upstream.finished.is_set()


def test_stalled_stream_ends_with_an_sse_error_event(servers) -> None:
    upstream, proxy = servers
    upstream.stall_seconds = 3.0  # longer than stream_chunk_timeout=1.0
    upstream.release.set()
    started = time.monotonic()
    with httpx.Client(timeout=10) as client:
        response = client.post(f"{proxy.url}/v1/chat/completions", json=BODY)
    assert time.monotonic() - started < 2.9
    assert response.content.startswith(FIRST)
    tail = response.content.removeprefix(FIRST)
    error = orjson.loads(tail.strip().removeprefix(b"data: "))["error"]
    assert error["code"] == "stream_timeout" and "no data for 1s" in error["message"]


def test_slow_headers_give_504() -> None:
    async def slow(request: Request) -> StreamingResponse:
        await asyncio.sleep(3)
        raise AssertionError("unreachable")

    upstream = Starlette(routes=[Route("/v1/chat/completions", slow, methods=["POST"])])
    with BackgroundServer(upstream) as up:
        settings = make_settings(
            upstream=f"{up.url}/v1", read_timeout=0.5, stream_chunk_timeout=0.5
        )
        with BackgroundServer(create_app(settings)) as proxy:
            response = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
    assert response.status_code == 504
    assert response.json()["error"]["type"] == "upstream_timeout"
