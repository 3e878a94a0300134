"""WebSocket upgrades the proxy does not relay (any but the Responses WebSocket, and that one
when the upstream refuses it: here nothing listens there) are refused with 426 and the API's
error body, so the client falls back to HTTPS at once; other paths are not API routes."""

from __future__ import annotations

import orjson
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings


@pytest.mark.parametrize("path", ["/v1/responses", "/s/run-1/v1/responses", "/v1/realtime"])
async def test_an_api_websocket_upgrade_is_refused_with_426(path: str) -> None:
    proxy = BackgroundServer(create_app(make_settings()))
    with proxy, pytest.raises(InvalidStatus) as refused:
        async with connect(proxy.url.replace("http", "ws") + path, open_timeout=5):
            pass
    response = refused.value.response
    assert response.status_code == 426
    assert response.headers["x-should-retry"] == "false"
    error = orjson.loads(response.body)["error"]
    assert error["code"] == "websocket_not_supported" and "POST /v1/" in error["message"]


async def test_a_websocket_elsewhere_is_not_an_api_route() -> None:
    proxy = BackgroundServer(create_app(make_settings()))
    with proxy, pytest.raises(InvalidStatus) as refused:
        async with connect(proxy.url.replace("http", "ws") + "/ws", open_timeout=5):
            pass
    assert refused.value.response.status_code == 403
