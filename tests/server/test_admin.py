"""The admin API (issue 14) over HTTP against the real app: absent without a token (and never
relayed upstream), 401 without the right one, sessions after real failing tool calls, rules
reload (a broken directory keeps the old rules), the A/B report, the inspector's token
exchange and escaping."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from recovery_proxy.core.state import Event, Link, SessionState
from recovery_proxy.demo.scenario import COMPACTED
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.server.app import create_app
from recovery_proxy.session.keys import tenant_of
from tests.agent import ScriptedAgent
from tests.conftest import local_rules, make_settings, proxy_client
from tests.upstream import upstream_mock

TOKEN = "adm-7Qm2v9XkLr4Tz8Wc"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SALT = "recovery-proxy"  # Settings' default session_salt
ENOENT = "Error: ENOENT: no such file or directory, open '{}'"
ADMIN_PATHS = [
    ("GET", "/admin"),
    ("GET", "/admin/"),
    ("GET", "/admin/sessions"),
    ("GET", "/admin/sessions/0123456789abcdef:0123456789abcdef01234567"),
    ("GET", "/admin/report"),
    ("POST", "/admin/rules/reload"),
    ("POST", "/admin/sessions/0123456789abcdef:0123456789abcdef01234567/outcome"),
]


def tenant(api_key: str) -> str:
    return tenant_of({"authorization": f"Bearer {api_key}"}, SALT)


def store_of(client: httpx.AsyncClient) -> Any:
    return client.app.state.store  # type: ignore[attr-defined]


async def fail(agent: ScriptedAgent, path: str) -> str:
    """One failing read through the proxy; returns the session key the proxy answered."""
    response = await agent.call("read_file", {"path": path}, ENOENT.format(path))
    assert response.status_code == 200
    return response.headers["x-recovery-proxy-session"]


# ---- disabled: no token configured ------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ADMIN_PATHS)
async def test_without_a_token_admin_is_a_local_404_and_never_reaches_upstream(
    method: str, path: str
) -> None:
    async with proxy_client(make_settings()) as client:
        with upstream_mock(assert_all_called=False) as mock:
            unknown = await client.get("/no-such-path")
            response = await client.request(method, path, headers=AUTH)
            also = await client.request(method, path, headers={"Authorization": "Bearer x"})
        assert mock.unmatched == []  # the provider saw nothing at all
    assert response.status_code == also.status_code == unknown.status_code == 404
    assert response.json() == unknown.json()
    assert "www-authenticate" not in response.headers


async def test_empty_token_counts_as_disabled() -> None:
    async with proxy_client(make_settings(admin_token="")) as client:
        response = await client.get("/admin/sessions", headers={"Authorization": "Bearer "})
    assert response.status_code == 404


async def test_admin_is_not_relayed_even_with_a_session_prefix_or_over_real_http() -> None:
    from recovery_proxy.server.app import create_app
    from recovery_proxy.server.background import BackgroundServer

    with (
        BackgroundServer(create_app(make_settings())) as server,
        upstream_mock(assert_all_called=False) as mock,
    ):
        async with httpx.AsyncClient(base_url=server.url) as http:
            plain = await http.get("/admin/sessions", headers=AUTH)
            reload = await http.post("/admin/rules/reload", headers=AUTH)
            prefixed = await http.get("/s/run-1/admin/sessions", headers=AUTH)
        assert mock.unmatched == []
    assert plain.status_code == reload.status_code == prefixed.status_code == 404


# ---- authorization ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Cookie": f"recovery_proxy_admin={TOKEN}"},  # the cookie holds an HMAC, not the token
    ],
    ids=["none", "wrong", "prefix", "longer", "basic", "no-scheme", "raw-token-cookie"],
)
@pytest.mark.parametrize(("method", "path"), [p for p in ADMIN_PATHS if p[1] != "/admin/"])
async def test_bad_or_missing_token_is_401_with_a_bearer_challenge(
    method: str, path: str, headers: dict[str, str]
) -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        await fail(ScriptedAgent(client), "src/a.ts")
        response = await client.request(method, path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in response.text
    assert "src/a.ts" not in response.text  # no session data


async def test_cookie_reads_but_cannot_reload_rules() -> None:
    """The inspector's cookie authorizes GETs only: a POST needs the Bearer header."""
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        exchange = await client.get(f"/admin/?token={TOKEN}")
        assert exchange.status_code == 303
        assert (await client.get("/admin/sessions")).status_code == 200  # the cookie is sent
        refused = await client.post("/admin/rules/reload")
        assert refused.status_code == 401
        assert (await client.post("/admin/rules/reload", headers=AUTH)).status_code == 200


# ---- sessions ---------------------------------------------------------------------------


async def test_sessions_list_and_detail_after_real_failing_tool_calls() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        alice = ScriptedAgent(client, session="run-a", api_key="sk-alice-secret")
        bob = ScriptedAgent(client, session="run-b", api_key="sk-bob-secret")
        key_a = await fail(alice, "src/config.ts")
        await fail(alice, "src/config.ts")
        key_b = await fail(bob, "docs/missing.md")
        await bob.call("read_file", {"path": "README.md"}, "# project\n")  # a success

        listed = await client.get("/admin/sessions", headers=AUTH)
        assert listed.status_code == 200
        rows = {row["key"]: row for row in listed.json()}
        assert list(rows) == [key_b, key_a]  # most recent first
        assert rows[key_a]["tenant"] == tenant("sk-alice-secret") == key_a.split(":")[0]
        assert rows[key_b]["tenant"] == tenant("sk-bob-secret")
        assert rows[key_a]["tenant"] != rows[key_b]["tenant"]
        assert rows[key_a]["records"] == 2 and rows[key_b]["records"] == 1
        assert rows[key_a]["arm"] == "treatment"
        assert rows[key_a]["last_seen"].endswith("Z")
        assert abs(rows[key_a]["last_seen_epoch"] - rows[key_b]["last_seen_epoch"]) < 60
        assert {"results", "failures", "compactions", "turn"} <= rows[key_a].keys()
        assert "sk-alice-secret" not in listed.text and "sk-bob-secret" not in listed.text

        detail = await client.get(f"/admin/sessions/{key_a}", headers=AUTH)
        assert detail.status_code == 200
        body = detail.json()
        assert body["key"] == key_a and body["tenant"] == tenant("sk-alice-secret")
        assert [r["error"] for r in body["records"]] == [ENOENT.format("src/config.ts")] * 2
        assert {r["operation"] for r in body["records"]} == {"read_file"}
        assert {r["category"] for r in body["records"]} == {"not_found"}
        assert body["compactions"] == []
        # Filled by the tracker: two blocks, the second with its repeat notice.
        kinds = [(e["kind"], e["call_id"]) for e in body["timeline"]]
        calls = [r["call_id"] for r in body["records"]]
        assert [k for k, _ in kinds] == ["block", "block", "notice"], kinds
        assert [c for k, c in kinds if k == "block"] == [c.split(":")[0] for c in calls]
        assert body["timeline"][0]["text"] == ENOENT.format("src/config.ts")
        stats = body["stats"]
        assert (stats["results"], stats["failures"], stats["repeat_failures"]) == (2, 2, 1)
        assert rows[key_a]["results"] == 2 and rows[key_a]["failures"] == 2
        assert rows[key_b]["results"] == 2 and rows[key_b]["failures"] == 1


async def test_stats_and_timeline_filled_in_the_store_show_in_list_and_detail() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await fail(ScriptedAgent(client), "src/config.ts")

        def fill(state: SessionState) -> None:
            state.stats.results, state.stats.failures, state.stats.escalations = 7, 3, 1
            now = state.updated or 1.0
            state.timeline = [  # every kind, in place of the one real block
                Event(time=now, turn=1, kind="block", call_id="call_1", text="[Error Recovery]"),
                Event(time=now, turn=3, kind="notice", call_id="call_3", text="repeat notice"),
                Event(time=now, turn=4, kind="escalation", call_id="call_4", text="stop"),
                Event(time=now, turn=5, kind="compaction"),
                Event(time=now, turn=5, kind="summary", text="## Recent failures"),
            ]

        await store_of(client).update(key, fill)
        row = (await client.get("/admin/sessions", headers=AUTH)).json()[0]
        assert (row["results"], row["failures"]) == (7, 3)
        body = (await client.get(f"/admin/sessions/{key}", headers=AUTH)).json()
        assert [e["kind"] for e in body["timeline"]] == [
            "block",
            "notice",
            "escalation",
            "compaction",
            "summary",
        ]
        assert body["stats"]["escalations"] == 1
        assert body["timeline"][1]["text"] == "repeat notice"


async def test_unknown_malformed_and_continuity_index_keys_are_404_and_hidden() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await fail(ScriptedAgent(client), "a.ts")
        index_key = key.split(":")[0] + ":" + "f" * 24

        def as_index(state: SessionState) -> None:
            state.links["thread"] = Link(key=key, touched=1.0)

        await store_of(client).update(index_key, as_index)
        keys = [row["key"] for row in (await client.get("/admin/sessions", headers=AUTH)).json()]
        assert keys == [key]  # the continuity index is not a conversation
        for missing in (index_key, "0" * 16 + ":" + "0" * 24, "not-a-key", "..%2F..%2Fetc"):
            response = await client.get(f"/admin/sessions/{missing}", headers=AUTH)
            assert response.status_code == 404, missing
            assert "a.ts" not in response.text


async def test_list_limit_is_bounded() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        for n in range(3):
            await fail(ScriptedAgent(client, session=f"s{n}"), "a.ts")
        one = await client.get("/admin/sessions?limit=1", headers=AUTH)
        zero = await client.get("/admin/sessions?limit=0", headers=AUTH)
    assert len(one.json()) == 1 and len(zero.json()) == 1


async def test_sqlite_store_sessions_are_listed(tmp_path: Path) -> None:
    settings = make_settings(admin_token=TOKEN, store=f"sqlite:{tmp_path / 'sessions.db'}")
    async with proxy_client(settings) as client:
        key = await fail(ScriptedAgent(client), "src/config.ts")
        rows = (await client.get("/admin/sessions", headers=AUTH)).json()
        detail = (await client.get(f"/admin/sessions/{key}", headers=AUTH)).json()
    assert [row["key"] for row in rows] == [key]
    assert detail["records"][0]["target"] == "src/config.ts"


# ---- report -----------------------------------------------------------------------------


async def test_report_gives_per_arm_figures() -> None:
    fraction = 0.5
    async with proxy_client(make_settings(admin_token=TOKEN, control_fraction=fraction)) as client:
        keys = [await fail(ScriptedAgent(client, session=f"ab-{n}"), "a.ts") for n in range(12)]
        for n, key in enumerate(keys):

            def fill(state: SessionState, n: int = n) -> None:
                state.stats.results, state.stats.failures = 10 + n, n

            await store_of(client).update(key, fill)
        response = await client.get("/admin/report", headers=AUTH)
        rows = (await client.get("/admin/sessions", headers=AUTH)).json()
    assert response.status_code == 200
    report = response.json()
    arms = {arm: report[arm] for arm in ("treatment", "control")}
    expected: dict[str, dict[str, int]] = {
        arm: {"sessions": 0, "tool_results": 0, "failures": 0} for arm in ("treatment", "control")
    }
    for n, key in enumerate(keys):
        figures = expected[arm_of(key, fraction)]
        figures["sessions"] += 1
        figures["tool_results"] += 10 + n
        figures["failures"] += n
    for arm, figures in expected.items():
        for name, value in figures.items():
            assert arms[arm][name] == value, (arm, name)
    assert report["difference"]["failure_rate"]["ci95"] is not None
    assert arms["control"]["sessions"] > 0 and arms["treatment"]["sessions"] > 0
    assert {row["key"]: row["arm"] for row in rows} == {k: arm_of(k, fraction) for k in keys}


# ---- rules reload -----------------------------------------------------------------------


async def test_rules_reload_applies_and_a_broken_directory_keeps_the_old_rules(
    tmp_path: Path,
) -> None:
    rules = local_rules(tmp_path, {})
    recovery = rules / "30-recovery.yaml"
    good = recovery.read_text()
    settings = make_settings(admin_token=TOKEN, rules=rules)
    async with proxy_client(settings) as client:
        first = await client.post("/admin/rules/reload", headers=AUTH)
        assert first.status_code == 200
        assert first.json()["status"] == "unchanged"
        version = first.json()["version"]

        recovery.write_text(good.replace("Recovery suggestions:", "What to try next:"))
        applied = await client.post("/admin/rules/reload", headers=AUTH)
        assert applied.status_code == 200
        assert applied.json()["status"] == "applied"
        assert applied.json()["previous"] == version
        new_version = applied.json()["version"]
        assert new_version != version
        agent = ScriptedAgent(client, session="after-reload")
        await fail(agent, "src/one.ts")
        assert "What to try next:" in agent.last_tool_text

        broken = good.replace("thresholds:", "thresholds:\n  bogus_field: 3", 1)
        recovery.write_text(broken)
        refused = await client.post("/admin/rules/reload", headers=AUTH)
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["type"] == "invalid_rules"
        assert "30-recovery.yaml" in error["message"] and "bogus_field" in error["message"]
        assert refused.json()["version"] == new_version
        await fail(agent, "src/two.ts")  # the last good rules are still the active ones
        assert "What to try next:" in agent.last_tool_text

        (rules / "40-local.yaml").write_text("categories: [unclosed\n")
        recovery.write_text(good)
        unreadable = await client.post("/admin/rules/reload", headers=AUTH)
        assert unreadable.status_code == 422
        assert "40-local.yaml" in unreadable.json()["error"]["message"]
        metrics = (await client.get("/metrics")).text
    assert 'recovery_proxy_rules_reloads_total{result="rejected"} 2.0' in metrics
    assert 'recovery_proxy_rules_reloads_total{result="applied"} 1.0' in metrics
    assert f'recovery_proxy_rules_info{{version="{new_version}"}} 1.0' in metrics


async def test_the_admin_api_is_503_until_the_proxy_has_opened_its_store() -> None:
    """Before the lifespan has run there is no store and no rules: the admin API says so."""
    app = create_app(make_settings(admin_token=TOKEN))
    transport = httpx.ASGITransport(app=app)  # no lifespan: the proxy is still starting
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy.local") as client:
        reload = await client.post("/admin/rules/reload", headers=AUTH)
        listed = await client.get("/admin/sessions", headers=AUTH)
    assert reload.status_code == listed.status_code == 503
    assert listed.json()["error"]["message"] == "the proxy is still starting"


async def test_a_custom_rewriter_still_gets_the_apps_store_and_rules() -> None:
    """The app owns the store and the rules: the admin API works whatever the rewriter."""
    from recovery_proxy.rewrite import UNCHANGED

    def factory(*_: Any) -> Any:
        async def rewrite(request: Any) -> Any:
            return UNCHANGED

        return rewrite

    async with proxy_client(make_settings(admin_token=TOKEN), factory) as client:
        reload = await client.post("/admin/rules/reload", headers=AUTH)
        listed = await client.get("/admin/sessions", headers=AUTH)
    assert reload.status_code == listed.status_code == 200
    assert reload.json()["status"] == "unchanged" and listed.json() == []


# ---- inspector over HTTP ----------------------------------------------------------------


async def test_inspector_token_exchange_sets_a_strict_httponly_cookie_and_drops_the_token() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await fail(ScriptedAgent(client), "src/config.ts")
        response = await client.get(f"/admin/sessions/{key}?token={TOKEN}&view=full")
        assert response.status_code == 303
        assert response.headers["location"] == f"/admin/sessions/{key}?view=full"
        cookie = response.headers["set-cookie"].lower()
        for attribute in ("httponly", "samesite=strict", "path=/admin"):
            assert attribute in cookie
        assert TOKEN.lower() not in cookie
        page = await client.get(response.headers["location"], headers={"Accept": "text/html"})
        assert page.status_code == 200
        assert "src/config.ts" in page.text


