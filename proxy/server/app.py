"""The ASGI app: proxied routes handled as raw ASGI, the control plane by Starlette.

`RecoveryProxy` answers `/v1/...` itself (read body, fail-open rewrite, relay) and hands
every other request (health, metrics, /admin) and the lifespan to the control plane.
Measured: FastAPI's request handling cost 0.3-0.4 ms per proxied request, more than the
rewrite itself (issue 9). Requests the proxy refuses raise `Refusal`; `__call__` answers
them, in the wire format's error shape, in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import orjson

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import Parts, build_pipeline, open_parts
from recovery_proxy.prices import check_file as check_prices
from recovery_proxy.rewrite import (
    UNCHANGED,
    ChatRequest,
    Rewrite,
    Rewriter,
    fail_open,
    log_rewrite,
)
from recovery_proxy.rules.model import Rules
from recovery_proxy.server import outcome, websocket, ws_relay
from recovery_proxy.server.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Refusal,
    Scope,
    Send,
    decode_body,
    escapes,
    has_credential,
    length_and_encoding,
    read_body,
    send_error,
    stream_body,
    until_disconnect,
)
from recovery_proxy.server.control_plane import control_app
from recovery_proxy.server.litellm_upstream import LitellmUpstream
from recovery_proxy.server.state import ProxyState
from recovery_proxy.server.tap import ResponseTap
from recovery_proxy.server.tracing import Tracing, start_tracing
from recovery_proxy.server.upstream import HttpUpstream, Outgoing, Upstream, upstream_headers
from recovery_proxy.session import path as session_path
from recovery_proxy.wire import FORMATS, WireFormat, for_passthrough
from recovery_proxy.wire.base import exact_paths_only, no_reply

log = logging.getLogger("recovery_proxy")

RewriterFactory = Callable[[Settings, Metrics, Parts], Rewriter]


class RecoveryProxy:
    """The proxy as one ASGI callable. What it opens lives in `state`, set up in `lifespan()`."""

    def __init__(
        self,
        settings: Settings,
        rewriter_factory: RewriterFactory | None = None,
        rules: Rules | None = None,
    ) -> None:
        self.settings = settings
        self.state = ProxyState(settings, Metrics())
        self.metrics = self.state.metrics
        self.rewriter_factory = rewriter_factory or build_pipeline
        self.loaded_rules = rules
        self.rewriter: Rewriter | None = None
        self.upstream: Upstream | None = None
        self.tracing: Tracing | None = None  # spans, when the OTEL_* variables ask for them
        self.litellm = LitellmUpstream.from_settings(settings, self.metrics)  # a bad --models
        check_prices(settings.prices)  # a bad --prices file: one line at start-up
        self.routes = {path: wire for wire in FORMATS for path in wire.paths}
        self.matched = [wire for wire in FORMATS if wire.path_match is not exact_paths_only]
        other = (p for w in FORMATS for p in w.passthrough_prefixes if not p.startswith("/v1/"))
        self.roots = ("/v1/", *other)
        names = [wire.name for wire in FORMATS] + ["passthrough"]
        self._requests = {name: self.metrics.requests.labels(name) for name in names}
        for name in names:  # every route's overhead series exists from the start
            self.metrics.overhead.labels(name)
        self.control = control_app(self.state, self.lifespan)

    @property
    def ready(self) -> bool:
        return self.state.ready

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open the upstream pool, the rules and the store, and the rewriter over them."""
        async with AsyncExitStack() as stack:
            settings, metrics = self.settings, self.metrics
            upstream = HttpUpstream(settings, metrics)
            stack.push_async_callback(upstream.close)
            self.tracing = start_tracing()
            if self.tracing is not None:
                stack.push_async_callback(self.tracing.close)
            parts = await open_parts(settings, metrics, stack, self.loaded_rules)
            self.state.store, self.state.rules = parts.store, parts.rules
            if (problem := await self.state.store_reachable()) is not None:
                log.warning(
                    "session store %s unreachable at start (%s): stateless recovery until it "
                    "answers; /readyz reports it",
                    settings.store.describe(),
                    problem,
                )
            self.rewriter = self.rewriter_factory(settings, metrics, parts)
            self.upstream = upstream
            self.state.ready = True
            log.info("recovery-proxy ready, upstream %s", settings.upstream)
            try:
                yield
            finally:
                self.state.ready = False
                drain = getattr(self.rewriter, "drain", None)
                if drain is not None:  # replies still being stored, before the store closes
                    await drain()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self._api_path(scope["path"]):
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.control(scope, receive, send)
            return
        wire: WireFormat | None = None
        try:
            session: str | None = None
            if scope["path"].startswith(session_path.PREFIX):
                try:
                    session, scope = session_path.split(scope)
                except session_path.BadSessionPath as exc:
                    raise Refusal(400, str(exc), "invalid_session_path") from None
            path: str = scope["path"]
            if path.startswith(outcome.PREFIX):  # the proxy's own route, never relayed
                await outcome.handle(self.state, scope, receive, send)
                return
            wire = self.routes.get(path)
            if wire is None and self.matched and scope["method"] == "POST":
                wire = next((w for w in self.matched if w.path_match(path)), None)
            rewritten = wire is not None and scope["method"] == "POST"
            if not rewritten and not path.startswith(self.roots):
                await self.control(scope, receive, send)  # health and metrics stay open
                return
            if not rewritten:
                wire = for_passthrough(path, header_names(scope))
            if self.settings.require_credential and not has_credential(scope):
                message = "This proxy requires a credential (Authorization, x-api-key or api-key)."
                raise Refusal(401, message, "missing_credential")
            if rewritten:
                await self._rewritten(scope, receive, send, wire, session)
            else:
                await self._passthrough(scope, receive, send, wire)
        except ClientGone:
            return
        except Refusal as refusal:
            wire = wire or self._wire_after_prefix(scope)
            body = wire.error_body(refusal.status, refusal.message, refusal.code)
            await send_error(send, refusal.status, body, refusal.headers)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The Responses WebSocket is relayed with each `response.create` rewritten
        (proxy/server/ws_relay.py); any other upgrade on an API path is refused with 426."""
        session: str | None = None
        path = self._api_path(scope["path"])
        if scope["path"].startswith(session_path.PREFIX):
            with contextlib.suppress(session_path.BadSessionPath):
                session, scope = session_path.split(scope)
        wire = self.routes.get(scope["path"])
        if wire is not None and wire.name == "openai_responses" and self.rewriter is not None:
            rewriter, requests = self.rewriter, self._requests[wire.name]

            async def rewrite(request: ChatRequest) -> Rewrite:
                requests.inc()
                return await fail_open(lambda: rewriter(request), self.metrics)

            url = ws_relay.upstream_ws_url(
                getattr(self.settings, wire.upstream),
                wire.upstream_path(scope["path"]),
                scope.get("query_string", b""),
            )
            await ws_relay.ResponsesRelay(wire, rewrite, session)(scope, receive, send, url)
            return
        wire = wire or for_passthrough(path, header_names(scope))
        message = websocket.MESSAGE.format(path=path)
        body = wire.error_body(websocket.STATUS, message, "websocket_not_supported")
        await websocket.refuse(scope, receive, send, body)

    def _api_path(self, path: str) -> str:
        """The API path a request names (after any `/s/{session}/` prefix), "" for others."""
        if path.startswith(session_path.PREFIX):
            path = "/" + path[len(session_path.PREFIX) :].partition("/")[2]
        return path if path.startswith(self.roots) else ""

    def _wire_after_prefix(self, scope: Scope) -> WireFormat:
        """The API a path names after any `/s/{session}/` prefix (even a malformed one)."""
        path: str = scope["path"]
        if path.startswith(session_path.PREFIX):
            path = "/" + path[len(session_path.PREFIX) :].partition("/")[2]
        return self.routes.get(path) or for_passthrough(path, header_names(scope))

    async def _rewritten(
        self, scope: Scope, receive: Receive, send: Send, wire: WireFormat, session: str | None
    ) -> None:
        """Read the body, run the fail-open rewrite, forward the result."""
        started = time.perf_counter()
        self._requests[wire.name].inc()
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        body, plain = await self._read(receive, raw_headers)
        # checked before the rewrite: a refused request leaves no trace in the session
        forward_headers = upstream_headers(raw_headers, keep_length=False)
        rewrite = UNCHANGED
        payload: dict[str, Any] | None = None
        upstream = self.upstream
        payload = parse_object(plain) if plain is not None else None
        if plain is not None and payload is not None:
            if self.litellm is not None and self.litellm.takes(wire, payload):
                self.litellm.check(payload)
                upstream = self.litellm
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw_headers}
            if wire.scope_headers is not None:
                headers = wire.scope_headers(headers, scope.get("query_string", b""))
            request = ChatRequest(plain, payload, headers, wire, session, scope["path"])
            rewriter = self.rewriter
            assert rewriter is not None, "the lifespan has not run"
            rewrite = await fail_open(lambda: rewriter(request), self.metrics)
        extra = rewrite_headers(rewrite)
        logged = (rewrite.body or plain) if self.settings.log_bodies else None
        log_rewrite(rewrite, wire.name, started, logged)
        if rewrite.reject is not None:  # the `block` escalation: answered here, with our headers
            if self.tracing is not None:
                self.tracing.record(raw_headers, wire.name, rewrite, started, None)
            headers = [(b"x-should-retry", b"false"), *extra]
            raise Refusal(409, rewrite.reject, "recovery_escalation", headers)
        out = body
        if rewrite.body is not None:
            out = rewrite.body
            payload = None  # parsed again only by an upstream that needs it
            forward_headers.popall("content-encoding", None)  # the new body is plain JSON
        forward_headers["content-length"] = str(len(out))
        url = self._url(wire, wire.upstream_path(scope["path"]), scope)
        outgoing = Outgoing(
            "POST", url, forward_headers, out, wire, started, extra, payload, route=wire.name
        )
        outgoing.tap = self._tap(wire, rewrite)
        try:
            await self._exchange(receive, send, upstream, outgoing)
        finally:  # after the answer: a span never delays one
            if self.tracing is not None:
                self.tracing.record(raw_headers, wire.name, rewrite, started, outgoing.overhead)

    def _tap(self, wire: WireFormat, rewrite: Rewrite) -> ResponseTap | None:
        """A tap reading the answer for the rewriter's `learn` (the recovery pipeline has one),
        for a request that has a session and a format whose responses can be read."""
        learn = getattr(self.rewriter, "learn", None)
        if learn is None or not rewrite.session or wire.read_reply is no_reply:
            return None
        if not self.settings.read_responses:
            return None
        return ResponseTap(wire.read_reply, lambda reply: learn(rewrite, reply), self.metrics)

    async def _read(
        self, receive: Receive, raw_headers: list[tuple[bytes, bytes]]
    ) -> tuple[bytes, bytes | None]:
        """The body as sent and as JSON bytes (None: an encoding the proxy cannot read)."""
        limit = self.settings.max_body_bytes
        declared, encoding = length_and_encoding(raw_headers)
        try:
            body = await read_body(receive, limit, declared)
            return body, decode_body(body, encoding, limit)
        except BodyTooLarge:
            message = f"Request body is over the proxy's limit of {limit} bytes."
            raise Refusal(413, message, "request_too_large") from None

    async def _passthrough(
        self, scope: Scope, receive: Receive, send: Send, wire: WireFormat
    ) -> None:
        """Any other `/v1/...` request: relayed as is, body streamed."""
        started = time.perf_counter()
        self._requests["passthrough"].inc()
        raw_path = scope.get("raw_path") or scope["path"].encode()
        path = raw_path.split(b"?", 1)[0].decode("latin-1")
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        if escapes(scope["path"]):
            message = "The request path leaves the API's base path ('..' or '.' segments)."
            raise Refusal(400, message, "invalid_path")
        body_read: asyncio.Event | None = None
        body: Any = None
        if any(k in (b"content-length", b"transfer-encoding") for k, _ in raw_headers):
            body_read = asyncio.Event()
            body = stream_body(receive, body_read)
        forward_headers = upstream_headers(raw_headers, keep_length=True)
        url = self._url(wire, wire.upstream_path(path), scope)
        outgoing = Outgoing(scope["method"], url, forward_headers, body, wire, started)
        await self._exchange(receive, send, self.upstream, outgoing, body_read)

    def _url(self, wire: WireFormat, path: str, scope: Scope) -> str:
        query: bytes = scope.get("query_string", b"")
        url = getattr(self.settings, wire.upstream) + path
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def _exchange(
        self,
        receive: Receive,
        send: Send,
        upstream: Upstream | None,
        outgoing: Outgoing,
        body_read: asyncio.Event | None = None,
    ) -> None:
        """Send `outgoing` upstream and relay the answer; a client hang-up cancels it at once."""
        assert upstream is not None, "the lifespan has not run"
        task = asyncio.current_task()
        assert task is not None
        gone = [False]
        watcher = asyncio.create_task(until_disconnect(receive, task, body_read, gone))
        try:
            await upstream.send(outgoing, send)
        except asyncio.CancelledError:
            if not gone[0]:
                raise
            task.uncancel()
        except ClientGone:
            pass
        finally:
            watcher.cancel()


def header_names(scope: Scope) -> dict[str, str]:
    """The request's header names (for `for_passthrough`, which looks at names only)."""
    return {k.decode("latin-1"): "" for k, _ in scope["headers"]}


