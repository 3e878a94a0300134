"""The upstream pool survives clients that hang up: nothing leaks, connections are reused."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import orjson

from recovery_proxy.server.app import create_app
from recovery_proxy.server.asgi import read_body
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings
from tests.upstream import MAX_BODY, serve_lifespan

FIRST = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
DONE = b'data: {"id":"c1","object":"chat.completion","choices":[]}\n\n'


class StallingUpstream:
    """`/v1/chat/completions`: stalls forever before headers (`"stall": "headers"`) or after
    the first SSE event (`"stall": "body"`); anything else gets a complete answer. Counts
    open requests and the client ports that connected."""

    def __init__(self) -> None:
        self.open = 0
        self.ports: set[int] = set()
        self.lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await serve_lifespan(receive, send)
            return
        body = await read_body(receive, MAX_BODY, None)
        with self.lock:
            self.ports.add(scope["client"][1])
            self.open += 1
        try:
            stall = orjson.loads(body).get("stall")
            if stall == "headers":
                await self._until_disconnect(receive)
                return
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            if stall == "body":
                await send({"type": "http.response.body", "body": FIRST, "more_body": True})
                await self._until_disconnect(receive)
                return
            await send({"type": "http.response.body", "body": FIRST + DONE})
        finally:
            with self.lock:
                self.open -= 1

    @staticmethod
    async def _until_disconnect(receive: Any) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass


def body(stall: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "stream": True,
        "stall": stall,
        "messages": [{"role": "user", "content": "hi"}],
    }


async def hang_up(url: str, stall: str) -> None:
    """Send a request and hang up mid-request: before headers, or after the first event."""
    async with httpx.AsyncClient(timeout=10) as client:
        if stall == "headers":
            try:
                await client.post(url, json=body(stall), timeout=httpx.Timeout(10, read=0.3))
            except httpx.ReadTimeout:
                return
            raise AssertionError("the upstream should have stalled")
        async with client.stream("POST", url, json=body(stall)) as response:
            assert await response.aiter_raw().__anext__() == FIRST


async def test_300_hung_up_clients_leak_no_upstream_connection() -> None:
    upstream = StallingUpstream()
    with BackgroundServer(upstream) as up:
        settings = make_settings(upstream=f"{up.url}/v1", max_connections=50)
        with BackgroundServer(create_app(settings)) as proxy:
            url = f"{proxy.url}/v1/chat/completions"
            for _ in range(10):  # 300 clients, 30 at a time, half before headers
                stalls = ["headers" if i % 2 else "body" for i in range(30)]
                await asyncio.gather(*(hang_up(url, s) for s in stalls))
            for _ in range(100):  # every hung-up request is torn down upstream
                if upstream.open == 0:
                    break
                await asyncio.sleep(0.05)
            assert upstream.open == 0
            # The pool (50 connections) is not exhausted: normal requests go through and
            # reuse a handful of pooled connections instead of opening one each.
            upstream.ports.clear()
            async with httpx.AsyncClient(timeout=10) as client:
                for _ in range(40):
                    response = await client.post(url, json=body("none"))
                    assert response.status_code == 200
                    assert response.content == FIRST + DONE
            assert len(upstream.ports) <= 3, upstream.ports