async def test_each_login_has_its_own_cookie_which_logout_and_expiry_revoke(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A copied cookie reads nothing once its login ended: logged out, or 12 h old."""
    from recovery_proxy.server import admin

    async def login(client: httpx.AsyncClient) -> str:
        cookie = (await client.get(f"/admin/?token={TOKEN}")).cookies[admin.COOKIE]
        client.cookies.clear()  # each request below says which login it comes from
        return cookie

    def jar(cookie: str) -> dict[str, str]:
        return {"Cookie": f"{admin.COOKIE}={cookie}"}

    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        first, second = await login(client), await login(client)
        assert first != second  # per login, not derived from the token
        for cookie in (first, second):
            listed = await client.get("/admin/sessions", headers=jar(cookie))
            assert listed.status_code == 200
        out = await client.post("/admin/logout", headers=jar(first))
        assert out.status_code == 200 and out.json() == {"status": "logged out"}
        gone = await client.get("/admin/sessions", headers=jar(first))
        assert gone.status_code == 401
        kept = await client.get("/admin/sessions", headers=jar(second))
        assert kept.status_code == 200
        later = time.monotonic() + admin.COOKIE_MAX_AGE + 1
        monkeypatch.setattr(admin.time, "monotonic", lambda: later)
        expired = await client.get("/admin/sessions", headers=jar(second))
        assert expired.status_code == 401


async def test_inspector_without_a_token_shows_only_the_token_page() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await fail(ScriptedAgent(client), "src/secret-name.ts")
        for url in ("/admin/", f"/admin/sessions/{key}", "/admin/?token=wrong"):
            page = await client.get(url, headers={"Accept": "text/html"})
            assert page.status_code == 401, url
            assert "Token required" in page.text
            assert "secret-name" not in page.text and "not_found" not in page.text
            assert "set-cookie" not in page.headers


async def test_inspector_escapes_attacker_text_under_a_no_script_csp() -> None:
    attack = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = ScriptedAgent(client)
        await agent.call("run", {"command": attack}, f"Error: {attack}")
        key = agent.responses[-1].headers["x-recovery-proxy-session"]
        page = await client.get(f"/admin/sessions/{key}", headers={**AUTH, "Accept": "text/html"})
        listing = await client.get("/admin/", headers=AUTH)
    assert page.status_code == listing.status_code == 200
    assert "<script" not in page.text.lower() and "<img" not in page.text.lower()
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp  # no script source at all
    assert "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"


async def test_no_openapi_schema_or_docs_are_served_with_or_without_admin() -> None:
    for settings in (make_settings(), make_settings(admin_token=TOKEN)):
        async with proxy_client(settings) as client:
            for path in ("/openapi.json", "/docs", "/redoc"):
                response = await client.get(path)
                assert response.status_code == 404, path
                assert response.json() == {"detail": "Not Found"}


async def test_sessions_carry_the_name_their_agent_gave_and_filter_by_it() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        fix = await fail(ScriptedAgent(client, session="fix-1234"), "src/config.ts")
        docs = await fail(ScriptedAgent(client, session="docs-run-7"), "docs/cli.md")
        unnamed = ScriptedAgent(client, session=None, task="Rename the CLI flags.\nThen test.")
        plain = await fail(unnamed, "src/cli.ts")
        listed = (await client.get("/admin/sessions", headers=AUTH)).json()
        names = {row["key"]: row["name"] for row in listed}
        assert names == {
            fix: "fix-1234",
            docs: "docs-run-7",
            plain: "fingerprint: Rename the CLI flags.",
        }
        found = await client.get("/admin/sessions?name=FIX-12", headers=AUTH)
        assert [row["key"] for row in found.json()] == [fix]
        detail = await client.get(f"/admin/sessions/{docs}", headers=AUTH)
        assert detail.json()["name"] == "docs-run-7"


async def test_the_timeline_shows_exactly_what_the_model_received() -> None:
    """Each block entry carries the whole block as it was appended (it kept only its first
    line, 200 characters at most), and the summary entry the whole summary in force."""
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = ScriptedAgent(client, session="timeline-full")
        key = await fail(agent, "src/config.ts")
        received = agent.last_tool_text
        await fail(agent, "src/config.ts")
        agent.messages = [
            agent.messages[0],
            {
                "role": "user",
                "content": "This session is being continued from a previous conversation that "
                "ran out of context. Summary: the config is missing.",
            },
        ]
        await agent.send()
        summary = agent.system_text.split("\n\n", 1)[1]
        detail = (await client.get(f"/admin/sessions/{key}", headers=AUTH)).json()
        page = await client.get(f"/admin/sessions/{key}", headers={**AUTH, "Accept": "text/html"})
    blocks = [e["added"] for e in detail["timeline"] if e["kind"] == "block"]
    assert received == ENOENT.format("src/config.ts") + "\n\n" + blocks[0]
    assert "Recovery suggestions:" in blocks[0] and len(blocks) == 2
    (latest,) = [e["added"] for e in detail["timeline"] if e["kind"] == "summary"]
    assert latest == summary
    assert html.escape(blocks[1]) in page.text


def appended(forwarded: dict[str, Any], sent: list[dict[str, Any]]) -> dict[str, str]:
    """call id -> the text the proxy appended to that tool result, in one forwarded body."""
    original = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    out = {}
    for message in forwarded["messages"]:
        if message["role"] == "tool" and message["content"] != original[message["tool_call_id"]]:
            before = original[message["tool_call_id"]] + "\n\n"
            assert message["content"].startswith(before)
            out[message["tool_call_id"]] = message["content"].removeprefix(before)
    return out


async def test_each_request_shows_what_the_model_received_on_top_of_what_the_agent_sent() -> None:
    """The session's requests: per rewritten request, each text it added exactly as the
    provider received it, what it re-applied byte for byte (by call id), the new tokens; a
    request carrying the same as the previous one is counted in that row."""
    from recovery_proxy import tokens

    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = ScriptedAgent(client, session="per-request")
        key = await fail(agent, "src/config.ts")
        first = appended(agent.forwarded[-1], agent.messages)
        await agent.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")  # re-applies it
        await fail(agent, "src/settings.json")
        third = appended(agent.forwarded[-1], agent.messages)
        headers = agent.responses[-1].headers
        agent.messages = [agent.messages[0], {"role": "user", "content": COMPACTED}]
        await agent.send()
        summary = agent.system_text.split("\n\n", 1)[1]
        body = (await client.get(f"/admin/sessions/{key}", headers=AUTH)).json()
    one, two, three = body["requests"]

    [call_1] = first
    assert one["added"] == [{"kind": "result", "call_id": call_1, "text": first[call_1]}]
    assert one["reapplied"] == [] and one["refused"] is None
    assert one["tokens_added"] == tokens.count(first[call_1])
    assert one["repeats"] == 1 and one["last"] > one["time"]  # the list_dir request

    [call_3] = [c for c in third if c != call_1]
    assert third[call_1] == first[call_1]  # re-applied byte for byte
    assert two["added"] == [{"kind": "result", "call_id": call_3, "text": third[call_3]}]
    assert two["reapplied"] == [{"kind": "result", "call_id": call_1}]
    assert two["tokens_added"] == tokens.count(third[call_3]) and two["repeats"] == 0
    said = int(headers["x-recovery-proxy-injected"]), int(headers["x-recovery-proxy-reapplied"])
    assert said == (len(two["added"]), len(two["reapplied"])) == (1, 1)  # the headers agree

    assert three["added"] == [{"kind": "summary", "call_id": None, "text": summary}]
    assert three["tokens_added"] == tokens.count(summary) and three["reapplied"] == []
    assert sum(r["tokens_added"] for r in body["requests"]) == body["stats"]["tokens_injected"]


async def test_a_session_page_refreshes_itself_unless_told_not_to() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await fail(ScriptedAgent(client, session="watched"), "src/config.ts")
        html_headers = {**AUTH, "Accept": "text/html"}
        url = f"/admin/sessions/{key}"
        pages = {
            query: (await client.get(url + query, headers=html_headers)).text
            for query in ("", "?refresh=2", "?refresh=0", "?refresh=soon", "?refresh=99999")
        }
        listing = (await client.get("/admin/", headers=AUTH)).text
    assert '<meta http-equiv="refresh" content="5">' in pages[""]
    assert '<meta http-equiv="refresh" content="2">' in pages["?refresh=2"]
    assert 'http-equiv="refresh"' not in pages["?refresh=0"]
    assert '<a href="?refresh=0">stop</a>' in pages[""]
    assert '<a href="?refresh=5">refresh every 5 s</a>' in pages["?refresh=0"]
    assert '<meta http-equiv="refresh" content="5">' in pages["?refresh=soon"]
    assert '<meta http-equiv="refresh" content="3600">' in pages["?refresh=99999"]
    assert 'http-equiv="refresh"' not in listing  # only a session's page


async def test_the_request_view_escapes_attacker_text() -> None:
    attack = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = ScriptedAgent(client, session="hostile-requests")
        await agent.call("fetch", {"url": attack}, f"Error: {attack}")
        key = agent.responses[-1].headers["x-recovery-proxy-session"]
        page = await client.get(f"/admin/sessions/{key}", headers={**AUTH, "Accept": "text/html"})
        body = (await client.get(f"/admin/sessions/{key}", headers=AUTH)).json()
    section = page.text.split('<table id="requests">', 1)[1].split("</table>", 1)[0]
    [added] = body["requests"][0]["added"]
    assert attack in added["text"]  # the JSON carries the text as it was sent
    assert html.escape(added["text"]) in section
    assert "<script" not in section.lower() and "<img" not in section.lower()
