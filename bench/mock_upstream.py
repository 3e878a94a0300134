"""A fast mock chat endpoint in its own process: `python -m bench.mock_upstream PORT`.

Raw ASGI (no framework, no JSON parse of the request) on uvicorn with uvloop + httptools when
installed (bench/requirements.txt), so the mock is never what a benchmark measures. Every chat
request gets the same canned "Done." completion (streamed as SSE when the body asks for
`"stream": true`); GET /v1/models and /healthz answer for readiness checks.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import orjson
import uvicorn

from recovery_proxy.demo.mock_model import DONE, completion, stream_chunks

MODEL = "mock-model"
COMPLETION = orjson.dumps(completion(DONE, MODEL))
CHUNKS = stream_chunks(DONE, MODEL, usage=True)
MODELS = orjson.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
STREAM_MARKERS = (b'"stream":true', b'"stream": true')


def _headers(body: bytes, content_type: bytes = b"application/json") -> list[tuple[bytes, bytes]]:
    return [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]


JSON_HEADERS = _headers(COMPLETION)
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The whole mock: chat completions, models, health."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path = scope["path"]
    if scope["method"] == "POST" and path.endswith(
        ("/chat/completions", "/responses", "/messages")
    ):
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if any(marker in body for marker in STREAM_MARKERS):
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            for chunk in CHUNKS:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
        await send({"type": "http.response.body", "body": COMPLETION})
        return
    if scope["method"] == "GET" and path in ("/v1/models", "/models", "/healthz"):
        await send({"type": "http.response.start", "status": 200, "headers": _headers(MODELS)})
        await send({"type": "http.response.body", "body": MODELS})
        return
    await send({"type": "http.response.start", "status": 404, "headers": _headers(b"")})
    await send({"type": "http.response.body", "body": b""})


def fast_stack() -> tuple[str, str]:
    """uvicorn's loop and HTTP parser: uvloop and httptools when installed."""
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return loop, http


def run_fast(asgi_app: Any, port: int) -> None:
    """Serve `asgi_app` on 127.0.0.1:`port` on the fastest stack installed, quietly."""
    loop, http = fast_stack()
    uvicorn.run(
        asgi_app,
        host="127.0.0.1",
        port=port,
        loop=loop,
        http=http,
        log_level="warning",
        access_log=False,
        lifespan="on",
        backlog=4096,
    )


if __name__ == "__main__":
    run_fast(app, int(sys.argv[1]))
