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


class ToolResult:
    """What a tool returned, where it sits in the request, and the call it answers.
    `text` is extracted from the raw content on first use: most results in a long
    conversation were judged on an earlier turn and are never read again."""

    __slots__ = ("_call", "_text", "call_id", "content", "index", "is_error", "offset")

    def __init__(
        self,
        call_id: str,
        content: Any,
        index: int,
        call: ToolCall | dict[str, Any] | None = None,  # a raw OpenAI tool call is read lazily
        is_error: bool | None = None,  # an explicit wire flag; None: judge the text
        offset: int | None = None,  # inside a longer text (smolagents): where its block goes
    ) -> None:
        self.call_id = call_id
        self.content = content
        self.index = index
        self._call = call
        self.is_error = is_error
        self.offset = offset
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = text_of(self.content)
        return self._text

    @property
    def call(self) -> ToolCall | None:
        raw = self._call
        if isinstance(raw, dict):
            fn = raw.get("function")
            fn = fn if isinstance(fn, dict) else {}
            raw = ToolCall(str(raw.get("id", "")), str(fn.get("name", "")), fn.get("arguments"))
            self._call = raw
        return raw

    @property
    def tool(self) -> str:
        call = self.call
        return call.name if call else "unknown_tool_call"


def text_of(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


@dataclass(slots=True)
class Conversation:
    """Everything the core needs to know about one request."""

    model: str
    system: str
    first_user: str
    results: list[ToolResult] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # system and user texts (marker scan)
    message_count: int = 0
    last_role: str = ""
    user_anchors: list[tuple[int, str]] = field(default_factory=list)  # (index, digest)
    thread: str = ""  # digest of system prompt + first user message
