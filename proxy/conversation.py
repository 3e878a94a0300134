"""The neutral view of a request: tool calls, tool results, system text. No wire details."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


class ToolCall:
    """A call the model made. `arguments` is parsed on first use (most calls in a long
    conversation were judged on an earlier turn and never need it): a JSON object, else {}."""

    __slots__ = ("_arguments", "id", "name", "raw_arguments")

    def __init__(self, id: str, name: str, raw_arguments: Any) -> None:
        self.id = id
        self.name = name
        self.raw_arguments = raw_arguments
        self._arguments: dict[str, Any] | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        if self._arguments is None:
            raw = self.raw_arguments
            if isinstance(raw, str):
                try:
                    raw = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    raw = None
            self._arguments = raw if isinstance(raw, dict) else {}
        return self._arguments


@dataclass(slots=True)
class ToolResult:
    """What a tool returned, where it sits in the request, and the call it answers."""

    call_id: str
    text: str
    index: int
    call: ToolCall | None = None
    is_error: bool | None = None  # an explicit wire flag; None: judge the text
    offset: int | None = None  # inside a longer text (smolagents): where its block goes

    @property
    def tool(self) -> str:
        return self.call.name if self.call else "unknown_tool_call"


@dataclass(slots=True)
class Conversation:
    """Everything the core needs to know about one request."""

    model: str
    system: str
    first_user: str
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # system and user texts (marker scan)
    message_count: int = 0
    last_role: str = ""
    user_anchors: list[tuple[int, str]] = field(default_factory=list)  # (index, digest)
    thread: str = ""  # digest of system prompt + first user message