def parse_object(plain: bytes) -> dict[str, Any] | None:
    """The JSON object a rewritten route reads, or None: a body the proxy cannot parse (bad
    JSON, a `NaN`, a lone surrogate, nesting over 1,024 levels) or that is not an object goes
    upstream byte for byte, and the provider decides (fail-open)."""
    try:
        payload = orjson.loads(plain)
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def rewrite_headers(rewrite: Rewrite) -> list[tuple[bytes, bytes]]:
    """The `x-recovery-proxy-*` response headers that say what the rewrite did."""
    extra = [
        (b"x-recovery-proxy-injected", b"%d" % rewrite.injected),
        (b"x-recovery-proxy-reapplied", b"%d" % rewrite.reapplied),
        (b"x-recovery-proxy-tokens", b"%d" % rewrite.tokens),
    ]
    if rewrite.session:
        extra.append((b"x-recovery-proxy-session", rewrite.session.encode()))
    if rewrite.arm:
        extra.append((b"x-recovery-proxy-arm", rewrite.arm.encode()))
    return extra


def create_app(
    settings: Settings, rewriter_factory: RewriterFactory | None = None, rules: Rules | None = None
) -> RecoveryProxy:
    """Build the proxy. `rewriter_factory` builds the rewriter over the parts the lifespan
    opens (by default the recovery pipeline); `rules`, if start-up has loaded them already."""
    return RecoveryProxy(settings, rewriter_factory, rules)
