"""The mock model's script: assistant turns written once, in Chat Completions shape, and read
back as the parts every wire format is built from."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson

Turn = dict[str, Any]  # an assistant message: {"role", "content", "tool_calls"?}
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
        Call(c["id"], c["function"]["name"], c["function"].get("arguments") or "{}")
        for c in turn.get("tool_calls") or []
    ]


def pick(script: list[Turn], index: int) -> Turn:
    """Turn `index` of the script; past its end, a final "Done."."""
    return script[index] if index < len(script) else DONE


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One named server-sent event (`event:` + `data:`), as Responses and Anthropic stream."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def stamp() -> str:
    """A unique suffix for ids: `resp_mock_<stamp>`."""
    return str(time.monotonic_ns())
