"""Any provider through litellm: a Chat Completions request whose `model` is in `--models` is
sent with `litellm.acompletion` and answered in OpenAI's shapes (`chat.completion`, or
`chat.completion.chunk` SSE), errors with the provider's status.

Where a request goes and with which key is configuration: the body fields in `REFUSED` are a
400, fields that are not Chat Completions parameters are dropped (litellm would hand them to
the provider), and the client's headers (its `Authorization` scopes the session) are never
sent on. litellm is imported on the first routed request, never at start-up, with its debug
logging off (it prints conversation text).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import orjson

from recovery_proxy.server.asgi import Send, send_error
from recovery_proxy.wire.openai_errors import error_body

log = logging.getLogger("recovery_proxy")
REFUSED = frozenset(
    {
        "api_base",
        "base_url",
        "api_key",
        "extra_headers",
        "custom_llm_provider",
        "api_version",
        "organization",
        "deployment_id",
        "default_headers",
        "headers",
    }
)
REFUSED_PREFIXES = ("aws_", "vertex_", "azure_")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
ERROR_TYPES |= {404: "not_found_error", 408: "timeout", 422: "invalid_request_error"}
ERROR_TYPES |= {429: "rate_limit_error"}
PASSED_HEADERS = ("retry-after", "x-request-id", "request-id")
_litellm: Any = None


def refusal(payload: Mapping[str, Any]) -> str | None:
    """Why a routed request is refused (it tries to pick the destination or key), or None."""
    chosen = sorted(k for k in payload if k in REFUSED or k.startswith(REFUSED_PREFIXES))
    if not chosen:
        return None
    return (
        f"The request sets {', '.join(chosen)}: this proxy routes model "
        f"{payload.get('model')!r} itself; the provider and its key are server configuration."
    )


def _import() -> Any:
    """litellm, imported once, quiet."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.set_verbose = False
        litellm.telemetry = False
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _litellm = litellm
    return _litellm


def completion_kwargs(payload: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments for `litellm.acompletion`: the request's Chat Completions parameters,
    then the configured `litellm_params` (the model, the key, the base) over them."""
    litellm = _import()
    allowed = set(litellm.OPENAI_CHAT_COMPLETION_PARAMS) - REFUSED
    kwargs = {k: v for k, v in payload.items() if k in allowed}
    kwargs["messages"] = payload.get("messages")
    return {**kwargs, **params}


def _status(exc: Exception) -> int:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and 400 <= status <= 599 else 502


def _error_headers(exc: Exception) -> list[tuple[bytes, bytes]]:
    """The provider's `retry-after` and request id, when litellm kept them."""
    raw = getattr(exc, "litellm_response_headers", None)
    headers = getattr(raw, "items", None)
    if headers is None:
        return []
    return [
        (k.lower().encode(), str(v).encode())
        for k, v in headers()
        if isinstance(k, str) and k.lower() in PASSED_HEADERS
    ]


def _error(exc: Exception) -> tuple[int, bytes]:
    """An OpenAI-shaped error body with the provider's status."""
    status = _status(exc)
    message = str(getattr(exc, "message", "") or exc)
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = orjson.loads(error_body(status, message, type(exc).__name__))
    body["error"]["type"] = kind
    return status, orjson.dumps(body)


def _dump(chunk: Any) -> bytes:
    """A litellm response or chunk as OpenAI JSON."""
    return chunk.model_dump_json(exclude_none=True).encode()


async def respond(
    send: Send,
    payload: Mapping[str, Any],
    params: Mapping[str, Any],
    extra_headers: list[tuple[bytes, bytes]],
) -> None:
    """Call the provider through litellm and answer in OpenAI's shape."""
    stream = bool(payload.get("stream"))
    log.debug(
        "litellm route: %s -> %s (stream=%s)", payload.get("model"), params.get("model"), stream
    )
    try:
        response = await _import().acompletion(**completion_kwargs(payload, params))
    except Exception as exc:  # litellm maps provider errors to its OpenAI-style exceptions
        status, body = _error(exc)
        log.warning("litellm route %s: %s (%d)", params.get("model"), type(exc).__name__, status)
        await send_error(send, status, body, _error_headers(exc))
        return
    if not stream:
        body = _dump(response)
        headers = [(b"content-type", b"application/json"), *extra_headers]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers + extra_headers})
    try:
        async for chunk in response:
            frame = b"data: " + _dump(chunk) + b"\n\n"
            await send({"type": "http.response.body", "body": frame, "more_body": True})
    except Exception as exc:  # the stream broke after the status line: an SSE error frame
        log.warning("litellm stream %s broke: %s", params.get("model"), type(exc).__name__)
        frame = b"data: " + _error(exc)[1] + b"\n\n"
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
