"""The ASGI app: proxied routes handled as raw ASGI, the control plane by Starlette.

`RecoveryProxy` answers `/v1/...` itself (read body, fail-open rewrite, relay) and hands
every other request (health, metrics, /admin) and the lifespan to the control plane.
Measured: FastAPI's request handling cost 0.3-0.4 ms per proxied request, more than the
rewrite itself (issue 9).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import orjson

from recovery_proxy.config import Settings
from recovery_proxy.logs import log_request
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import open_pipeline
from recovery_proxy.rewrite import UNCHANGED, ChatRequest, Rewrite, Rewriter
from recovery_proxy.server import litellm_upstream
from recovery_proxy.server.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
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
from recovery_proxy.server.litellm_models import load_models
from recovery_proxy.server.upstream import HeaderError, Upstream, new_session, upstream_headers
from recovery_proxy.session import path as session_path
from recovery_proxy.wire import FORMATS, WireFormat, for_passthrough
from recovery_proxy.wire.base import exact_paths_only

log = logging.getLogger("recovery_proxy")

RewriterFactory = Callable[[Settings, Metrics, AsyncExitStack], Awaitable[Rewriter]]


class RecoveryProxy:
    """The proxy as one ASGI callable. State lives on the instance, set up in `lifespan()`."""

    def __init__(self, settings: Settings, rewriter_factory: RewriterFactory | None = None):
        self.settings = settings
        self.metrics = Metrics()
        self.rewriter_factory = rewriter_factory or open_pipeline
        self.rewriter: Rewriter | None = None
        self.upstream: Upstream | None = None
        self.ready = False
        self.models = load_models(settings.models) if settings.models else {}
        self.routes = {path: wire for wire in FORMATS for path in wire.paths}
        self.matched = [wire for wire in FORMATS if wire.path_match is not exact_paths_only]
        other = (p for w in FORMATS for p in w.passthrough_prefixes if not p.startswith("/v1/"))
        self.roots = ("/v1/", *other)
        names = [wire.name for wire in FORMATS] + ["passthrough"]
        self._requests = {name: self.metrics.requests.labels(name) for name in names}
        self.control = control_app(self)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open the upstream pool and the rewriter; close both on the way out."""
        async with AsyncExitStack() as stack:
            session = new_session(self.settings)
            stack.push_async_callback(session.close)
            self.rewriter = await self.rewriter_factory(self.settings, self.metrics, stack)
            self.upstream = Upstream(self.settings, session, self.metrics)
            self.ready = True
            log.info("recovery-proxy ready, upstream %s", self.settings.upstream)
            try:
                yield
            finally:
                self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            session: str | None = None
            if path.startswith(session_path.PREFIX):
                try:
                    session, scope = session_path.split(scope)
                except session_path.BadSessionPath as exc:
                    await self._bad_session_path(scope, send, str(exc))
                    return
                path = scope["path"]
            wire = self.routes.get(path)
            if wire is None and self.matched and scope["method"] == "POST":
                wire = next((w for w in self.matched if w.path_match(path)), None)
            proxied = wire is not None or path.startswith(self.roots)
            if proxied and self.settings.require_credential and not has_credential(scope):
                await self._unauthenticated(scope, send)  # health and metrics stay open
                return
            if wire is not None and scope["method"] == "POST":
                await self._rewritten(scope, receive, send, wire, session)
                return
            if path.startswith(self.roots):
                await self._passthrough(scope, receive, send)
                return
        await self.control(scope, receive, send)

    async def _unauthenticated(self, scope: Scope, send: Send) -> None:
        """401 in the wire format's shape: `require_credential` refuses anonymous callers."""
        names = {k.decode("latin-1"): "" for k, _ in scope["headers"]}
        wire = self.routes.get(scope["path"]) or for_passthrough(scope["path"], names)
        message = "This proxy requires a credential (Authorization, x-api-key or api-key)."
        await send_error(send, 401, wire.error_body(401, message, "missing_credential"))

    async def _bad_session_path(self, scope: Scope, send: Send, message: str) -> None:
        """400 in the shape of the API the rest of the path names."""
        rest = scope["path"][len(session_path.PREFIX) :].partition("/")[2]
        names = {k.decode("latin-1"): "" for k, _ in scope["headers"]}
        wire = self.routes.get("/" + rest) or for_passthrough("/" + rest, names)
        await send_error(send, 400, wire.error_body(400, message, "invalid_session_path"))

    async def _rewritten(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        wire: WireFormat,
        session: str | None = None,
    ) -> None:
        """Read the body, run the fail-open rewrite, forward the result."""
        started = time.perf_counter()
        self._requests[wire.name].inc()
        limit = self.settings.max_body_bytes
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        declared, encoding = length_and_encoding(raw_headers)
        errors = wire.error_body
        try:
            body = await read_body(receive, limit, declared)
            plain = decode_body(body, encoding, limit)
        except BodyTooLarge:
            message = f"Request body is over the proxy's limit of {limit} bytes."
            await send_error(send, 413, errors(413, message, "request_too_large"))
            return
        except ClientGone:
            return
        try:  # checked before the rewrite: a refused request leaves no trace in the session
            forward_headers = upstream_headers(raw_headers, keep_length=False)
        except HeaderError as exc:
            await send_error(send, 400, errors(400, str(exc), "invalid_header"))
            return
        rewrite = UNCHANGED
        params: dict[str, Any] | None = None
        if plain is not None:
            try:
                payload = orjson.loads(plain)
            except orjson.JSONDecodeError as exc:
                message = f"We could not parse the JSON body of your request: {exc}"
                await send_error(send, 400, errors(400, message, "invalid_json"))
                return
            if not isinstance(payload, dict):
                message = f"The request body must be a JSON object, got {type(payload).__name__}."
                await send_error(send, 400, errors(400, message, "invalid_body"))
                return
            params = self._routed(wire, payload)
            if params is not None and (refused := litellm_upstream.refusal(payload)):
                await send_error(send, 400, errors(400, refused, "routing_not_allowed"))
                return
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw_headers}
            if wire.scope_headers is not None:
                headers = wire.scope_headers(headers, scope.get("query_string", b""))
            request = ChatRequest(plain, payload, headers, wire, session, scope["path"])
            rewrite = await self._safe_rewrite(request)
        extra = [
            (b"x-recovery-proxy-injected", b"%d" % rewrite.injected),
            (b"x-recovery-proxy-reapplied", b"%d" % rewrite.reapplied),
        ]
        if rewrite.session:
            extra.append((b"x-recovery-proxy-session", rewrite.session.encode()))
        if rewrite.arm:
            extra.append((b"x-recovery-proxy-arm", rewrite.arm.encode()))
        log_request(
            session=rewrite.session,
            wire=wire.name,
            results=rewrite.results,
            failures=rewrite.failures,
            injected=rewrite.injected,
            reapplied=rewrite.reapplied,
            started=started,
            rules_version=rewrite.rules,
            arm=rewrite.arm,
            refused=rewrite.reject is not None,
            body=(rewrite.body or plain) if self.settings.log_bodies else None,
        )
        if rewrite.reject is not None:  # the `block` escalation: answered here, with our headers
            blocked = errors(409, rewrite.reject, "recovery_escalation")
            await send_error(send, 409, blocked, [(b"x-should-retry", b"false"), *extra])
            return
        if params is not None:
            routed = payload if rewrite.body is None else orjson.loads(rewrite.body)
            await self._watched(receive, litellm_upstream.respond(send, routed, params, extra))
            return
        out = body
        if rewrite.body is not None:
            out = rewrite.body
            forward_headers.popall("content-encoding", None)  # the new body is plain JSON
        forward_headers["content-length"] = str(len(out))
        url = self._url(wire, wire.upstream_path(scope["path"]), scope)
        await self._relay(receive, send, "POST", url, forward_headers, out, extra, started, wire)

    async def _passthrough(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Any other `/v1/...` request: relayed as is, body streamed."""
        started = time.perf_counter()
        self._requests["passthrough"].inc()
        raw_path = scope.get("raw_path") or scope["path"].encode()
        path = raw_path.split(b"?", 1)[0].decode("latin-1")
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        names = {k.decode("latin-1"): "" for k, _ in raw_headers}
        wire = for_passthrough(scope["path"], names)
        if escapes(scope["path"]):
            message = "The request path leaves the API's base path ('..' or '.' segments)."
            await send_error(send, 400, wire.error_body(400, message, "invalid_path"))
            return
        has_body = any(k in (b"content-length", b"transfer-encoding") for k, _ in raw_headers)
        body_read: asyncio.Event | None = None
        body: Any = None
        if has_body:
            body_read = asyncio.Event()
            body = stream_body(receive, body_read)
        try:
            forward_headers = upstream_headers(raw_headers, keep_length=True)
        except HeaderError as exc:
            await send_error(send, 400, wire.error_body(400, str(exc), "invalid_header"))
            return
        url = self._url(wire, wire.upstream_path(path), scope)
        await self._relay(
            receive,
            send,
            scope["method"],
            url,
            forward_headers,
            body,
            [],
            started,
            wire,
            body_read,
        )

    def _routed(self, wire: WireFormat, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The `litellm_params` of a Chat Completions request whose model is in `--models`."""
        model = payload.get("model")
        if not self.models or wire.name != "openai_chat" or not isinstance(model, str):
            return None
        return self.models.get(model)

    def _url(self, wire: WireFormat, path: str, scope: Scope) -> str:
        query: bytes = scope.get("query_string", b"")
        url = getattr(self.settings, wire.upstream) + path
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def _relay(
        self,
        receive: Receive,
        send: Send,
        method: str,
        url: str,
        headers: Any,
        body: Any,
        extra: list[tuple[bytes, bytes]],
        started: float,
        wire: WireFormat,
        body_read: asyncio.Event | None = None,
    ) -> None:
        """Relay upstream; a client hang-up cancels the upstream exchange at once."""
        assert self.upstream is not None, "the lifespan has not run"
        relay = self.upstream.relay(send, method, url, headers, body, extra, started, wire)
        await self._watched(receive, relay, body_read)

    async def _watched(
        self, receive: Receive, exchange: Awaitable[None], body_read: asyncio.Event | None = None
    ) -> None:
        """Run an upstream exchange; a client hang-up cancels it at once."""
        task = asyncio.current_task()
        assert task is not None
        gone = [False]
        watcher = asyncio.create_task(until_disconnect(receive, task, body_read, gone))
        try:
            await exchange
        except asyncio.CancelledError:
            if not gone[0]:
                raise
            task.uncancel()
        except ClientGone:
            pass
        finally:
            watcher.cancel()

    async def _safe_rewrite(self, request: ChatRequest) -> Rewrite:
        """Run the rewrite hook; on any exception forward the original (fail-open)."""
        assert self.rewriter is not None, "the lifespan has not run"
        try:
            return await self.rewriter(request)
        except Exception as exc:  # fail-open is the contract: never break the agent
            self.metrics.rewrite_failures.inc()
            log.error("rewrite failed, forwarding unchanged: %s: %s", type(exc).__name__, exc)
            return UNCHANGED


def create_app(
    settings: Settings, rewriter_factory: RewriterFactory | None = None
) -> RecoveryProxy:
    """Build the proxy. `rewriter_factory` builds the rewrite hook inside the lifespan;
    by default it is the recovery pipeline."""
    return RecoveryProxy(settings, rewriter_factory)
