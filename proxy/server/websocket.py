"""WebSocket upgrades the proxy does not relay, refused with 426 Upgrade Required so the client
falls back to HTTPS at once: any upgrade on an API path but the Responses WebSocket
(proxy/server/ws_relay.py relays that one), and that one too when the upstream refuses it.
Codex 0.169 falls back after one attempt on a 426; on any other refusal (the 403 an ASGI server
sends for an unhandled socket, a 404) it retries five times first, about 6 s per session.

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
    await deny(scope, send, body)


async def deny(scope: Scope, send: Send, body: bytes) -> None:
    """Deny an upgrade whose `websocket.connect` was received: 426 with `body`, or a close."""
    if "websocket.http.response" not in (scope.get("extensions") or {}):
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
