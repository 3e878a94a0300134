"""The inspector's page frame: its stylesheet, the headers every admin page carries (a
Content-Security-Policy that allows that stylesheet and no script at all), HTML escaping, the
page shell and the token form."""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

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
.k-resolution{background:#ccfbf1;color:#134e4a}
.a-control{background:#e5e7eb;color:#374151}
.a-treatment{background:#d1fae5;color:#065f46}
.o-succeeded{background:#dcfce7;color:#14532d}
.o-failed{background:#fee2e2;color:#7f1d1d}
.o-abandoned{background:#e5e7eb;color:#374151}
dl{display:grid;grid-template-columns:repeat(auto-fill,minmax(8.5rem,1fr));gap:.5rem;margin:0}
dl div{background:#fff;border:1px solid #e5e7eb;border-radius:.375rem;padding:.35rem .6rem}
dt{font-size:.72rem;color:#6b7280}
dd{margin:0;font-size:1.05rem;font-weight:600;font-variant-numeric:tabular-nums}
.empty{padding:1rem;background:#fff;border:1px dashed #d1d5db;color:#6b7280}
.added+.added{margin-top:.6rem}
#requests pre{max-height:12rem}
.repeats{font-size:.8rem;white-space:normal;margin-top:.2rem}
.added .key{display:block;margin-bottom:.15rem;color:#374151}
.refresh{margin-left:auto;font-size:.85rem}
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


def escape(value: Any) -> str:
    """Escape anything for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def page(
    title: str,
    body: str,
    status: int = 200,
    extra: dict[str, str] | None = None,
    refresh: int = 0,
) -> Response:
    """A whole HTML page; `refresh`: reload it every so many seconds (0: never)."""
    reload = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh > 0 else ""
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">{reload}'
        f"<title>{escape(title)} · recovery-proxy</title><style>{CSS}</style></head><body>"
        f"{body}</body></html>"
    )
    return HTMLResponse(page, status, headers={**HTML_HEADERS, **(extra or {})})


def token_page(request: Request, wrong: bool) -> Response:
    """401 without any session data: a form that opens the inspector with `?token=`."""
    note = "That token is not valid." if wrong else "Open this page once with the admin token."
    body = (
        "<header><h1>recovery-proxy · admin</h1></header>"
        f"<p><strong>Token required.</strong> {escape(note)}</p>"
        '<p class="muted">The token is <code>RECOVERY_PROXY_ADMIN_TOKEN</code>; after it, an '
        "HttpOnly cookie keeps this browser signed in.</p>"
        f'<form method="get" action="{escape(request.url.path)}">'
        '<input type="password" name="token" autocomplete="off" aria-label="admin token">'
        "<button>Open</button></form>"
    )
    return page("Token required", body, 401, CHALLENGE)
