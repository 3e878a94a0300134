"""Reporting outcomes over HTTP against the real app (proxy/server/outcome.py and the admin
route): a harness reaches its own tenant's sessions only, by name or key; every mistake is a
clear JSON error naming the field; nothing is relayed upstream; the session's detail, the
inspector and the metrics show what was reported."""

from __future__ import annotations

import html
from typing import Any

import httpx
import pytest

from recovery_proxy.session.keys import scoped, tenant_of
from tests.agent import ScriptedAgent
from tests.conftest import make_settings, proxy_client
from tests.upstream import upstream_mock

TOKEN = "adm-Vq8c2LxT4m9Rk7Ws"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
ALICE = {"Authorization": "Bearer sk-alice-2b7f9c"}
BOB = {"Authorization": "Bearer sk-bob-81d0e4"}
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"


def outcome_url(session: str) -> str:
    return f"/v1/recovery/sessions/{session}/outcome"


async def failing_session(client: httpx.AsyncClient, session: str, api_key: str) -> str:
    """A session with one failed read through the proxy; its key, as the proxy answered."""
    agent = ScriptedAgent(client, session=session, api_key=api_key)
    response = await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert response.status_code == 200
    return response.headers["x-recovery-proxy-session"]


async def test_the_harness_reports_by_name_or_key_and_the_latest_report_wins() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await failing_session(client, "fix-4411", "sk-alice-2b7f9c")
        with upstream_mock(assert_all_called=False) as mock:
            first = await client.post(
                outcome_url("fix-4411"),
                json={"result": "failed", "score": 0.25, "note": "2 tests still red"},
                headers=ALICE,
            )
            second = await client.post(
                outcome_url(key), json={"result": "succeeded", "score": 1}, headers=ALICE
            )
        assert mock.unmatched == []  # the provider never sees an outcome
        detail = (await client.get(f"/admin/sessions/{key}", headers=ADMIN)).json()
        row = (await client.get("/admin/sessions", headers=ADMIN)).json()[0]
        metrics = (await client.get("/metrics")).text
    assert first.status_code == second.status_code == 200
    assert first.headers["cache-control"] == "no-store"
    body = first.json()
    assert (body["session"], body["name"], body["arm"]) == (key, "fix-4411", "treatment")
    assert {k: body["outcome"][k] for k in ("result", "score", "note", "by")} == {
        "result": "failed",
        "score": 0.25,
        "note": "2 tests still red",
        "by": "harness",
    }
    assert second.json()["outcome"]["result"] == "succeeded"
    assert detail["outcome"] == second.json()["outcome"]  # the latest report, whole
    assert detail["outcome"]["note"] == ""  # not merged with the earlier report
    assert detail["stats"]["failures"] == 1  # the tracker's figures untouched
    assert row["outcome"] == "succeeded"
    assert 'recovery_proxy_outcomes_total{arm="none",outcome="failed"} 1.0' in metrics
    assert 'recovery_proxy_outcomes_total{arm="none",outcome="succeeded"} 1.0' in metrics


async def test_another_tenants_session_is_a_404_like_a_missing_one() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await failing_session(client, "fix-4411", "sk-alice-2b7f9c")
        by_name = await client.post(outcome_url("fix-4411"), json={"result": "failed"}, headers=BOB)
        by_key = await client.post(outcome_url(key), json={"result": "failed"}, headers=BOB)
        anonymous = await client.post(outcome_url(key), json={"result": "failed"})
        missing = await client.post(
            outcome_url("no-such-run"), json={"result": "failed"}, headers=ALICE
        )
        detail = (await client.get(f"/admin/sessions/{key}", headers=ADMIN)).json()
        sessions = (await client.get("/admin/sessions", headers=ADMIN)).json()
    for response in (by_name, by_key, anonymous, missing):
        assert response.status_code == 404
        assert response.json() == {
            "error": {
                "message": "no such session of this credential (it may have expired)",
                "type": "not_found",
            }
        }
    assert detail["outcome"] is None
    assert [row["key"] for row in sessions] == [key]  # no session was created by a report


@pytest.mark.parametrize(
    ("body", "status", "kind", "message"),
    [
        (b'{"result": "won"}', 422, "invalid_outcome", "result: Input should be 'succeeded'"),
        (b'{"result": "failed", "score": 2}', 422, "invalid_outcome", "score: Input should be"),
        (b'{"result": "failed", "scor": 0.5}', 422, "invalid_outcome", "scor: Extra inputs"),
        (b'{"score": 0.5}', 422, "invalid_outcome", "result: Field required"),
        (b"succeeded", 400, "invalid_json", "the body is not JSON"),
        (b'["succeeded"]', 400, "invalid_json", "the body must be a JSON object"),
    ],
)
async def test_a_bad_body_names_the_field(
    body: bytes, status: int, kind: str, message: str
) -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        key = await failing_session(client, "fix-4411", "sk-alice-2b7f9c")
        response = await client.post(outcome_url("fix-4411"), content=body, headers=ALICE)
        detail = (await client.get(f"/admin/sessions/{key}", headers=ADMIN)).json()
    assert response.status_code == status
    assert response.json()["error"]["type"] == kind
    assert response.json()["error"]["message"].startswith(message)
    assert detail["outcome"] is None


async def test_route_method_size_and_credential_refusals() -> None:
    settings = make_settings(require_credential=True)
    async with proxy_client(settings) as client:
        await failing_session(client, "fix-4411", "sk-alice-2b7f9c")
        with upstream_mock(assert_all_called=False) as mock:
            read = await client.get(outcome_url("fix-4411"), headers=ALICE)
            other = await client.post("/v1/recovery/sessions/fix-4411", headers=ALICE, json={})
            huge = await client.post(
                outcome_url("fix-4411"),
                json={"result": "failed", "note": "x" * 20_000},
                headers=ALICE,
            )
            bare = await client.post(outcome_url("fix-4411"), json={"result": "failed"})
        assert mock.unmatched == []
    assert (read.status_code, read.headers["allow"]) == (405, "POST")
    assert other.status_code == 404
    assert "POST /v1/recovery/sessions/{session}/outcome" in other.json()["error"]["message"]
    assert huge.status_code == 413
    assert bare.status_code == 401 and bare.json()["error"]["type"] == "missing_credential"


async def test_any_credential_header_and_geminis_key_parameter_scope_the_same_way() -> None:
    """Gemini's `x-goog-api-key` (or `?key=`) and Anthropic's `x-api-key` name a tenant as
    `Authorization` does: the harness reports with whatever its requests carried."""
    async with proxy_client() as client:
        key = await failing_session(client, "gem-run-3", "sk-alice-2b7f9c")
        same = "Bearer sk-alice-2b7f9c"  # the credential string the tenant was hashed from
        by_query = await client.post(
            outcome_url(key) + "?key=" + same, json={"result": "abandoned"}
        )
        by_header = await client.post(
            outcome_url(key), json={"result": "failed"}, headers={"x-goog-api-key": same}
        )
        wrong = await client.post(
            outcome_url(key), json={"result": "failed"}, headers={"x-api-key": "sk-bob-81d0e4"}
        )
    assert tenant_of({"authorization": same}, "recovery-proxy") == key.split(":")[0]
    assert by_query.status_code == by_header.status_code == 200
    assert wrong.status_code == 404


async def test_an_operator_reports_any_tenants_session_by_key_with_the_bearer_token() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN, control_fraction=1.0)) as client:
        key = await failing_session(client, "fix-4411", "sk-alice-2b7f9c")
        note = "<script>alert(1)</script> flaky"
        url = f"/admin/sessions/{key}/outcome"
        answer = await client.post(url, json={"result": "failed", "note": note}, headers=ADMIN)
        assert (await client.get(f"/admin/?token={TOKEN}")).status_code == 303  # a cookie now
        by_cookie = await client.post(url, json={"result": "succeeded"})
        unknown = await client.post(
            f"/admin/sessions/{scoped('0' * 16, 'h:x')}/outcome",
            json={"result": "failed"},
            headers=ADMIN,
        )
        malformed = await client.post(
            "/admin/sessions/fix-4411/outcome", json={"result": "failed"}, headers=ADMIN
        )
        bad = await client.post(url, json={"result": "failed", "score": "high"}, headers=ADMIN)
        page = await client.get(f"/admin/sessions/{key}", headers={"Accept": "text/html"})
        listing = await client.get("/admin/")
        metrics = (await client.get("/metrics")).text
    assert answer.status_code == 200
    outcome: dict[str, Any] = answer.json()["outcome"]
    assert (outcome["result"], outcome["by"], answer.json()["arm"]) == (
        "failed",
        "operator",
        "control",
    )
    assert by_cookie.status_code == 401  # a POST needs the Bearer header
    assert unknown.status_code == malformed.status_code == 404
    assert unknown.json()["error"]["message"] == "no such session (it may have expired)"
    assert bad.status_code == 422 and bad.json()["error"]["message"].startswith("score:")
    assert page.status_code == listing.status_code == 200
    assert '<span class="tag o-failed">failed</span>' in page.text
    assert html.escape(note) in page.text and "<script>" not in page.text
    assert "reported by the operator" in page.text
    assert '<span class="tag o-failed">failed</span>' in listing.text
    assert 'recovery_proxy_outcomes_total{arm="control",outcome="failed"} 1.0' in metrics
