"""OpenAI Responses answers of the mock model (`POST /v1/responses`).

A `response` object whose `output` holds `message` / `function_call` items, or its SSE stream:
`response.created`, `response.in_progress`, per item `response.output_item.added`, the text or
argument deltas and `response.output_item.done`, then `response.completed` (shapes of
openai-python `src/openai/types/responses/`). `previous_response_id` works: the mock remembers
each response's whole conversation, so a chain of requests carrying only new items is read as
the full history, and an unknown id gets the API's 400.
"""

from __future__ import annotations

import time
from typing import Any

from recovery_proxy.demo.mock_model.script import Turn, calls_of, sse, stamp, text_of

Item = dict[str, Any]
OUTPUT_TYPES = frozenset({"function_call", "custom_tool_call", "reasoning", "local_shell_call"})
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def output_items(turn: Turn) -> list[Item]:
    """The `output` of a response for a scripted turn: its text, then its calls."""
    suffix = stamp()
    items: list[Item] = []
    if text_of(turn):
        part = {"type": "output_text", "text": text_of(turn), "annotations": [], "logprobs": []}
        items.append(
            {
                "id": f"msg_mock_{suffix}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for n, call in enumerate(calls_of(turn)):
        items.append(
            {
                "id": f"fc_mock_{suffix}_{n}",
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        )
    return items


def response_body(payload: dict[str, Any], rid: str, output: list[Item], done: bool) -> Item:
    """A `response` object; `done=False` is the in-progress shell a stream opens with."""
    instructions = payload.get("instructions")
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if done else "in_progress",
        "error": None,
        "incomplete_details": None,
        "instructions": instructions if isinstance(instructions, str) else None,
        "model": payload.get("model") or "mock-model",
        "output": output if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": payload.get("previous_response_id"),
        "store": bool(payload.get("store", True)),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": payload.get("tool_choice") or "auto",
        "tools": payload.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": USAGE if done else None,
        "metadata": {},
    }


def _item_events(item: Item, index: int) -> list[tuple[str, Item]]:
    """The events that stream one output item, without sequence numbers."""
    at = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "function_call":
        args = item["arguments"]
        opening = {**item, "arguments": "", "status": "in_progress"}
        return [
            ("response.output_item.added", {"output_index": index, "item": opening}),
            ("response.function_call_arguments.delta", {**at, "delta": args}),
            ("response.function_call_arguments.done", {**at, "arguments": args}),
            ("response.output_item.done", {"output_index": index, "item": item}),
        ]
    text = item["content"][0]["text"]
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    opening = {**item, "content": [], "status": "in_progress"}
    in_part = {**at, "content_index": 0}
    return [
        ("response.output_item.added", {"output_index": index, "item": opening}),
        ("response.content_part.added", {**in_part, "part": part}),
        ("response.output_text.delta", {**in_part, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**in_part, "text": text, "logprobs": []}),
        ("response.content_part.done", {**in_part, "part": item["content"][0]}),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


def stream_events(payload: dict[str, Any], rid: str, output: list[Item]) -> list[bytes]:
    """The SSE frames of a streamed response, numbered by `sequence_number`."""
    return [sse(event["type"], event) for event in event_objects(payload, rid, output)]


def event_objects(payload: dict[str, Any], rid: str, output: list[Item]) -> list[Item]:
    """The events of a streamed response, numbered by `sequence_number` (SSE `data`, or one
    WebSocket message each)."""
    shell = response_body(payload, rid, output, done=False)
    events: list[tuple[str, Item]] = [
        ("response.created", {"response": shell}),
        ("response.in_progress", {"response": shell}),
    ]
    for index, item in enumerate(output):
        events += _item_events(item, index)
    events.append(("response.completed", {"response": response_body(payload, rid, output, True)}))
    return [{"type": name, "sequence_number": n, **data} for n, (name, data) in enumerate(events)]


def input_items(payload: dict[str, Any]) -> list[Item]:
    """A request's `input` as a list of items (a bare string is one user message)."""
    given = payload.get("input")
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    return [item for item in given or [] if isinstance(item, dict)]


def turns_taken(items: list[Item]) -> int:
    """Model turns in a conversation: runs of model-made items (calls, assistant messages)."""
    turns, inside = 0, False
    for item in items:
        made = item.get("type") in OUTPUT_TYPES or item.get("role") == "assistant"
        turns += made and not inside
        inside = made
    return turns


class Memory:
    """What the server holds for `previous_response_id`: each response's whole conversation."""

    def __init__(self) -> None:
        self.conversations: dict[str, list[Item]] = {}

    def history(self, payload: dict[str, Any]) -> list[Item] | None:
        """The full conversation a request continues (None: unknown previous response)."""
        previous = payload.get("previous_response_id")
        if not previous:
            return input_items(payload)
        if previous not in self.conversations:
            return None
        return self.conversations[previous] + input_items(payload)

    def remember(self, rid: str, history: list[Item], output: list[Item]) -> None:
        self.conversations[rid] = history + output


def not_found(previous: str) -> Item:
    """The API's 400 body for an unknown `previous_response_id`."""
    message = f"Previous response with id '{previous}' not found."
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }
