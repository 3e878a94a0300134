"""Admin API and session inspector (issue 14), on the control app, never on the hot path.

Mounted only when `RECOVERY_PROXY_ADMIN_TOKEN` is set; without it `/admin` is a plain local 404
like any unknown path (it is never relayed upstream: only `/v1/...` and the provider roots are).

- `Authorization: Bearer <token>` authorizes every route (compared in constant time).
- The inspector (`GET /admin/`, `GET /admin/sessions/{key}` with `Accept: text/html`) is opened
  once with `?token=...`: that sets an HttpOnly, SameSite=Strict cookie on `/admin` and
  redirects to the same URL without the token. The cookie is a random value of that login
  (`Auth`), never the token; it authorizes GET requests and `POST /admin/logout` only:
  the `POST` routes (rules reload, session outcomes) need the Bearer header.
- Everything taken from session state (tool errors are attacker-controlled text) is escaped
  (proxy/server/inspector.py renders the pages); they carry a CSP that allows no script at all.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from recovery_proxy.core.state import SessionState
from recovery_proxy.experiment.report import build_report
from recovery_proxy.rules.model import RulesError
from recovery_proxy.server.asgi import BodyTooLarge, length_and_encoding, read_body
from recovery_proxy.server.inspector import detail_html, list_html, refresh_seconds
from recovery_proxy.server.outcome import MAX_BODY as MAX_OUTCOME
from recovery_proxy.server.outcome import record as record_outcome
from recovery_proxy.server.page import CHALLENGE, COMMON_HEADERS, escape, page, token_page
from recovery_proxy.server.session_views import session_detail, session_row
from recovery_proxy.server.state import ProxyState
from recovery_proxy.session.keys import is_key

log = logging.getLogger("recovery_proxy")

COOKIE = "recovery_proxy_admin"
COOKIE_MAX_AGE = 12 * 3600
MAX_LOGINS = 256  # live inspector logins kept; the oldest goes first
MAX_LIST = 1000
MAX_SCAN = 100_000  # sessions read to filter by name
STORE_DOWN = "the session store is unavailable"


class Auth:
    """The admin token, and the inspector's logins: each token exchange issues a cookie of its
    own, random, kept here with its expiry (12 h) and revocable (`POST /admin/logout`). A
    copied cookie dies with its login, not only when the token is rotated. Logins live in
    this process: behind several replicas, a browser logs in on each."""

    def __init__(self, token: str) -> None:
        self.token = token.encode()
        self.logins: dict[str, float] = {}  # cookie -> expiry (monotonic), oldest first

    def bearer(self, request: Request) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        given = value.strip().encode("latin-1", "replace")
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self.token)

    def query_token(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self.token)

    def login(self) -> str:
        """A new login's cookie value."""
        now = time.monotonic()
        for cookie in [c for c, expiry in self.logins.items() if expiry <= now]:
            del self.logins[cookie]
        while len(self.logins) >= MAX_LOGINS:
            del self.logins[next(iter(self.logins))]
        cookie = secrets.token_urlsafe(32)
        self.logins[cookie] = now + COOKIE_MAX_AGE
        return cookie

    def logout(self, request: Request) -> bool:
        return self.logins.pop(request.cookies.get(COOKIE, ""), None) is not None

    def cookie(self, request: Request) -> bool:
        """The request carries a live login's cookie (dict lookup by the random value)."""
        expiry = self.logins.get(request.cookies.get(COOKIE, ""))
        return expiry is not None and expiry > time.monotonic()

    def allowed(self, request: Request) -> bool:
        """Bearer for anything; a login's cookie for reading (GET) and logging out only."""
        if self.bearer(request):
            return True
        reading = request.method == "GET" or request.url.path == "/admin/logout"
        return reading and self.cookie(request)


