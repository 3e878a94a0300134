"""What an operator sees of a session in a browser: the list and detail pages of the
inspector (their frame and CSP: proxy/server/page.py; the admin API's JSON:
proxy/server/session_views.py). Everything taken from session state is escaped (tool errors
are attacker-controlled text). A session's page reloads itself every few seconds (a `<meta>`
refresh, no script)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from recovery_proxy.core.state import SessionState
from recovery_proxy.core.timeline import with_added_text
from recovery_proxy.server.page import escape
from recovery_proxy.server.session_views import iso, request_detail, session_row, usage_numbers

REFRESH = 5  # seconds between reloads of a session page (`?refresh=N`, 0 stops it)
MAX_REFRESH = 3600


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


def refresh_seconds(value: str | None) -> int:
    """A session page's `?refresh=` as seconds: absent or unreadable is the default, 0 stops."""
    try:
        seconds = int(value) if value is not None else REFRESH
    except ValueError:
        return REFRESH
    return max(0, min(seconds, MAX_REFRESH))
