"""Chat Completions answers of the mock model: a `chat.completion` body, or SSE chunks."""

from __future__ import annotations

import time
from typing import Any

import orjson


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


def turns_taken(payload: dict[str, Any]) -> int:
    """Assistant messages already in a chat request: the script's position."""
    return sum(1 for m in payload.get("messages", []) if m.get("role") == "assistant")
