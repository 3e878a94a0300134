"""The neutral view of a request: tool calls, tool results, system text. No wire details.

Wire adapters build these objects; the core reads them. A result's `position` is opaque to
the core: the adapter hands it in and gets it back, as a key of `Plan.appends`.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import orjson

Position = Hashable  # where a result sits in the request; only its adapter can read it


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


CallReader = Callable[[Any], "ToolCall | None"]
TextReader = Callable[[Any], str]


class ToolResult:
    """What a tool returned, where it sits in the request, and the call it answers.

    `text` is extracted from the raw content on first use (by the adapter's `read_text`, else
    `text_of`), and the call may be handed in raw with the adapter's `read_call` to build it
    on first use: most results in a long conversation were judged on an earlier turn and are
    never read again."""

    __slots__ = (
        "_call",
        "_read_call",
        "_read_text",
        "_text",
        "_wire_call",
        "call_id",
        "content",
        "is_error",
        "key",
        "position",
    )

    def __init__(
        self,
        call_id: str,
        content: Any,
        position: Position,
        call: Any = None,  # a ToolCall, or a raw call that `read_call` turns into one
        is_error: bool | None = None,  # an explicit wire flag; None: judge the text
        read_call: CallReader | None = None,
        read_text: TextReader | None = None,
    ) -> None:
        self.call_id = call_id
        self.content = content
        self.position = position
        self._call = call
        self._wire_call = call  # as the wire gave it, never replaced: the identity digests it
        self._read_call = read_call
        self._read_text = read_text
        self.is_error = is_error
        self._text: str | None = None
        self.key = call_id  # the result's identity, set by `identify()`

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = (self._read_text or text_of)(self.content)
        return self._text

    @property
    def call(self) -> ToolCall | None:
        raw = self._call
        if raw is not None and not isinstance(raw, ToolCall):
            raw = self._call = self._read_call(raw) if self._read_call else None
        return raw

    def call_bytes(self) -> bytes:
        """The call this result answers, as bytes to digest (the raw wire call when it is one:
        no ToolCall is built for it)."""
        raw = self._wire_call  # not `_call`, which reading `.call` replaces: the bytes (and the
        if raw is None:  # key) must not depend on whether the call was read before
            return b""
        if isinstance(raw, ToolCall):
            arguments = raw.raw_arguments
            dumped = arguments.encode() if isinstance(arguments, str) else orjson.dumps(arguments)
            return raw.name.encode() + b"\0" + dumped
        try:
            return orjson.dumps(raw)
        except TypeError:  # not JSON (a raw object of some other kind): its type only
            return type(raw).__name__.encode()

    @property
    def tool(self) -> str:
        call = self.call
        return call.name if call else "unknown_tool_call"


STRONG_ID = 16  # ids this long are random per call (OpenAI, Anthropic, Responses): unique


def identify(results: list[ToolResult]) -> None:
    """Give each result its identity. A long id is unique and is the identity by itself. A
    short or empty one may be reused (local model servers send `call_0` every turn, or `""`):
    its identity adds a digest of the call it answers (tool name and arguments), and `#n` for
    the n-th result of one identity in the request. The output is left out on purpose: agents
    rewrite old outputs (truncated, `[Old tool result content cleared]`), and a rewritten
    output is still the same result."""
    counts: dict[str, int] = {}
    for result in results:
        if len(result.call_id) >= STRONG_ID:
            continue  # the default key: the id
        base = f"{result.call_id}:{zlib.crc32(result.call_bytes()):08x}"
        n = counts[base] = counts.get(base, 0) + 1
        result.key = base if n == 1 else f"{base}#{n}"


HEX = frozenset("0123456789abcdef")


def call_id_of(key: str) -> str:
    """The call id a result's identity (`identify`) was made from."""
    base, sep, tail = key.rpartition(":")
    crc = tail.partition("#")[0]
    if sep and len(base) < STRONG_ID and len(crc) == 8 and all(c in HEX for c in crc):
        return base
    return key


def text_of(content: Any) -> str:
    """The text of a content: a string, or the `text` of each part of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def digest(text: str) -> str:
    """A short stable digest (thread fingerprints, user-message anchors)."""
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


@dataclass(slots=True)
class Conversation:
    """Everything the core needs to know about one request.

    The history fields describe the items as sent, in the adapter's own units (messages,
    input items): the core only compares them between requests of one thread."""

    model: str
    system: str  # without volatile parts (a per-request billing line is not system text)
    first_user: str
    results: list[ToolResult] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # system and user texts (marker scan)
    length: int = 0  # items in the history as sent
    user_anchors: list[tuple[int, str]] = field(default_factory=list)  # (item number, digest)
    ends_with_user: bool = False  # the last item is a user message (an edit or a re-send)
    ends_with_result: bool = False  # the newest tool result is the last item
    partial: bool = False  # the server holds earlier turns: absent items prove nothing
    thread: str = ""  # digest of system prompt + first user message
    batch_start: int = 0  # results from this index on answer the latest assistant turn
    last_human: str = ""  # the latest user message a person typed (not tool output as text)
    # Assistant texts: (tool results before it, the human message before it, the text).
    assistant_texts: list[tuple[int, str, str]] = field(default_factory=list)

    def human_said(self, text: str) -> None:
        """A person (or the harness, in the user role) typed `text`."""
        self.last_human = text

    def assistant_said(self, text: str) -> None:
        """The model wrote `text` (empty texts, as with tool-call-only turns, are skipped)."""
        if text.strip():
            self.assistant_texts.append((len(self.results), self.last_human, text))

    def fingerprint(self) -> None:
        """Set `thread` from the system text and the first user message."""
        self.thread = digest(self.system + "\0" + self.first_user)
