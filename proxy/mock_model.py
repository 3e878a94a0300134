"""A scripted mock model: an OpenAI-compatible chat endpoint for the demo, tests and benchmarks.

The reply to a request is `script[n]`, where n is the number of assistant messages already in
the conversation (or, with `by_request=True`, the number of requests received before);
past the end of the script it answers with a final text message. Every
request body it receives is kept in `app.state.received`.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

DONE = {"role": "assistant", "content": "Done."}


def completion(message: dict[str, Any], model: str) -> dict[str, Any]:
    """A non-streaming chat.completion body carrying `message`."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-mock-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def stream_chunks(message: dict[str, Any], model: str, usage: bool) -> list[bytes]:
    """The SSE events of a streamed reply: role, content or tool calls, finish, usage, [DONE]."""
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({**base, "choices": [choice]}) + b"\n\n"

    events = [event({"role": "assistant", "content": ""})]
    if message.get("content"):
        events.append(event({"content": message["content"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        events.append(event({"tool_calls": [{"index": i, **call}]}))
    events.append(event({}, "tool_calls" if message.get("tool_calls") else "stop"))
    if usage:
        tail = {**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
        events.append(b"data: " + orjson.dumps(tail) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def create_mock_app(
    script: list[dict[str, Any]] | None = None, by_request: bool = False
) -> Starlette:
    """The mock model app; `script` lists the assistant messages to answer with, in order."""
    turns = list(script or [])

    async def chat(request: Request) -> Response:
        body = await request.body()
        payload = orjson.loads(body)
        app.state.received.append(payload)
        done = len(app.state.received) - 1
        if not by_request:
            done = sum(1 for m in payload.get("messages", []) if m.get("role") == "assistant")
        message = turns[done] if done < len(turns) else DONE
        model = payload.get("model", "mock-model")
        if payload.get("stream"):
            usage = bool((payload.get("stream_options") or {}).get("include_usage"))
            chunks = stream_chunks(message, model, usage)

            async def gen() -> Any:
                for chunk in chunks:
                    yield chunk

            return StreamingResponse(gen(), media_type="text/event-stream")
        return Response(orjson.dumps(completion(message, model)), media_type="application/json")

    async def models(request: Request) -> Response:
        data = {
            "object": "list",
            "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}],
        }
        return Response(orjson.dumps(data), media_type="application/json")

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
        ]
    )
    app.state.received = []
    return app
