"""What an operator sees of a session: its JSON row and detail (the admin API) and the
server-rendered inspector pages. Everything taken from session state is escaped (tool errors
are attacker-controlled text); pages carry a Content-Security-Policy allowing no script. A
session's page reloads itself every few seconds (a `<meta>` refresh, no script)."""

from __future__ import annotations

import base64
import hashlib
import html
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from recovery_proxy.core.conversation import call_id_of
from recovery_proxy.core.request_log import added_texts
from recovery_proxy.core.state import RequestRecord, SessionState
from recovery_proxy.core.timeline import with_added_text
from recovery_proxy.experiment.arms import arm_of

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
REFRESH = 5  # seconds between reloads of a session page (`?refresh=N`, 0 stops it)
MAX_REFRESH = 3600


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def session_row(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        "name": state.name,
        "key": key,
        "tenant": key.partition(":")[0],
        "arm": arm_of(key, fraction),
        "last_seen": iso(state.updated),
        "last_seen_epoch": state.updated,
        "turn": state.turn,
        "results": state.stats.results,
        "failures": state.stats.failures,
        "records": len(state.records),
        "compactions": len(state.compactions),
        "outcome": state.outcome.result if state.outcome else None,  # as reported (issue 28)
    }


def session_detail(key: str, state: SessionState, fraction: float) -> dict[str, Any]:
    return {
        **session_row(key, state, fraction),
        "stats": state.stats.model_dump(),
        "records": [record.model_dump() for record in state.records],
        "timeline": [
            {**event.model_dump(exclude={"ref"}), "added": added}
            for event, added in with_added_text(state)
        ],
        "requests": [request_detail(state, record) for record in state.requests],
        "compactions": [compaction.model_dump() for compaction in state.compactions],
        "summary": state.summary,
        "usage": state.provider.usage.model_dump(),  # issue 25: what the loops cost
        "resolutions": [r.model_dump() for r in state.resolutions.items],  # what worked
        "outcome": state.outcome.model_dump() if state.outcome else None,  # how it ended
    }


def request_detail(state: SessionState, record: RequestRecord) -> dict[str, Any]:
    """One request the proxy rewrote or refused: the texts it added (in full, as far as the
    session still holds them), those it re-applied (by call id), the new tokens."""
    added = [
        {"kind": "result" if key else "summary", "call_id": call_id_of(key) or None, "text": text}
        for key, text in added_texts(state, record)
    ]
    reapplied: list[dict[str, Any]] = [
        {"kind": "result", "call_id": call_id_of(key)} for key in record.reapplied
    ]
    if record.summary == "reapplied":
        reapplied.append({"kind": "summary", "call_id": None})
    return {
        "time": record.time,
        "turn": record.turn,
        "tokens_added": record.tokens,
        "added": added,
        "reapplied": reapplied,
        "reapplied_more": record.more,
        "refused": record.refused or None,
        "repeats": record.repeats,
        "last": record.last if record.repeats else None,
    }


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


