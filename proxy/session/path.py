"""Path-scoped sessions: `/s/{session}/v1/...` names a session without any header.

The zero-code way for agents that cannot send headers: `OPENAI_BASE_URL=http://HOST/s/ID/v1`,
`ANTHROPIC_BASE_URL=http://HOST/s/ID`. The prefix is removed before routing and forwarding,
and the id counts exactly like a session header carrying it.
"""

from __future__ import annotations

import string
from typing import Any

PREFIX = "/s/"
MAX_ID = 128
ID_CHARS = frozenset(string.ascii_letters + string.digits + "._:-")


class BadSessionPath(ValueError):
    """A `/s/...` path whose session id is empty, too long or has characters outside
    `A-Z a-z 0-9 . _ : -`, or that names no path after the id."""


def valid_id(session: str) -> bool:
    """A session id a path may carry: 1-128 of `A-Z a-z 0-9 . _ : -`, not `.` or `..`."""
    return (
        0 < len(session) <= MAX_ID
        and session not in (".", "..")
        and all(char in ID_CHARS for char in session)
    )


def split(scope: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`(session, scope without the prefix)` for a request under `/s/{session}/`."""
    path: str = scope["path"]
    session, slash, rest = path[len(PREFIX) :].partition("/")
    if not valid_id(session):
        raise BadSessionPath(f"The session id in the path is not valid: {session[:40]!r}.")
    if not slash:
        raise BadSessionPath("A session path needs the API path after the id: /s/ID/v1/...")
    raw: bytes = scope.get("raw_path") or path.encode()
    head = f"{PREFIX}{session}/".encode()
    if not raw.startswith(head):
        raise BadSessionPath("The session id in the path must not be percent-encoded.")
    return session, {**scope, "path": "/" + rest, "raw_path": raw[len(head) - 1 :]}
