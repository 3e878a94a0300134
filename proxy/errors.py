"""OpenAI-shaped error bodies: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

import orjson

# The `type` OpenAI's API would give each status the proxy answers with itself.
OPENAI_TYPES = {
    400: "invalid_request_error",
    409: "recovery_escalation",
    413: "invalid_request_error",
    502: "upstream_error",
    504: "upstream_timeout",
}


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> bytes:
    """Serialise one error the way OpenAI's API does."""
    return orjson.dumps(
        {"error": {"message": message, "type": type_, "param": param, "code": code}}
    )


def openai_error(status: int, message: str, code: str) -> bytes:
    """An error the proxy answers itself (upstream errors pass through untouched)."""
    return error_body(message, OPENAI_TYPES.get(status, "api_error"), code)
