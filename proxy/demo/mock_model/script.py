"""The mock model's script: assistant turns written once, in Chat Completions shape, and read
back as the parts every wire format is built from. An entry is a turn, or a callable that
chooses the turn from the request body it answers (`(payload) -> Turn`), so a scripted model
can act on what it received, e.g. a summary in the system prompt (`system_of`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

Turn = dict[str, Any]  # an assistant message: {"role", "content", "tool_calls"?}
Entry = Turn | Callable[[dict[str, Any]], Turn]  # a turn, or one chosen from the request
DONE: Turn = {"role": "assistant", "content": "Done."}


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a turn: the id the model gives it, the tool, its JSON arguments."""

    id: str
    name: str
    arguments: str

    @property
    def input(self) -> dict[str, Any]:
        """The arguments decoded (Anthropic's `tool_use.input`)."""
        data = orjson.loads(self.arguments or "{}")
        return data if isinstance(data, dict) else {}


def text_of(turn: Turn) -> str:
    """The turn's text ("" when it only calls tools)."""
    return turn.get("content") or ""


def calls_of(turn: Turn) -> list[Call]:
    """The turn's tool calls, in order."""
    return [
        Call(c.get("id") or "", c["function"]["name"], c["function"].get("arguments") or "{}")
        for c in turn.get("tool_calls") or []
    ]


def pick(
    script: Sequence[Entry], index: int, payload: dict[str, Any] | None = None, after: Entry = DONE
) -> Turn:
    """Turn `index` of the script (a callable entry is given the request body `payload`);
    past its end, `after` (a final "Done." unless told otherwise)."""
    entry = script[index] if index < len(script) else after
    return entry(payload if payload is not None else {}) if callable(entry) else entry


def _text(content: Any) -> str:
    """The text of a system field: a string, a list of text blocks/parts, or a Content."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return _text(content.get("parts"))
    if isinstance(content, list):
        texts = (item.get("text") for item in content if isinstance(item, Mapping))
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


def system_of(payload: Mapping[str, Any]) -> str:
    """The system prompt of a request in any of the four formats: Chat Completions `system` /
    `developer` messages, Responses `instructions`, Messages `system`, Gemini
    `systemInstruction` (or `system_instruction`)."""
    texts = [
        _text(payload.get(key))
        for key in ("instructions", "system", "systemInstruction", "system_instruction")
    ]
    texts += [
        _text(m.get("content"))
        for m in payload.get("messages") or []
        if isinstance(m, Mapping) and m.get("role") in ("system", "developer")
    ]
    return "\n\n".join(text for text in texts if text)


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One named server-sent event (`event:` + `data:`), as Responses and Anthropic stream."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def stamp() -> str:
    """A unique suffix for ids: `resp_mock_<stamp>`."""
    return str(time.monotonic_ns())
