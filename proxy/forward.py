"""Upstream forwarding: one pooled httpx client, raw streaming passthrough both ways."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping

import httpx
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from proxy.config import Settings
from proxy.errors import error_response
from proxy.metrics import Metrics
from proxy.wire import DEFAULT, WireFormat

log = logging.getLogger("recovery_proxy")

# RFC 9110 §7.6.1 hop-by-hop headers, plus the ones httpx recomputes for the new hop.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
RESPONSE_DROP = HOP_BY_HOP - {"content-length"}


def new_client(settings: Settings) -> httpx.AsyncClient:
    """The shared pooled client; created once in the app's lifespan."""
    timeout = httpx.Timeout(
        connect=settings.connect_timeout,
        read=max(settings.read_timeout, settings.stream_chunk_timeout),
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )
    limits = httpx.Limits(
        max_connections=settings.max_connections,
        max_keepalive_connections=settings.max_keepalive_connections,
    )
    return httpx.AsyncClient(
        timeout=timeout, limits=limits, follow_redirects=False, trust_env=False
    )


def upstream_headers(headers: Mapping[str, str], body_changed: bool) -> list[tuple[str, str]]:
    """Request headers for the upstream hop: everything but hop-by-hop headers.

    Without an `accept-encoding` from the client we ask for `identity`, so the client never
    receives an encoding it did not ask for (httpx would otherwise add gzip).
    """
    out = [
        (k, v)
        for k, v in headers.items()
        if k.lower() not in HOP_BY_HOP and not (body_changed and k.lower() == "content-encoding")
    ]
    if not any(k.lower() == "accept-encoding" for k, _ in out):
        out.append(("accept-encoding", "identity"))
    return out


def response_headers(headers: httpx.Headers) -> dict[str, str]:
    """Upstream response headers minus hop-by-hop ones; bodies are relayed raw, so
    `content-encoding` and `content-length` stay consistent with the bytes."""
    out: dict[str, str] = {}
    for k, v in headers.multi_items():
        if k.lower() in RESPONSE_DROP:
            continue
        out[k] = f"{out[k]}, {v}" if k in out else v
    return out


class Upstream:
    """Sends one request upstream and relays the answer without parsing it."""

    def __init__(
        self,
        settings: Settings,
        client: httpx.AsyncClient,
        metrics: Metrics,
        base: str | None = None,
    ) -> None:
        self.base = base or settings.upstream
        self.chunk_timeout = settings.stream_chunk_timeout
        self.client = client
        self.metrics = metrics

    def url(self, path: str, query: str) -> str:
        """`path` follows `/v1`: `/chat/completions` -> `{upstream}/chat/completions`."""
        return f"{self.base}{path}" + (f"?{query}" if query else "")

    async def send(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        content: bytes | AsyncIterator[bytes],
        extra_headers: Mapping[str, str],
        started: float,
        wire: WireFormat = DEFAULT,
    ) -> Response:
        """Forward and stream the response back; 502/504 errors in the shape of `wire`."""
        request = self.client.build_request(
            method, self.url(path, query), headers=headers, content=content
        )
        overhead = time.perf_counter() - started
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            self.metrics.upstream_errors.labels("timeout").inc()
            log.warning("upstream timeout: %s %s (%s)", method, path, type(exc).__name__)
            return error_response(
                wire, 504, f"Upstream timed out: {type(exc).__name__}", "upstream_timeout"
            )
        except httpx.HTTPError as exc:
            self.metrics.upstream_errors.labels("unreachable").inc()
            log.warning("upstream unreachable: %s %s (%s)", method, path, exc)
            return error_response(wire, 502, f"Upstream unreachable: {exc}", "upstream_unreachable")
        headers_out = response_headers(response.headers)
        headers_out.update(extra_headers)
        headers_out["x-recovery-proxy-overhead-ms"] = f"{overhead * 1000:.3f}"
        self.metrics.overhead.observe(overhead)
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        plain = not response.headers.get("content-encoding")
        return StreamingResponse(
            self._relay(response, sse and plain, wire),
            status_code=response.status_code,
            headers=headers_out,
            background=BackgroundTask(response.aclose),
        )

    async def _relay(
        self, response: httpx.Response, sse: bool, wire: WireFormat
    ) -> AsyncIterator[bytes]:
        """Yield raw chunks as they arrive; a stalled stream ends with an SSE error event."""
        chunks = response.aiter_raw()
        try:
            while True:
                try:
                    chunk = await asyncio.wait_for(chunks.__anext__(), self.chunk_timeout)
                except StopAsyncIteration:
                    return
                yield chunk
        except (TimeoutError, httpx.HTTPError) as exc:
            kind = "timeout" if isinstance(exc, TimeoutError | httpx.TimeoutException) else "broken"
            self.metrics.upstream_errors.labels(f"stream_{kind}").inc()
            log.warning("upstream stream %s: %s", kind, type(exc).__name__)
            if sse:
                message = f"Upstream stream {kind}: no data for {self.chunk_timeout:g}s"
                if kind == "broken":
                    message = f"Upstream stream broken: {type(exc).__name__}"
                yield wire.stream_error(message, f"stream_{kind}")
        finally:
            await response.aclose()
