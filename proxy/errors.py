"""OpenAI-shaped error bodies: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from starlette.responses import Response


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> bytes:
    """Serialise one error the way OpenAI's API does."""
    return orjson.dumps(
        {"error": {"message": message, "type": type_, "param": param, "code": code}}
    )


def error_response(
    status: int,
    message: str,
    type_: str,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """An error answered by the proxy itself (never an upstream error, which passes through)."""
    return Response(
        error_body(message, type_, code, param),
        status_code=status,
        media_type="application/json",
        headers=dict(headers or {}),
    )
