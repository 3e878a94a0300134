"""WebSocket upgrades on the API routes (Codex's Responses WebSocket, `GET /v1/responses` with
`Upgrade: websocket`): refused with 426 Upgrade Required, so the client falls back to HTTPS at
once. Codex 0.169 does so after one attempt on a 426; on any other refusal (the 403 an ASGI
server sends for an unhandled socket, a 404) it retries five times first, about 6 s per
session. A relay would let the whole conversation bypass the rewrite, which only reads POST
bodies; refusing keeps every request on the route that rewrites it.

The refusal uses the ASGI WebSocket Denial Response extension where the server offers it
(uvicorn does), with the API's error body; otherwise the socket is closed before the handshake
(the server then answers 403)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

STATUS = 426
MESSAGE = (
    "recovery-proxy does not relay WebSockets: send this request over HTTPS "
    "(POST {path}), where the proxy adds its recovery context."
)


async def refuse(scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
    """Deny the upgrade with 426 and `body` (JSON), or close before accepting."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-should-retry", b"false"),
    ]
    start = {"type": "websocket.http.response.start", "status": STATUS, "headers": headers}
    await send(start)
    await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
