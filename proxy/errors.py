"""Errors the proxy answers itself (never an upstream error, which passes through), in the
shape of the request's wire format."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response

from proxy.wire import WireFormat


def error_response(
    wire: WireFormat,
    status: int,
    message: str,
    kind: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """`kind` names the error (`invalid_json`, `upstream_timeout`, ...); the format decides
    how it shows (OpenAI's `code`, Anthropic's `error.type`)."""
    return Response(
        wire.error_body(status, message, kind),
        status_code=status,
        media_type="application/json",
        headers=dict(headers or {}),
    )
