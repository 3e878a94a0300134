"""Session discovery order (session/keys.py with the bundled rules): Responses' `conversation`
and `conversation_id` body fields, and Codex's `x-client-request-id` read last of all."""

from __future__ import annotations

from typing import Any

import pytest

from recovery_proxy.rules.load import load_rules
from recovery_proxy.session.keys import session_id
from tests.conftest import make_settings, proxy_client

SESSIONS = load_rules(None).sessions


def found(headers: dict[str, str], payload: dict[str, Any], hint: str | None = None) -> str:
    return session_id(headers, payload, SESSIONS, "fingerprint", hint)


@pytest.mark.parametrize(
    "payload",
    [
        {"conversation": "conv_689667905b048191b4740501625afd940c7533ace33a2dab"},
        {"conversation": {"id": "conv_689667905b048191b4740501625afd940c7533ace33a2dab"}},
        {"conversation_id": "conv_689667905b048191b4740501625afd940c7533ace33a2dab"},
    ],
)
def test_a_conversation_field_names_the_session(payload: dict[str, Any]) -> None:
    assert found({}, payload) == "b:conv_689667905b048191b4740501625afd940c7533ace33a2dab"
    # a conversation field comes before prompt_cache_key
    assert found({}, {**payload, "prompt_cache_key": "k"}).startswith("b:conv_")


def test_x_client_request_id_is_read_after_everything_else() -> None:
    thread = {"x-client-request-id": "0199a1f2-4c1e-7d3a-9b0e-5f2d8c6e1a47"}
    assert found(thread, {}) == "h:0199a1f2-4c1e-7d3a-9b0e-5f2d8c6e1a47"
    assert found({**thread, "session-id": "s"}, {}) == "h:s"
    assert found({**thread, "x-foo-session-id": "g"}, {}) == "h:g"
    assert found(thread, {}, hint="claude") == "w:claude"  # Claude Code's per-request id loses
    assert found(thread, {"prompt_cache_key": "k"}) == "b:k"
    assert found({}, {}) == "fp:fingerprint"


async def test_the_proxys_own_errors_carry_a_request_id(client) -> None:
    refused = await client.post("/s/bad id!/v1/messages", json={}, headers={"x-api-key": "k"})
    assert refused.status_code == 400 and refused.headers["request-id"].startswith("req_proxy_")
    async with proxy_client(make_settings(upstream="http://127.0.0.1:1/v1")) as down:
        failed = await down.post("/v1/chat/completions", json={"model": "m", "messages": []})
    assert failed.status_code == 502
    assert failed.headers["request-id"] != refused.headers["request-id"]
