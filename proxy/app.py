"""FastAPI app factory: routes, lifespan (HTTP client, rewriter), fail-open rewrite."""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import orjson
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from proxy.config import Settings
from proxy.errors import error_response
from proxy.forward import Upstream, new_client, upstream_headers
from proxy.hook import UNCHANGED, ChatRequest, Rewrite, Rewriter
from proxy.metrics import Metrics
from proxy.wire import FORMATS, WireFormat, for_passthrough

log = logging.getLogger("recovery_proxy")

RewriterFactory = Callable[[Settings, Metrics, AsyncExitStack], Awaitable[Rewriter]]


class BodyTooLarge(Exception):
    """The request body is over `max_body_bytes`."""


async def read_body(request: Request, limit: int) -> bytes:
    """Read the whole body, refusing early once it passes `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        parts.append(chunk)
    return b"".join(parts)


def decode_body(body: bytes, encoding: str | None) -> bytes | None:
    """The JSON bytes of a possibly compressed body; None for an encoding we cannot read."""
    if not encoding or encoding == "identity":
        return body
    if encoding in ("gzip", "deflate"):
        try:
            return zlib.decompress(body, zlib.MAX_WBITS | 32)
        except zlib.error:
            return None
    return None


def create_app(settings: Settings, rewriter_factory: RewriterFactory | None = None) -> FastAPI:
    """Build the proxy. `rewriter_factory` builds the rewrite hook inside the lifespan;
    by default it is the recovery pipeline."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            client = new_client(settings)
            stack.push_async_callback(client.aclose)
            factory = rewriter_factory or _default_rewriter
            app.state.rewriter = await factory(settings, metrics, stack)
            app.state.upstreams = {
                wire.upstream: Upstream(settings, client, metrics, getattr(settings, wire.upstream))
                for wire in FORMATS
            }
            app.state.ready = True
            log.info("recovery-proxy ready, upstream %s", settings.upstream)
            yield
            app.state.ready = False

    app = FastAPI(title="recovery-proxy", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.ready = False

    @app.get("/healthz")
    async def healthz() -> Response:
        if not app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    def rewritten(wire: WireFormat, path: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler of one rewritten route of a wire format."""

        async def handler(request: Request) -> Response:
            return await rewrite_and_send(request, wire, path)

        return handler

    for wire in FORMATS:
        for path in wire.paths:
            app.add_api_route(path, rewritten(wire, path), methods=["POST"])

    async def rewrite_and_send(request: Request, wire: WireFormat, path: str) -> Response:
        started = time.perf_counter()
        metrics.requests.labels(wire.name).inc()
        try:
            body = await read_body(request, settings.max_body_bytes)
        except BodyTooLarge:
            return error_response(
                wire,
                413,
                f"Request body is over the proxy's limit of {settings.max_body_bytes} bytes.",
                "request_too_large",
            )
        rewrite = UNCHANGED
        encoding = request.headers.get("content-encoding", "").strip().lower() or None
        plain = decode_body(body, encoding)
        if plain is not None:
            try:
                payload = orjson.loads(plain)
            except orjson.JSONDecodeError as exc:
                return error_response(
                    wire,
                    400,
                    f"We could not parse the JSON body of your request: {exc}",
                    "invalid_json",
                )
            if not isinstance(payload, dict):
                return error_response(
                    wire,
                    400,
                    f"The request body must be a JSON object, got {type(payload).__name__}.",
                    "invalid_body",
                )
            rewrite = await _safe_rewrite(app, ChatRequest(plain, payload, request.headers, wire))
            if rewrite.reject is not None:
                return rewrite.reject
        new_body = rewrite.body
        extra = {"x-recovery-proxy-injected": str(rewrite.injected)}
        return await app.state.upstreams[wire.upstream].send(
            "POST",
            wire.upstream_path(path),
            request.url.query,
            upstream_headers(request.headers, body_changed=new_body is not None),
            body if new_body is None else new_body,
            extra,
            started,
            wire,
        )

    @app.api_route(
        "/v1/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    )
    async def passthrough(path: str, request: Request) -> Response:
        started = time.perf_counter()
        metrics.requests.labels("passthrough").inc()
        has_body = "content-length" in request.headers or "transfer-encoding" in request.headers
        wire = for_passthrough(f"/v1/{path}", request.headers)
        return await app.state.upstreams[wire.upstream].send(
            request.method,
            wire.upstream_path(f"/v1/{path}"),
            request.url.query,
            upstream_headers(request.headers, body_changed=False),
            request.stream() if has_body else b"",
            {},
            started,
            wire,
        )

    return app


async def _safe_rewrite(app: FastAPI, request: ChatRequest) -> Rewrite:
    """Run the rewrite hook; on any exception forward the original (fail-open)."""
    try:
        return await app.state.rewriter(request)
    except Exception as exc:  # fail-open is the contract: never break the agent
        app.state.metrics.rewrite_failures.inc()
        log.error("rewrite failed, forwarding unchanged: %s: %s", type(exc).__name__, exc)
        return UNCHANGED


async def _default_rewriter(
    settings: Settings, metrics: Metrics, stack: AsyncExitStack
) -> Rewriter:
    """The recovery pipeline: rules (hot reloaded), session store, webhook client."""
    from proxy import tokens
    from proxy.pipeline import RecoveryPipeline
    from proxy.rules_watch import RulesHolder
    from proxy.store import open_store

    rules = RulesHolder(settings.rules, metrics)
    if settings.hot_reload:
        rules.start()
        stack.push_async_callback(rules.stop)
    store = await open_store(settings)
    stack.push_async_callback(store.close)
    client = httpx.AsyncClient(timeout=5.0, trust_env=False)
    stack.push_async_callback(client.aclose)
    await asyncio.to_thread(tokens.warm_up)
    return RecoveryPipeline(settings, rules, store, metrics, client)
