"""The Responses WebSocket (`GET /v1/responses` with `Upgrade: websocket`, Codex's default
transport): relayed to the upstream's WebSocket, each `response.create` message rewritten
exactly as the HTTP route rewrites a POST body (same session, same blocks, same byte-stability),
everything else and every frame from the upstream relayed untouched.

The client's upgrade is accepted only once the upstream has accepted its own: an upstream that
refuses (no WebSocket there, a 403, a 404) or cannot be reached makes the client's upgrade a
426 at once (proxy/server/websocket.py), so it falls back to HTTPS without retrying. A
`response.create` the `block` escalation refuses is answered on the socket with an `error`
event carrying status 409, as the upstream reports errors there, and is not forwarded.

A message is one `response.create` request: `{"type": "response.create", ...the body}`. What the
rewrite adds goes back in the same shape: the type first, then the rewritten body's fields.

On a socket Codex sends only the new items after `previous_response_id` (the upstream keeps the
conversation). The relay keeps it too, per socket: each request's input as the client sent it
plus the output items the upstream streamed back (`response.output_item.done`). A request that
continues a response of this socket is rewritten as its whole conversation, exactly what the
client would POST over HTTPS, and only its new items (with their blocks) are forwarded: the
blocks name the failed call and list the earlier attempts, as on the HTTP route.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from recovery_proxy.rewrite import ChatRequest, Rewrite, log_rewrite
from recovery_proxy.server import websocket
from recovery_proxy.wire.base import WireFormat

log = logging.getLogger("recovery_proxy")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Rewriting = Callable[[ChatRequest], Awaitable[Rewrite]]

CREATE = "response.create"
# Handshake and hop-by-hop headers the relay's own connection sets; the rest go upstream.
NOT_FORWARDED = frozenset(
    {
        "host",
        "connection",
        "upgrade",
        "content-length",
        "transfer-encoding",
        "keep-alive",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-accept",
    }
)
# Upstream handshake headers a client reads (Codex: reasoning, model, turn state, models etag).
RELAYED_BACK = ("x-reasoning-included", "openai-model", "x-codex-turn-state", "x-models-etag")
OPEN_TIMEOUT = 30.0


def upstream_ws_url(base: str, path: str, query: bytes) -> str:
    """`http(s)://host/v1` + `/responses` as `ws(s)://host/v1/responses?query`."""
    url = base.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + path
    return f"{url}?{query.decode('latin-1')}" if query else url


def forwarded_headers(scope: Scope) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in scope["headers"]
        if name.decode("latin-1").lower() not in NOT_FORWARDED
    ]


class ResponsesRelay:
    """One client socket and its upstream socket; `rewrite` is the HTTP route's rewriter
    (fail-open), `wire` the Responses format."""

    def __init__(self, wire: WireFormat, rewrite: Rewriting, session: str | None) -> None:
        self.wire = wire
        self.rewrite = rewrite
        self.session = session
        self.conversations: dict[str, list[Any]] = {}  # response id -> its whole conversation
        self.sent: list[Any] = []  # the in-flight request's whole input, as the client sent it
        self.output: list[Any] = []  # the items the upstream streamed back for it

    async def __call__(self, scope: Scope, receive: Receive, send: Send, url: str) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        try:
            upstream = await connect(
                url,
                additional_headers=forwarded_headers(scope),
                open_timeout=OPEN_TIMEOUT,
                max_size=None,
                ping_interval=None,
            )
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            status = exc.response.status_code if isinstance(exc, InvalidStatus) else "no answer"
            log.info("upstream refused the Responses WebSocket (%s): 426 to the client", status)
            path = self.wire.paths[0]
            message = websocket.MESSAGE.format(path=path)
            body = self.wire.error_body(websocket.STATUS, message, "websocket_not_supported")
            await websocket.deny(scope, send, body)
            return
        headers = [
            (name.encode(), value.encode())
            for name in RELAYED_BACK
            if (value := upstream.response.headers.get(name)) is not None
        ]
        await send({"type": "websocket.accept", "headers": headers})
        async with upstream:
            await self._pump(scope, receive, send, upstream)

    async def _pump(
        self, scope: Scope, receive: Receive, send: Send, upstream: ClientConnection
    ) -> None:
        """Both directions until either side closes; then the other is closed too."""
        down = asyncio.create_task(self._down(send, upstream))
        try:
            await self._up(scope, receive, send, upstream)
        finally:
            down.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await down

    async def _up(
        self, scope: Scope, receive: Receive, send: Send, upstream: ClientConnection
    ) -> None:
        """Client to upstream: each `response.create` through the rewrite."""
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                await upstream.close()
                return
            if message["type"] != "websocket.receive":
                continue
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
                continue
            text: str = message.get("text") or ""
            out = await self._request(scope, text, send)
            if out is not None:
                await upstream.send(out)

    async def _down(self, send: Send, upstream: ClientConnection) -> None:
        """Upstream to client, frames untouched; the upstream's close closes the client."""
        try:
            async for frame in upstream:
                key = "text" if isinstance(frame, str) else "bytes"
                await send({"type": "websocket.send", key: frame})
                if isinstance(frame, str) and (
                    '"response.output_item.done"' in frame or ('"response.completed"' in frame)
                ):
                    self._remember(frame)
        except ConnectionClosed:
            pass
        code = upstream.close_code or 1000
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": code})

    def _remember(self, frame: str) -> None:
        """Keep an output item, or at `response.completed` the conversation under its id."""
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError, TypeError):
            event = orjson.loads(frame)
            if event.get("type") == "response.output_item.done":
                self.output.append(event["item"])
            elif event.get("type") == "response.completed":
                self.conversations = {event["response"]["id"]: self.sent + self.output}
                self.output = []

    def _whole(self, payload: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The request as the whole conversation (when it continues a response of this
        socket) and how many items of its input came before this request."""
        items = payload.get("input")
        known = self.conversations.get(str(payload.get("previous_response_id")))
        if known is None or not isinstance(items, list):
            self.sent = list(items) if isinstance(items, list) else []
            return payload, 0
        self.sent = known + items
        whole = {k: v for k, v in payload.items() if k != "previous_response_id"}
        return {**whole, "input": self.sent}, len(known)

    async def _request(self, scope: Scope, text: str, send: Send) -> str | None:
        """The message to forward for `text` (itself unless a `response.create` gets something
        added), or None when the escalation refused it (an `error` event went to the client)."""
        try:
            message = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        if not isinstance(message, dict) or message.get("type") != CREATE:
            return text
        started = time.perf_counter()
        sent = {k: v for k, v in message.items() if k != "type"}
        payload, before = self._whole(sent)
        plain = orjson.dumps(payload)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        request = ChatRequest(plain, payload, headers, self.wire, self.session, self.wire.paths[0])
        rewrite = await self.rewrite(request)
        log_rewrite(rewrite, self.wire.name, started)
        if rewrite.reject is not None:
            error = {"type": "recovery_escalation", "code": "recovery_escalation"}
            event = {"type": "error", "status": 409, "error": {**error, "message": rewrite.reject}}
            await send({"type": "websocket.send", "text": orjson.dumps(event).decode()})
            return None
        if rewrite.body is None or rewrite.body == plain:
            return text  # the client's own bytes
        if before:  # only the new items go upstream, with what the rewrite added to them
            items = orjson.loads(rewrite.body)["input"][before:]
            if items == sent["input"]:
                return text
            return (
                '{"type":"response.create",' + orjson.dumps({**sent, "input": items}).decode()[1:]
            )
        return '{"type":"response.create",' + rewrite.body.decode()[1:]
