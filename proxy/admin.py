"""Admin API and session inspector (issue 14), on the control app, never on the hot path.

Mounted only when `RECOVERY_PROXY_ADMIN_TOKEN` is set; without it `/admin` is a plain local 404
like any unknown path (it is never relayed upstream: only `/v1/...` and the provider roots are).

- `Authorization: Bearer <token>` authorizes every route (compared in constant time).
- The inspector (`GET /admin/`, `GET /admin/sessions/{key}` with `Accept: text/html`) is opened
  once with `?token=...`: that sets an HttpOnly, SameSite=Strict cookie on `/admin` and
  redirects to the same URL without the token. The cookie holds an HMAC of the token, not the
  token, and authorizes GET requests only: `POST /admin/rules/reload` needs the Bearer header.
- Everything taken from session state (tool errors are attacker-controlled text) is escaped;
  HTML pages carry a Content-Security-Policy that allows no script at all.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import html
import logging
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from proxy.arms import arm_of
from proxy.core.state import SessionState
from proxy.report import build_report
from proxy.rules import RulesError

if TYPE_CHECKING:
    from proxy.app import RecoveryProxy

log = logging.getLogger("recovery_proxy")

COOKIE = "recovery_proxy_admin"
COOKIE_MAX_AGE = 12 * 3600
KEY = re.compile(r"[0-9a-f]{16}:[0-9a-f]{24}")  # proxy.session.scoped: tenanthash:digest
MAX_LIST = 1000
STORE_DOWN = "the session store is unavailable"

CSS = """\
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111827;
background:#f9fafb;margin:0 auto;max-width:76rem;padding:1.25rem 1rem 3rem}
header{display:flex;align-items:baseline;gap:1rem;flex-wrap:wrap;
border-bottom:2px solid #111827;padding-bottom:.4rem;margin-bottom:1rem}
h1{font-size:1.2rem;margin:0}
h2{font-size:.95rem;margin:1.6rem 0 .5rem}
a{color:#1d4ed8;text-decoration:none}
a:hover{text-decoration:underline}
.muted{color:#6b7280}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #e5e7eb}
th,td{text-align:left;padding:.35rem .55rem;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{font-size:.72rem;text-transform:uppercase;letter-spacing:.04em;color:#6b7280;
background:#f3f4f6;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.t{white-space:nowrap;font-variant-numeric:tabular-nums}
tr:hover td{background:#f9fafb}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;max-height:18rem;overflow:auto}
.key{font:12.5px ui-monospace,monospace}
.tag{display:inline-block;padding:0 .45rem;border-radius:.25rem;font-size:.72rem;
font-weight:600;white-space:nowrap}
.k-block{background:#dbeafe;color:#1e3a8a}
.k-notice{background:#fef3c7;color:#78350f}
.k-escalation{background:#fee2e2;color:#7f1d1d}
.k-compaction{background:#ede9fe;color:#4c1d95}
.k-summary{background:#dcfce7;color:#14532d}
.a-control{background:#e5e7eb;color:#374151}
.a-treatment{background:#d1fae5;color:#065f46}
dl{display:grid;grid-template-columns:repeat(auto-fill,minmax(8.5rem,1fr));gap:.5rem;margin:0}
dl div{background:#fff;border:1px solid #e5e7eb;border-radius:.375rem;padding:.35rem .6rem}
dt{font-size:.72rem;color:#6b7280}
dd{margin:0;font-size:1.05rem;font-weight:600;font-variant-numeric:tabular-nums}
.empty{padding:1rem;background:#fff;border:1px dashed #d1d5db;color:#6b7280}
form{display:flex;gap:.5rem;margin-top:1rem}
input{font:inherit;padding:.3rem .5rem;min-width:20rem}
button{font:inherit;padding:.3rem .8rem}
"""
CSS_HASH = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src 'sha256-{CSS_HASH}'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
HTML_HEADERS = {**COMMON_HEADERS, "Content-Security-Policy": CSP, "X-Frame-Options": "DENY"}
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="recovery-proxy admin"'}


class Auth:
    """The admin token and the cookie derived from it; both compared in constant time."""

    def __init__(self, token: str) -> None:
        self.token = token.encode()
        self.cookie = hmac.new(self.token, b"recovery-proxy inspector", "sha256").hexdigest()

    def bearer(self, request: Request) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        given = value.strip().encode("latin-1", "replace")
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self.token)

    def query_token(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self.token)

    def allowed(self, request: Request) -> bool:
        """Bearer for anything; the inspector's cookie for reading (GET) only."""
        if self.bearer(request):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return request.method == "GET" and hmac.compare_digest(
            cookie.encode(), self.cookie.encode()
        )


def router(proxy: RecoveryProxy, token: str) -> APIRouter:
    """The `/admin` routes for `proxy`; include only when an admin token is configured."""
    auth = Auth(token)
    if len(token) < 16:
        log.warning(
            "RECOVERY_PROXY_ADMIN_TOKEN is short (%d characters): use 16 or more", len(token)
        )
    routes = APIRouter(prefix="/admin", include_in_schema=False)  # not in /openapi.json
    reloading = asyncio.Lock()

    def store() -> Any:
        return getattr(proxy.rewriter, "store", None)

    async def conversations(limit: int = MAX_LIST) -> list[tuple[str, SessionState]]:
        found = await store().list_sessions(limit)
        return [(key, state) for key, state in found if not state.links]

    def unavailable(message: str, wants_html: bool) -> Response:
        if wants_html:
            return _page("Unavailable", f'<p class="empty">{_e(message)}</p>', 503)
        return _json({"error": {"message": message, "type": "unavailable"}}, 503)

    def gate(request: Request, wants_html: bool) -> Response | None:
        """None when the request may go on; else the answer (401, or the token exchange)."""
        given = request.query_params.get("token")
        if given is not None and request.method == "GET":
            if auth.query_token(given):
                return _exchange(request, auth.cookie)
            if wants_html:
                return _token_page(request, wrong=True)
        if auth.allowed(request):
            if store() is None:
                return unavailable("the admin API needs the recovery pipeline", wants_html)
            return None
        if wants_html:
            return _token_page(request, wrong=False)
        message = "admin token required: Authorization: Bearer <RECOVERY_PROXY_ADMIN_TOKEN>"
        return _json({"error": {"message": message, "type": "unauthorized"}}, 401, CHALLENGE)

    @routes.get("")
    @routes.get("/")
    async def inspector(request: Request) -> Response:
        if (refused := gate(request, wants_html=True)) is not None:
            return refused
        try:
            found = await conversations()
        except Exception as exc:
            log.error("admin: listing sessions failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, True)
        return _page("Sessions", _list_html(found, proxy.settings.control_fraction))

    @routes.get("/sessions")
    async def sessions(request: Request, limit: int = MAX_LIST) -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        try:
            found = await conversations(max(1, min(limit, MAX_LIST)))
        except Exception as exc:
            log.error("admin: listing sessions failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, False)
        fraction = proxy.settings.control_fraction
        return _json([_summary(key, state, fraction) for key, state in found])

    @routes.get("/sessions/{key}")
    async def session(request: Request, key: str) -> Response:
        wants_html = "text/html" in request.headers.get("accept", "")
        if (refused := gate(request, wants_html)) is not None:
            return refused
        state: SessionState | None = None
        if KEY.fullmatch(key):
            try:
                state = await store().get(key)
            except Exception as exc:
                log.error("admin: reading a session failed: %s", type(exc).__name__)
                return unavailable(STORE_DOWN, wants_html)
        if state is None or state.links:
            message = "no such session (it may have expired)"
            if wants_html:
                return _page("Not found", f'<p class="empty">{_e(message)}</p>', 404)
            return _json({"error": {"message": message, "type": "not_found"}}, 404)
        fraction = proxy.settings.control_fraction
        if wants_html:
            return _page(f"Session {key}", _detail_html(key, state, fraction))
        return _json(_detail(key, state, fraction))

    @routes.get("/report")
    async def report(request: Request) -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        try:
            found = await conversations()
        except Exception as exc:
            log.error("admin: report failed: %s", type(exc).__name__)
            return unavailable(STORE_DOWN, False)
        return _json(build_report(found, proxy.settings.control_fraction))

    @routes.post("/rules/reload")
    async def reload_rules(request: Request) -> Response:
        if (refused := gate(request, wants_html=False)) is not None:
            return refused
        holder = getattr(proxy.rewriter, "rules", None)
        if holder is None:
            return unavailable("the admin API needs the recovery pipeline", False)
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


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _summary(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        "key": key,
        "tenant": key.partition(":")[0],
        "arm": arm_of(key, fraction),
        "last_seen": _iso(state.updated),
        "last_seen_epoch": state.updated,
        "turn": state.turn,
        "results": state.stats.results,
        "failures": state.stats.failures,
        "records": len(state.records),
        "compactions": len(state.compactions),
    }


def _detail(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        **_summary(key, state, fraction),
        "stats": state.stats.model_dump(),
        "records": [record.model_dump() for record in state.records],
        "timeline": [event.model_dump() for event in state.timeline],
        "compactions": [compaction.model_dump() for compaction in state.compactions],
        "summary": state.summary,
    }


# ---- HTML -------------------------------------------------------------------------------


def _e(value: Any) -> str:
    """Escape anything for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def _page(
    title: str, body: str, status: int = 200, extra: dict[str, str] | None = None
) -> Response:
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)} · recovery-proxy</title><style>{CSS}</style></head><body>"
        f"{body}</body></html>"
    )
    return HTMLResponse(page, status, headers={**HTML_HEADERS, **(extra or {})})


def _token_page(request: Request, wrong: bool) -> Response:
    """401 without any session data: a form that opens the inspector with `?token=`."""
    note = "That token is not valid." if wrong else "Open this page once with the admin token."
    body = (
        "<header><h1>recovery-proxy · admin</h1></header>"
        f"<p><strong>Token required.</strong> {_e(note)}</p>"
        '<p class="muted">The token is <code>RECOVERY_PROXY_ADMIN_TOKEN</code>; after it, an '
        "HttpOnly cookie keeps this browser signed in.</p>"
        f'<form method="get" action="{_e(request.url.path)}">'
        '<input type="password" name="token" autocomplete="off" aria-label="admin token">'
        "<button>Open</button></form>"
    )
    return _page("Token required", body, 401, CHALLENGE)


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


def _ago(epoch: float) -> str:
    seconds = max(0, int(datetime.now(UTC).timestamp() - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _arm(arm: str) -> str:
    return f'<span class="tag a-{_e(arm)}">{_e(arm)}</span>'


def _list_html(found: list[tuple[str, SessionState]], fraction: float) -> str:
    head = (
        "<header><h1>recovery-proxy · sessions</h1>"
        f'<span class="muted">{len(found)} live, most recent first · '
        f"control fraction {_e(fraction)}</span></header>"
    )
    if not found:
        return head + '<p class="empty">No sessions yet.</p>'
    rows = []
    for key, state in found:
        s = _summary(key, state, fraction)
        rows.append(
            "<tr>"
            f'<td><a class="key" href="/admin/sessions/{quote(key, safe=":")}">{_e(key)}</a></td>'
            f'<td class="key">{_e(s["tenant"])}</td><td>{_arm(s["arm"])}</td>'
            f'<td title="{_e(s["last_seen"])}">{_e(_ago(state.updated))}</td>'
            f'<td class="n">{_e(s["turn"])}</td><td class="n">{_e(s["results"])}</td>'
            f'<td class="n">{_e(s["failures"])}</td><td class="n">{_e(s["records"])}</td>'
            f'<td class="n">{_e(s["compactions"])}</td></tr>'
        )
    table = (
        "<table><thead><tr><th>session</th><th>tenant</th><th>arm</th><th>last seen</th>"
        '<th class="n">turn</th><th class="n">results</th><th class="n">failures</th>'
        '<th class="n">records</th><th class="n">compactions</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )
    return head + table


def _detail_html(key: str, state: SessionState, fraction: float) -> str:
    s = _summary(key, state, fraction)
    head = (
        f'<header><h1>Session <span class="key">{_e(key)}</span></h1>'
        f'{_arm(s["arm"])}<span class="muted">tenant <span class="key">{_e(s["tenant"])}'
        f"</span> · last seen {_e(s['last_seen'])}</span>"
        '<a href="/admin/">all sessions</a></header>'
    )
    numbers = {"turn": state.turn, **state.stats.model_dump(), "records": len(state.records)}
    stats = (
        "<dl>"
        + "".join(
            f"<div><dt>{_e(name.replace('_', ' '))}</dt><dd>{_e(value)}</dd></div>"
            for name, value in numbers.items()
        )
        + "</dl>"
    )
    if state.timeline:
        events = "".join(
            f'<tr><td class="t" title="{_e(_iso(ev.time))}">{_e(_clock(ev.time))}</td>'
            f'<td class="n">{_e(ev.turn)}</td>'
            f'<td><span class="tag k-{_e(ev.kind)}">{_e(ev.kind)}</span></td>'
            f'<td class="key">{_e(ev.call_id)}</td><td><pre>{_e(ev.text)}</pre></td></tr>'
            for ev in state.timeline
        )
        timeline = (
            '<table><thead><tr><th>time</th><th class="n">turn</th><th>kind</th>'
            f"<th>call</th><th>text</th></tr></thead><tbody>{events}</tbody></table>"
        )
    else:
        timeline = '<p class="empty">Nothing injected yet.</p>'
    if state.records:
        rows = "".join(
            f'<tr><td class="t" title="{_e(_iso(r.time))}">{_e(_clock(r.time))}</td>'
            f'<td class="n">{_e(r.turn)}</td>'
            f"<td><code>{_e(r.operation)}({_e(r.target)})</code></td>"
            f'<td>{_e(r.category)}</td><td class="key">{_e(r.call_id)}</td>'
            f"<td><pre>{_e(r.error)}</pre></td></tr>"
            for r in state.records
        )
        records = (
            '<table><thead><tr><th>time</th><th class="n">turn</th><th>operation</th>'
            "<th>category</th><th>call</th><th>error</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    else:
        records = '<p class="empty">No failures recorded.</p>'
    summary = (
        f"<h2>Failure summary (frozen at the last compaction)</h2><pre>{_e(state.summary)}</pre>"
    )
    return (
        head
        + stats
        + f"<h2>Timeline ({len(state.timeline)})</h2>"
        + timeline
        + f"<h2>Failure records ({len(state.records)})</h2>"
        + records
        + (summary if state.summary else "")
    )


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%m-%d %H:%M:%S")
