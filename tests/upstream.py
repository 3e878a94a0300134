"""A real mock provider on 127.0.0.1 for tests, with a respx-like API.

The proxy's upstream pool is aiohttp, which respx cannot intercept; so tests talk to a real
HTTP server instead (better: the bytes really cross a socket). Usage mirrors respx:

    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=httpx.Response(200, json={"choices": []})
        )
        ...
    route.calls.last.request.content

`side_effect` may be a callable `(request) -> httpx.Response` or `httpx.TimeoutException`
(the server then never answers until the client hangs up).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from recovery_proxy.server.asgi import read_body
from recovery_proxy.server.background import BackgroundServer, free_port

PORT = free_port()
MAX_BODY = 1 << 30
ROOT = f"http://127.0.0.1:{PORT}"


@dataclass
class Call:
    request: httpx.Request


class Calls(list[Call]):
    @property
    def last(self) -> Call:
        return self[-1]


@dataclass
class MockRoute:
    method: str
    path: str
    params: dict[str, str] | None = None
    return_value: httpx.Response | None = None
    side_effect: Any = None
    calls: Calls = field(default_factory=Calls)

    def mock(
        self, return_value: httpx.Response | None = None, side_effect: Any = None
    ) -> MockRoute:
        self.return_value, self.side_effect = return_value, side_effect
        return self

    def respond(self, status_code: int = 200, **kwargs: Any) -> MockRoute:
        return self.mock(return_value=httpx.Response(status_code, **kwargs))

    @property
    def called(self) -> bool:
        return bool(self.calls)

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def matches(self, request: httpx.Request) -> bool:
        if request.method != self.method or request.url.path != self.path:
            return False
        return self.params is None or dict(request.url.params) == self.params


class UpstreamMock:
    """The routes of one `with upstream_mock()` block."""

    def __init__(self) -> None:
        self.routes: list[MockRoute] = []
        self.unmatched: list[httpx.Request] = []

    def route(self, method: str, url: str, params: dict[str, str] | None = None) -> MockRoute:
        route = MockRoute(method, httpx.URL(url).path, params)
        self.routes.append(route)
        return route

    def post(self, url: str, **kw: Any) -> MockRoute:
        return self.route("POST", url, **kw)

    def get(self, url: str, **kw: Any) -> MockRoute:
        return self.route("GET", url, **kw)

    def delete(self, url: str, **kw: Any) -> MockRoute:
        return self.route("DELETE", url, **kw)

    def put(self, url: str, **kw: Any) -> MockRoute:
        return self.route("PUT", url, **kw)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = await read_body(receive, MAX_BODY, None)
        query = scope["query_string"].decode("latin-1")
        raw_path = scope.get("raw_path") or scope["path"].encode()
        url = httpx.URL(f"{ROOT}{raw_path.decode('latin-1')}" + (f"?{query}" if query else ""))
        request = httpx.Request(scope["method"], url, headers=scope["headers"], content=body)
        route = next((r for r in self.routes if r.matches(request)), None)
        if route is None:
            self.unmatched.append(request)
            response = httpx.Response(404, json={"error": f"no mock for {request.method} {url}"})
        else:
            route.calls.append(Call(request))
            response = await _answer(route, request, receive)
            if response is None:
                return
        headers_out = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in response.headers.multi_items()
            if k.lower() not in ("transfer-encoding", "connection")
        ]
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers_out}
        )
        stream = response.stream  # the raw bytes: `.content` would undo a content-encoding
        raw = b"".join(stream) if isinstance(stream, httpx.ByteStream) else response.content
        await send({"type": "http.response.body", "body": raw})


async def _answer(route: MockRoute, request: httpx.Request, receive: Any) -> httpx.Response | None:
    effect = route.side_effect
    if isinstance(effect, type) and issubclass(effect, httpx.TimeoutException):
        effect = effect("mock timeout")
    if isinstance(effect, httpx.TimeoutException):
        while (await receive())["type"] != "http.disconnect":  # hang until the proxy gives up
            pass
        return None
    if callable(effect):
        result = effect(request)
        if asyncio.iscoroutine(result):
            result = await result
        return result
    return route.return_value or httpx.Response(200)


async def serve_lifespan(receive: Any, send: Any) -> None:
    """Answer the ASGI lifespan protocol for a test server that needs no start-up work."""
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


class _Dispatcher:
    """The server's app: the innermost active `upstream_mock()` answers."""

    def __init__(self) -> None:
        self.stack: list[UpstreamMock] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await serve_lifespan(receive, send)
            return
        mock = self.stack[-1] if self.stack else UpstreamMock()
        await mock(scope, receive, send)


_dispatcher = _Dispatcher()
_server: BackgroundServer | None = None
_lock = threading.Lock()


def _ensure_server() -> None:
    global _server
    with _lock:
        if _server is None:
            _server = BackgroundServer(_dispatcher, port=PORT)
            _server.__enter__()


@contextmanager
def upstream_mock(assert_all_called: bool = True) -> Iterator[UpstreamMock]:
    """Routes answered by the real mock server while the block runs."""
    _ensure_server()
    mock = UpstreamMock()
    _dispatcher.stack.append(mock)
    try:
        yield mock
    finally:
        _dispatcher.stack.remove(mock)
    if assert_all_called:
        missed = [f"{r.method} {r.path}" for r in mock.routes if not r.called]
        assert not missed, f"mock routes never called: {missed}"