def router(proxy: ProxyState, token: str) -> APIRouter:
    """The `/admin` routes over the proxy's state; include only when a token is configured."""
    auth = Auth(token)
    if len(token) < 16:
        log.warning(
            "RECOVERY_PROXY_ADMIN_TOKEN is short (%d characters): use 16 or more", len(token)
        )
    routes = APIRouter(prefix="/admin", include_in_schema=False)  # not in /openapi.json
    reloading = asyncio.Lock()

    async def conversations(
        limit: int = MAX_LIST, name: str = ""
    ) -> list[tuple[str, SessionState]]:
        """Sessions, most recent first (continuity index states left out); with `name`, only
        those whose name contains it, in any case."""
        assert proxy.store is not None  # `gate` answers 503 until it is open
        found = await proxy.store.list_sessions(MAX_SCAN if name else limit)
        wanted = name.lower()
        kept = [(k, s) for k, s in found if not s.links and wanted in s.name.lower()]
        return kept[:limit]

    def unavailable(message: str, wants_html: bool) -> Response:
        if wants_html:
            return page("Unavailable", f'<p class="empty">{escape(message)}</p>', 503)
        return _json({"error": {"message": message, "type": "unavailable"}}, 503)

    def gate(request: Request, wants_html: bool) -> Response | None:
        """None when the request may go on; else the answer (401, or the token exchange)."""
        given = request.query_params.get("token")
        if given is not None and request.method == "GET":
            if auth.query_token(given):
                return _exchange(request, auth.login())
            if wants_html:
                return token_page(request, wrong=True)
        if auth.allowed(request):
            if proxy.store is None:
                return unavailable("the proxy is still starting", wants_html)
            return None
        if wants_html:
            return token_page(request, wrong=False)
        message = "admin token required: Authorization: Bearer <RECOVERY_PROXY_ADMIN_TOKEN>"
        return _json({"error": {"message": message, "type": "unauthorized"}}, 401, CHALLENGE)

    @routes.get("")
    @routes.get("/")
    async def inspector(request: Request, name: str = "") -> Response:
        if (refused := gate(request, wants_html=True)) is not None:
            return refused
        try:
            found = await conversations(name=name)
        except Exception as exc:
            log.error("admin: listing sessions failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, True)
        return page("Sessions", list_html(found, proxy.settings.control_fraction, name))

    @routes.get("/sessions")
    async def sessions(request: Request, limit: int = MAX_LIST, name: str = "") -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        try:
            found = await conversations(max(1, min(limit, MAX_LIST)), name)
        except Exception as exc:
            log.error("admin: listing sessions failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, False)
        fraction = proxy.settings.control_fraction
        return _json([session_row(key, state, fraction) for key, state in found])

    @routes.get("/sessions/{key}")
    async def session(request: Request, key: str) -> Response:
        wants_html = "text/html" in request.headers.get("accept", "")
        if (refused := gate(request, wants_html)) is not None:
            return refused
        state: SessionState | None = None
        if is_key(key):
            try:
                assert proxy.store is not None
                state = await proxy.store.get(key)
            except Exception as exc:
                log.error("admin: reading a session failed: %s", type(exc).__name__)
                return unavailable(STORE_DOWN, wants_html)
        if state is None or state.links:
            message = "no such session (it may have expired)"
            if wants_html:
                return page("Not found", f'<p class="empty">{escape(message)}</p>', 404)
            return _json({"error": {"message": message, "type": "not_found"}}, 404)
        fraction = proxy.settings.control_fraction
        if wants_html:
            refresh = refresh_seconds(request.query_params.get("refresh"))
            body = detail_html(key, state, fraction, refresh)
            return page(f"Session {key}", body, refresh=refresh)
        return _json(session_detail(key, state, fraction))

    @routes.get("/report")
    async def report(request: Request) -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        try:  # index states too: the report skips them, and reads the known fixes'
            assert proxy.store is not None
            found = await proxy.store.list_sessions(MAX_LIST)
        except Exception as exc:
            log.error("admin: report failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, False)
        return _json(build_report(found, proxy.settings.control_fraction))

    @routes.post("/sessions/{key}/outcome")
    async def outcome(request: Request, key: str) -> Response:
        """Report a session's outcome as the operator (the body as for the harness's route)."""
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        declared = length_and_encoding(request.scope["headers"])[0]
        try:
            body = await read_body(request.receive, MAX_OUTCOME, declared)
        except BodyTooLarge:
            message = f"an outcome report is at most {MAX_OUTCOME} bytes"
            return _json({"error": {"message": message, "type": "request_too_large"}}, 413)
        status, answer = await record_outcome(proxy, [key] if is_key(key) else [], body, "operator")
        return _json(answer, status)

    @routes.post("/logout")
    async def logout(request: Request) -> Response:
        """End this browser's login: its cookie stops working at once."""
        if not auth.allowed(request):
            return _json({"error": {"message": "not logged in", "type": "unauthorized"}}, 401)
        ended = auth.logout(request)
        response = _json({"status": "logged out" if ended else "no login"})
        response.delete_cookie(COOKIE, path="/admin")
        return response

    @routes.post("/rules/reload")
    async def reload_rules(request: Request) -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        holder = proxy.rules
        if holder is None:
            return unavailable("the proxy is still starting", False)
        async with reloading:  # one reload at a time; off the event loop (~0.2 s of RE2)
            before = holder.current.version
            try:
                changed = await asyncio.to_thread(holder.apply)
            except RulesError as exc:
                body = {
                    "error": {"message": f"rules rejected: {exc}", "type": "invalid_rules"},
                    "version": before,
                    "detail": "the previous rules stay active",
                }
                return _json(body, 422)
        status = "applied" if changed else "unchanged"
        return _json({"status": status, "version": holder.current.version, "previous": before})

    return routes


# ---- JSON -------------------------------------------------------------------------------


def _json(body: Any, status: int = 200, extra: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status, headers={**COMMON_HEADERS, **(extra or {})})


# ---- the inspector's cookie ---------------------------------------------------------------


def _exchange(request: Request, cookie: str) -> Response:
    """Set the inspector cookie and redirect to the same URL without the token."""
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    path = "/" + quote(request.url.path.lstrip("/"), safe="/:")  # never `//host`
    target = path + (f"?{urlencode(rest)}" if rest else "")
    response = RedirectResponse(target, 303, headers=COMMON_HEADERS)
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=COOKIE_MAX_AGE,
        path="/admin",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
