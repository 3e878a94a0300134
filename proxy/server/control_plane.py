"""The control plane: health, metrics and (with an admin token) /admin.

It also owns the lifespan the server runs; proxied routes never reach it (`server/app.py`).
Health and metrics are two Starlette routes; FastAPI, which the admin API is built on, is
imported only when that API is switched on: importing it costs ~0.11 s of a ~0.75 s start-up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recovery_proxy.server.state import ProxyState


async def _http_error(request: Request, exc: Exception) -> Response:
    """404, 405 and friends as `{"detail": ...}` JSON, the shape FastAPI gives them too."""
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, exc.status_code, exc.headers)


def control_app(
    state: ProxyState, proxy_lifespan: Callable[[], AbstractAsyncContextManager[None]]
) -> Any:
    """Health, metrics and (with an admin token) /admin over the proxy's `state`; runs the
    proxy's lifespan as the server's. No OpenAPI schema or docs are served."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with proxy_lifespan():
            yield

    async def healthz(request: Request) -> Response:
        if not state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        """Readiness: started, and the session store answers (else stateless recovery)."""
        if not state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        problem = await state.store_reachable()
        if problem is not None:
            body = {"status": "degraded", "store": "unreachable", "detail": problem}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "store": "ok"})

    async def metrics(request: Request) -> Response:
        return Response(state.metrics.render(), media_type="text/plain; version=0.0.4")

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if not state.settings.admin_token:  # /admin is a local 404 like any unknown path
        return Starlette(
            routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error}
        )
    from fastapi import FastAPI

    from recovery_proxy.server import admin

    app = FastAPI(routes=routes, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(admin.router(state, state.settings.admin_token))
    return app
