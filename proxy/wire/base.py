"""The wire-format protocol: what every API format gives the pipeline and the HTTP layer.

A format reads its request body into the neutral `Conversation`, splices a `Plan` back into
the body, and owns the shape of the errors the proxy itself answers with. It makes no
decisions: that is the core's job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from proxy import tokens
from proxy.core.conversation import Conversation
from proxy.core.plan import Plan
from proxy.rules import Placement

Payload = dict[str, Any]
Headers = Mapping[str, str]


def exact_paths_only(path: str) -> bool:
    """Formats whose routes are all in `paths`."""
    return False


def no_session_hint(headers: Headers, payload: Payload) -> str | None:
    """Formats without a session convention of their own."""
    return None


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
    """Tokens of the prose under `fields` of a body (formats litellm cannot count)."""
    text = "\n".join(s for field in fields for s in _strings(payload.get(field), field))
    return tokens.count_messages([{"role": "user", "content": text}], model)
