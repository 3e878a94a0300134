"""A mock streaming model in its own process: `python -m bench.stream_upstream PORT CHUNKS GAP_MS`.

Every POST ending in /chat/completions is answered with a Chat Completions SSE stream of
CHUNKS `chat.completion.chunk` events, GAP_MS apart, each stamped with the wall-clock time it
was written (`"t"`, ns), then a usage chunk and `data: [DONE]`: a client reading the stream
knows how long each chunk took to reach it. GET /healthz answers for readiness checks.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import orjson

from bench.mock_upstream import run_fast

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


def chunk(n: int) -> bytes:
    delta = {"index": 0, "delta": {"content": f"token{n} "}, "finish_reason": None}
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-4o-mini"}
    body |= {"t": time.time_ns(), "choices": [delta]}
    return b"data: " + orjson.dumps(body) + b"\n\n"


USAGE = (
    b"data: "
    + orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": 4000, "completion_tokens": 120, "total_tokens": 4120},
        }
    )
    + b"\n\ndata: [DONE]\n\n"
)


def make_app(chunks: int, gap: float) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
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
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        if scope["method"] == "POST" and scope["path"].endswith("/chat/completions"):
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            for n in range(chunks):
                if n:
                    await asyncio.sleep(gap)
                await send({"type": "http.response.body", "body": chunk(n), "more_body": True})
            await send({"type": "http.response.body", "body": USAGE})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


if __name__ == "__main__":
    run_fast(make_app(int(sys.argv[2]), float(sys.argv[3]) / 1000), int(sys.argv[1]))
