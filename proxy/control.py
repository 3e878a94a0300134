"""The control plane: health, metrics and (with an admin token) /admin, as a small FastAPI app.

It also owns the lifespan the server runs; proxied routes never reach it (`proxy.app`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.responses import JSONResponse, Response

if TYPE_CHECKING:
    from proxy.app import RecoveryProxy


def control_app(proxy: RecoveryProxy) -> FastAPI:
    """Health, metrics and (with an admin token) /admin; owns the lifespan the server runs."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with proxy.lifespan():
            yield

    app = FastAPI(title="recovery-proxy", lifespan=lifespan, docs_url=None, redoc_url=None)

    @app.get("/healthz")
    async def healthz() -> Response:
        if not proxy.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(proxy.metrics.render(), media_type="text/plain; version=0.0.4")

    if proxy.settings.admin_token:  # otherwise /admin is a local 404 like any unknown path
        from proxy import admin

        app.include_router(admin.router(proxy, proxy.settings.admin_token))
    return app