def _ago(epoch: float) -> str:
    seconds = max(0, int(datetime.now(UTC).timestamp() - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _arm(arm: str) -> str:
    return f'<span class="tag a-{escape(arm)}">{escape(arm)}</span>'


def _outcome_tag(result: str | None) -> str:
    return f'<span class="tag o-{escape(result)}">{escape(result)}</span>' if result else ""


def _outcome(state: SessionState) -> str:
    """The reported outcome as a tag, with its score and note ("" when none was reported)."""
    o = state.outcome
    if o is None:
        return ""
    score = f" · score {o.score:g}" if o.score is not None else ""
    note = f" · {escape(o.note)}" if o.note else ""
    when = f"reported by the {escape(o.by)} {escape(iso(o.time))}"
    return f'{_outcome_tag(o.result)}<span class="muted">{escape(score)}{note} · {when}</span>'


def list_html(found: list[tuple[str, SessionState]], fraction: float, name: str = "") -> str:
    head = (
        "<header><h1>recovery-proxy · sessions</h1>"
        f'<span class="muted">{len(found)} live, most recent first · '
        f"control fraction {escape(fraction)}</span></header>"
        '<form method="get" action="/admin/"><input name="name" placeholder="session name" '
        f'value="{escape(name)}"> <button>Filter</button></form>'
    )
    if not found:
        return head + '<p class="empty">No sessions yet.</p>'
    rows = []
    for key, state in found:
        s = session_row(key, state, fraction)
        rows.append(
            "<tr>"
            f'<td><a class="name" href="/admin/sessions/{quote(key, safe=":")}">'
            f"{escape(s['name'] or '(unnamed)')}</a></td>"
            f'<td class="key">{escape(key)}</td>'
            f'<td class="key">{escape(s["tenant"])}</td><td>{_arm(s["arm"])}</td>'
            f'<td title="{escape(s["last_seen"])}">{escape(_ago(state.updated))}</td>'
            f'<td class="n">{escape(s["turn"])}</td><td class="n">{escape(s["results"])}</td>'
            f'<td class="n">{escape(s["failures"])}</td><td class="n">{escape(s["records"])}</td>'
            f'<td class="n">{escape(s["compactions"])}</td>'
            f"<td>{_outcome_tag(s['outcome'])}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>session</th><th>key</th><th>tenant</th><th>arm</th>"
        "<th>last seen</th>"
        '<th class="n">turn</th><th class="n">results</th><th class="n">failures</th>'
        '<th class="n">records</th><th class="n">compactions</th><th>outcome</th></tr></thead>'
        "<tbody>" + "".join(rows) + "</tbody></table>"
    )
    return head + table


# The session counters, named for what they count (proxy/core/state.py `Stats`).
STAT_LABELS = {
    "results": "tool results",
    "repeat_failures": "repeated failures",
    "loop_notices": "repeat and loop notices",
    "streak_total": "failures in ended streaks",
    "streaks": "failure streaks ended",
    "tokens_injected": "tokens added",
    "records": "failure records kept",
}


def detail_html(key: str, state: SessionState, fraction: float, refresh: int = 0) -> str:
    s = session_row(key, state, fraction)
    if refresh > 0:
        reload = (
            f'<span class="refresh muted">refreshes every {int(refresh)} s · '
            '<a href="?refresh=0">stop</a></span>'
        )
    else:
        reload = (
            f'<span class="refresh muted"><a href="?refresh={REFRESH}">refresh every '
            f"{REFRESH} s</a></span>"
        )
    head = (
        f'<header><h1>Session <span class="key">{escape(key)}</span></h1>'
        f"{_arm(s['arm'])}{_outcome(state)}"
        f'<span class="muted">tenant <span class="key">{escape(s["tenant"])}'
        f"</span> · last seen {escape(s['last_seen'])}</span>"
        f'<a href="/admin/">all sessions</a>{reload}</header>'
    )
    numbers = {"turn": state.turn, **state.stats.model_dump(), "records": len(state.records)}
    numbers |= usage_numbers(state)
    stats = (
        "<dl>"
        + "".join(
            f"<div><dt>{escape(STAT_LABELS.get(name, name.replace('_', ' ')))}</dt>"
            f"<dd>{escape(value)}</dd></div>"
            for name, value in numbers.items()
        )
        + "</dl>"
    )
    if state.timeline:
        events = "".join(
            f'<tr><td class="t" title="{escape(iso(ev.time))}">{escape(_clock(ev.time))}</td>'
            f'<td class="n">{escape(ev.turn)}</td>'
            f'<td><span class="tag k-{escape(ev.kind)}">{escape(ev.kind)}</span></td>'
            f'<td class="key">{escape(ev.call_id)}</td>'
            f"<td><pre>{escape(added)}</pre></td></tr>"
            for ev, added in with_added_text(state)
        )
        timeline = (
            '<table><thead><tr><th>time</th><th class="n">turn</th><th>kind</th>'
            f"<th>call</th><th>text</th></tr></thead><tbody>{events}</tbody></table>"
        )
    else:
        timeline = '<p class="empty">Nothing injected yet.</p>'
    if state.records:
        rows = "".join(
            f'<tr><td class="t" title="{escape(iso(r.time))}">{escape(_clock(r.time))}</td>'
            f'<td class="n">{escape(r.turn)}</td>'
            f"<td><code>{escape(r.operation)}({escape(r.target or r.label)})</code></td>"
            f'<td>{escape(r.category)}</td><td class="key">{escape(r.call_id)}</td>'
            f"<td><pre>{escape(r.error)}</pre></td></tr>"
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
        "<h2>Failure summary (frozen at the last compaction)</h2>"
        f"<pre>{escape(state.summary)}</pre>"
    )
    return (
        head
        + stats
        + f"<h2>Requests ({len(state.requests)}) "
        + '<span class="muted">what the model received on top of what the agent sent, '
        + "newest first</span></h2>"
        + requests_html(state)
        + f"<h2>Timeline ({len(state.timeline)})</h2>"
        + timeline
        + f"<h2>Failure records ({len(state.records)})</h2>"
        + records
        + (summary if state.summary else "")
    )


NOTHING_NEW = '<span class="muted">nothing new</span>'


def requests_html(state: SessionState) -> str:
    """The request log, newest first: per request, each text added in full, what was
    re-applied byte for byte, the new tokens; a refused request says so."""
    if not state.requests:
        return '<p class="empty">No request rewritten yet.</p>'
    rows = []
    for record in reversed(state.requests):
        r = request_detail(state, record)
        when = f'<span title="{escape(iso(record.time))}">{escape(_clock(record.time))}</span>'
        if r["repeats"]:
            more = "request" if r["repeats"] == 1 else "requests"
            when += (
                f'<div class="repeats muted">+{escape(r["repeats"])} {more} carrying the same, '
                f"until {escape(_clock(record.last))}</div>"
            )
        added = "".join(_added_html(item) for item in r["added"])
        if record.refused:
            added = (
                '<span class="tag k-escalation">refused (409)</span> '
                f"<code>{escape(record.refused)}</code>" + added
            )
        rows.append(
            f'<tr><td class="t">{when}</td><td class="n">{escape(record.turn)}</td>'
            f'<td class="n">{escape(record.tokens)}</td>'
            f"<td>{added or NOTHING_NEW}</td>"
            f"<td>{_reapplied_html(r)}</td></tr>"
        )
    return (
        '<table id="requests"><thead><tr><th>time</th><th class="n">turn</th>'
        '<th class="n">tokens added</th>'
        "<th>added (in full)</th><th>re-applied (byte for byte)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _added_html(item: dict[str, Any]) -> str:
    label = (
        f'<span class="key">after {escape(item["call_id"])}</span>'
        if item["kind"] == "result"
        else '<span class="key"><span class="tag k-summary">summary</span> in the system text'
        "</span>"
    )
    text = item["text"]
    shown = (
        f"<pre>{escape(text)}</pre>"
        if text is not None
        else '<span class="muted">(no longer held by the session)</span>'
    )
    return f'<div class="added">{label}{shown}</div>'


def _reapplied_html(r: dict[str, Any]) -> str:
    names = [
        f'<span class="key">{escape(item["call_id"])}</span>'
        if item["kind"] == "result"
        else '<span class="tag k-summary">summary</span>'
        for item in r["reapplied"]
    ]
    if r["reapplied_more"]:
        names.append(f'<span class="muted">+{escape(r["reapplied_more"])} earlier</span>')
    return ", ".join(names) if names else '<span class="muted">none</span>'


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%m-%d %H:%M:%S")


def usage_numbers(state: SessionState) -> dict[str, Any]:
    """The provider-reported usage of a session's responses, for the detail view (issue 25):
    tokens, those in failure streaks, the proxy's own, cost where priced."""
    u = state.provider.usage
    if not u.responses:
        return {}
    return {
        "responses read": u.responses,
        "tokens": u.input + u.output,
        "tokens in failure streaks": u.streak_input + u.streak_output,
        "tokens added by the proxy": u.added,
        "cost USD": f"{u.cost:.4f}" if u.priced else "-",
        "cost USD in failure streaks": f"{u.streak_cost:.4f}" if u.priced else "-",
    }


def refresh_seconds(value: str | None) -> int:
    """A session page's `?refresh=` as seconds: absent or unreadable is the default, 0 stops."""
    try:
        seconds = int(value) if value is not None else REFRESH
    except ValueError:
        return REFRESH
    return max(0, min(seconds, MAX_REFRESH))
