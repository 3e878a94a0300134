"""Session keys: which conversation a request belongs to, scoped by the caller's credential."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from recovery_proxy.rules.model import Sessions

# The one list of headers that carry a caller's credential (LiteLLM's own key last): the
# tenant hash is taken from the first one present; none is ever logged or stored.
CREDENTIAL_HEADERS = (
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "x-litellm-api-key",
)
FINGERPRINT = "fp:"  # the prefix of a fingerprint id: no session was named


def tenant_of(headers: Mapping[str, str], salt: str) -> str:
    """A salted hash of the caller's credential; the credential itself is never kept."""
    credential = next((headers[h] for h in CREDENTIAL_HEADERS if headers.get(h)), "")
    return hashlib.sha256(f"{salt}\0{credential}".encode()).hexdigest()[:16]


def _dotted(payload: Mapping[str, Any], path: str) -> str | None:
    node: Any = payload
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, str | int) and not isinstance(node, bool) and str(node):
        return str(node)
    return None


def session_id(
    headers: Mapping[str, str],
    payload: Mapping[str, Any],
    sessions: Sessions,
    fingerprint: str,
    hint: str | None = None,
    path: str | None = None,
) -> str:
    """The id a `/s/{session}/` path named (the same as a header with that id), then the first
    configured header, then any `x-*-session-id` header, then the wire format's own hint
    (Claude Code's `metadata.user_id`), then a body field, then a late header (Codex's
    `x-client-request-id`, its thread id), then a fingerprint of the system prompt and first
    user message (`fp:`, which continuity may link to an earlier one)."""
    if path:
        return named(path)
    for name in sessions.headers:
        value = headers.get(name)
        if value:
            return named(value)
    suffix = sessions.header_glob_suffix.lower()
    if suffix:
        for name, value in headers.items():
            lower = name.lower()
            if lower.startswith("x-") and lower.endswith(suffix) and value:
                return named(value)
    if hint:
        return f"w:{hint}"
    for field in sessions.body_fields:
        value = _dotted(payload, field)
        if value:
            return f"b:{value}"
    for name in sessions.late_headers:
        value = headers.get(name)
        if value:
            return named(value)
    return f"{FINGERPRINT}{fingerprint}"


MAX_NAME = 120
FINGERPRINT_NAME = "fingerprint: "  # a fingerprinted session's name: this, then its first user line


def display_name(raw: str, first_user: str) -> str:
    """A session's name as people know it: the id its agent or user gave (path, header, the
    wire's own hint, a body field), or, for a fingerprinted one, its first user line."""
    kind, _, value = raw.partition(":")
    if raw.startswith(FINGERPRINT):
        line = first_user.strip().split("\n", 1)[0]
        return f"{FINGERPRINT_NAME}{line}"[:MAX_NAME]
    return (value if kind in ("h", "w", "b") else raw)[:MAX_NAME]


def named(session: str) -> str:
    """The id of a session the client named (by path or header), before scoping."""
    return f"h:{session}"


def scoped(tenant: str, raw: str) -> str:
    """`tenant:digest`: one tenant can never address another tenant's records."""
    return f"{tenant}:{hashlib.sha256(raw.encode()).hexdigest()[:24]}"


KEY = re.compile(r"[0-9a-f]{16}:[0-9a-f]{24}")  # what `scoped` makes


def is_key(text: str) -> bool:
    """Whether `text` has the shape of a session key (`tenant:digest`)."""
    return KEY.fullmatch(text) is not None
