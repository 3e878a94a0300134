"""The wire-format protocol: what every API format gives the pipeline and the HTTP layer.

A format reads its request body into the neutral `Conversation`, splices a `Plan` back into
the body, and owns the shape of the errors the proxy itself answers with. It makes no
decisions: that is the core's job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from recovery_proxy import tokens
from recovery_proxy.core.conversation import Conversation
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.reply import Reply
from recovery_proxy.rules.model import Placement

Payload = dict[str, Any]
Headers = Mapping[str, str]


def exact_paths_only(path: str) -> bool:
    """Formats whose routes are all in `paths`."""
    return False


def never_compacting(payload: Payload, path: str, tokens: int) -> bool:
    """Formats whose API has no provider-side compaction."""
    return False


def no_reply(body: bytes, sse: bool) -> Reply | None:
    """Formats whose responses are not read."""
    return None


def sse_data(body: bytes) -> Iterator[tuple[str, Any]]:
    """(event name, parsed JSON data) of each server-sent event in `body`; events whose data
    is not JSON (`[DONE]`, a comment, a truncated last event) are skipped."""
    for frame in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        name, data = "", []
        for line in frame.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[5:].strip())
            elif line.startswith(b"event:"):
                name = line[6:].strip().decode("utf-8", "replace")
        if not data:
            continue
        try:
            yield name, orjson.loads(b"\n".join(data))
        except orjson.JSONDecodeError:
            continue


def json_reply(body: bytes) -> Any:
    """A JSON response body, or None."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def listed(node: Any, key: str) -> list[Any]:
    """`node[key]` when it is a list, else []."""
    value = node.get(key) if isinstance(node, Mapping) else None
    return value if isinstance(value, list) else []


def count(node: Any, key: str) -> int:
    """`node[key]` when it is a non-negative int, else 0 (usage fields)."""
    value = node.get(key) if isinstance(node, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def no_session_hint(headers: Headers, payload: Payload) -> str | None:
    """Formats without a session convention of their own."""
    return None


class CallQueue:
    """The calls of one assistant turn whose ids repeat (`""`, `call_0` from local model
    servers), each answered once, in order: parallel calls that share an id each get their own
    result instead of all naming the last one. Built only for such turns (`of`)."""

    __slots__ = ("calls",)

    def __init__(self, calls: dict[str, list[Any]]) -> None:
        self.calls = calls

    @classmethod
    def of(cls, raws: Any, id_of: Callable[[Any], str | None]) -> CallQueue | None:
        """A queue for a turn's raw calls (`id_of` None: not a call), or None when no id
        repeats (the common case)."""
        if not isinstance(raws, list) or len(raws) < 2:
            return None
        calls: dict[str, list[Any]] = {}
        count = 0
        for raw in raws:
            call_id = id_of(raw) if isinstance(raw, dict) else None
            if call_id is not None:
                calls.setdefault(call_id, []).append(raw)
                count += 1
        return cls(calls) if len(calls) < count else None

    def answer(self, call_id: str) -> Any:
        """The first unanswered call with this id in the turn, or None."""
        queue = self.calls.get(call_id)
        return queue.pop(0) if queue else None


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One API format. Functions, not methods: each format is a module of plain functions."""

    name: str  # metrics label and log name: "openai_chat"
    paths: tuple[str, ...]  # the POST routes it rewrites: ("/v1/chat/completions",)
    upstream: str  # the Settings field holding its upstream base URL
    upstream_prefix: str  # the part of a route the upstream base already ends with ("/v1")
    parse: Callable[[Payload], Conversation | None]  # None: nothing to work on
    splice: Callable[[Payload, Plan, Placement], Payload]  # a new payload; the input untouched
    error_body: Callable[[int, str, str], bytes]  # (status, message, kind) -> JSON body
    stream_error: Callable[[str, str], bytes]  # (message, kind) -> one SSE event
    count_tokens: Callable[[Payload, str], int]  # exact-ish prompt tokens (only near the window)
    session_hint: Callable[[Headers, Payload], str | None] = no_session_hint
    passthrough_prefixes: tuple[str, ...] = ()  # other routes of this API (to its upstream)
    marker_headers: tuple[str, ...] = ()  # a request header that only this API's clients send
    # routes with a variable part (Gemini's model in the path), tried after the exact `paths`
    path_match: Callable[[str], bool] = exact_paths_only
    # the headers a session is scoped by, given the query string (a key sent as `?key=`)
    scope_headers: Callable[[dict[str, str], bytes], dict[str, str]] | None = None
    # The model a route path names, for APIs whose body does not (Gemini); its context window
    # sets the token budget.
    path_model: Callable[[str], str] | None = None
    # Whether a request (body, route path, estimated prompt tokens) asks the provider to
    # compact: its splice then adds `Plan.ledger` to the compaction instructions.
    compacting: Callable[[Payload, str, int], bool] = never_compacting
    # A relayed response (the bytes, whether they are an event stream) read into a Reply:
    # calls, usage, stop reason. Called after the last byte went out; may raise (ignored).
    read_reply: Callable[[bytes, bool], Reply | None] = no_reply

    def upstream_path(self, path: str) -> str:
        """The path to send upstream for a route path: `/v1/responses` -> `/responses`."""
        return path.removeprefix(self.upstream_prefix)


TOKEN_KEYS = frozenset(
    {
        "text",
        "content",
        "output",
        "input",
        "arguments",
        "instructions",
        "system",
        "stdout",
        "stderr",
    }
)


def _strings(node: Any, key: str = "content") -> Iterator[str]:
    """The prose of a JSON body: strings under text-bearing keys (no image data, no ids)."""
    if isinstance(node, str):
        if key in TOKEN_KEYS:
            yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, key)
    elif isinstance(node, dict):
        for k, value in node.items():
            yield from _strings(value, k)


def text_tokens(payload: Payload, fields: tuple[str, ...], model: str) -> int:
    """Tokens of the prose under `fields` of a body (formats without a message list)."""
    text = "\n".join(s for field in fields for s in _strings(payload.get(field), field))
    return tokens.count_messages([{"role": "user", "content": text}], model)


def splice_parts(
    items: list[Any],
    field: str,
    appends: Mapping[Any, str],
    mode: str,
    with_text: Callable[[Any, str], Any],
    as_part: Callable[[str], Any],
) -> list[Any]:
    """`items` (messages, contents) with each text placed after part `j` of item `i` (keys of
    `appends` are `(i, j)`): inside that part (`append` mode, via `with_text`) or as one new
    part closing the item (`message` mode, via `as_part`). Untouched items are shared."""
    out = list(items)
    by_item: dict[int, list[tuple[int, str]]] = {}
    for (i, j), text in sorted(appends.items()):
        by_item.setdefault(i, []).append((j, text))
    for i, blocks in by_item.items():
        parts = list(out[i][field])
        if mode == "append":
            for j, text in blocks:
                parts[j] = with_text(parts[j], text)
        else:
            parts.append(as_part("\n\n".join(text for _, text in blocks)))
        out[i] = {**out[i], field: parts}
    return out
