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

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

import orjson

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.server.asgi import Refusal, Send, send_error
from recovery_proxy.server.litellm_models import load_models
from recovery_proxy.server.upstream import Outgoing
from recovery_proxy.wire import WireFormat
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


class LitellmUpstream:
    """The second upstream: the models of `--models`, called through litellm, with the same
    read and stream timeouts, overhead header and overhead metric as the HTTP upstream."""

    def __init__(
        self, models: Mapping[str, Mapping[str, Any]], settings: Settings, metrics: Metrics
    ) -> None:
        self.models = models
        self.read_timeout = settings.read_timeout
        self.chunk_timeout = settings.stream_chunk_timeout
        self.metrics = metrics

    @classmethod
    def from_settings(cls, settings: Settings, metrics: Metrics) -> LitellmUpstream | None:
        """The upstream for `settings.models`, or None without that file (ModelsError if bad)."""
        if settings.models is None:
            return None
        return cls(load_models(settings.models), settings, metrics)

    def takes(self, wire: WireFormat, payload: Mapping[str, Any]) -> bool:
        """Whether this upstream serves the request: Chat Completions for a listed model."""
        model = payload.get("model")
        return wire.name == "openai_chat" and isinstance(model, str) and model in self.models

    def check(self, payload: Mapping[str, Any]) -> None:
        """`Refusal` 400 for a routed request that tries to pick the destination or the key."""
        if refused := refusal(payload):
            raise Refusal(400, refused, "routing_not_allowed")

    async def send(self, outgoing: Outgoing, send: Send) -> None:
        """Call the provider through litellm and answer in OpenAI's shape."""
        payload = outgoing.payload
        if payload is None:
            assert isinstance(outgoing.body, bytes)
            payload = orjson.loads(outgoing.body)
        params = self.models[payload["model"]]
        stream = bool(payload.get("stream"))
        log.debug("litellm route: %s -> %s (stream=%s)", payload["model"], params["model"], stream)
        overhead = outgoing.forwarding(self.metrics)
        try:
            async with asyncio.timeout(self.read_timeout):
                response = await _import().acompletion(**completion_kwargs(payload, params))
        except TimeoutError:
            self.metrics.upstream_errors.labels("timeout").inc()
            log.warning(
                "litellm route %s: no response within %gs", params["model"], self.read_timeout
            )
            message = f"Upstream sent no response within {self.read_timeout:g}s."
            await send_error(send, 504, outgoing.wire.error_body(504, message, "upstream_timeout"))
            return
        except Exception as exc:  # litellm maps provider errors to its OpenAI-style exceptions
            status, body = _error(exc)
            log.warning("litellm route %s: %s (%d)", params["model"], type(exc).__name__, status)
            await send_error(send, status, body, _error_headers(exc))
            return
        extra = [
            *outgoing.extra_headers,
            (b"x-recovery-proxy-overhead-ms", b"%.3f" % (overhead * 1000)),
        ]
        if not stream:
            body = _dump(response)
            headers = [(b"content-type", b"application/json"), *extra]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers + extra})
        await self._stream(send, response, params["model"], outgoing.wire)

    async def _stream(self, send: Send, response: Any, model: str, wire: WireFormat) -> None:
        """Relay chunks as SSE frames; a stalled or broken stream ends with an error frame."""
        chunks = aiter(response)
        try:
            while True:
                async with asyncio.timeout(self.chunk_timeout):
                    chunk = await anext(chunks, None)
                if chunk is None:
                    break
                frame = b"data: " + _dump(chunk) + b"\n\n"
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        except TimeoutError:
            self.metrics.upstream_errors.labels("stream_timeout").inc()
            log.warning("litellm stream %s stalled", model)
            message = f"Upstream stream timeout: no data for {self.chunk_timeout:g}s"
            frame = wire.stream_error(message, "stream_timeout")
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        except Exception as exc:  # the stream broke after the status line: an SSE error frame
            self.metrics.upstream_errors.labels("stream_broken").inc()
            log.warning("litellm stream %s broke: %s", model, type(exc).__name__)
            frame = b"data: " + _error(exc)[1] + b"\n\n"
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
