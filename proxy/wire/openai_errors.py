"""OpenAI's error shape, shared by Chat Completions and Responses:
`{"error": {"message", "type", "param", "code"}}`; `kind` is the code."""

from __future__ import annotations

import orjson

TYPES = {400: "invalid_request_error", 413: "invalid_request_error", 409: "recovery_escalation"}
TYPES |= {401: "invalid_request_error", 502: "upstream_error", 504: "upstream_timeout"}


def error_body(status: int, message: str, kind: str) -> bytes:
    """The body of an error the proxy answers itself (upstream errors pass through)."""
    type_ = TYPES.get(status, "invalid_request_error" if status < 500 else "upstream_error")
    return orjson.dumps({"error": {"message": message, "type": type_, "param": None, "code": kind}})


def chat_stream_error(message: str, kind: str) -> bytes:
    """A Chat Completions SSE frame ending a broken stream: `data: {"error": ...}`."""
    return b"data: " + error_body(502, message, kind) + b"\n\n"


def responses_stream_error(message: str, kind: str) -> bytes:
    """A Responses SSE `error` event (its `sequence_number` is unknown to the proxy: 0)."""
    event = {"type": "error", "code": kind, "message": message, "param": None, "sequence_number": 0}
    return b"event: error\ndata: " + orjson.dumps(event) + b"\n\n"
