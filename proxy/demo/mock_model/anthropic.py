"""Anthropic Messages answers of the mock model (`POST /v1/messages`).

A `message` whose content holds `text` / `tool_use` blocks, or its SSE stream: `message_start`,
`ping`, per block `content_block_start`, deltas (`text_delta`, `input_json_delta` in two pieces
so clients really accumulate), `content_block_stop`, then `message_delta` and `message_stop`
(shapes of anthropic-sdk-python `src/anthropic/types/`).
"""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.demo.mock_model.script import Turn, calls_of, sse, stamp, text_of

Block = dict[str, Any]
USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def content_blocks(turn: Turn) -> list[Block]:
    """The content of the assistant message for a scripted turn: its text, then its calls."""
    blocks: list[Block] = []
    if text_of(turn):
        blocks.append({"type": "text", "text": text_of(turn)})
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
        for call in calls_of(turn)
    ]
    return blocks


def message_body(payload: dict[str, Any], content: list[Block]) -> Block:
    """A complete `message` object."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {
        "id": f"msg_mock_{stamp()}",
        "type": "message",
        "role": "assistant",
        "model": payload.get("model") or "mock-model",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": USAGE,
    }


def _block_events(block: Block, index: int) -> list[bytes]:
    """start, deltas, stop of one content block."""
    if block["type"] == "tool_use":
        opening: Block = {**block, "input": {}}
        raw = orjson.dumps(block["input"]).decode()
        half = len(raw) // 2
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in (raw[:half], raw[half:])]
    else:
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    return [
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        ),
        *(
            sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def stream_events(payload: dict[str, Any], content: list[Block]) -> list[bytes]:
    """The SSE frames of a streamed message."""
    done = message_body(payload, content)
    start = {**done, "content": [], "stop_reason": None, "usage": {**USAGE, "output_tokens": 1}}
    events = [
        sse("message_start", {"type": "message_start", "message": start}),
        sse("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(content):
        events += _block_events(block, index)
    delta = {"stop_reason": done["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": USAGE["output_tokens"]}
    events.append(sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events


def turns_taken(payload: dict[str, Any]) -> int:
    """Assistant messages already in a Messages request: the script's position."""
    messages = payload.get("messages") or []
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
