"""The HTTP surface: health, bad input, fail-open rewrite hook, overhead header."""

from __future__ import annotations

import orjson
import pytest
from httpx import Response

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import Parts
from recovery_proxy.rewrite import ChatRequest, Rewrite, Rewriter
from tests.conftest import UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock


def assert_openai_error(body: dict, type_: str) -> None:
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == type_
    assert body["error"]["message"]


async def test_healthz_ready(client) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "gpt-4o", "messages": [',  # cut short
        b'["not", "an", "object"]',
        b'{"model": "gpt-4o", "temperature": NaN, "messages": []}',  # Python json.dumps
        b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "\\ud83d cut"}]}',
        b'{"model": "gpt-4o", "metadata": ' + b"[" * 1100 + b"]" * 1100 + b', "messages": []}',
    ],
    ids=["truncated", "not-an-object", "nan", "lone-surrogate", "nested-1100"],
)
async def test_bodies_the_proxy_cannot_read_go_upstream_byte_for_byte(client, raw) -> None:
    """Fail-open: the proxy has nothing to add to what it cannot parse; the provider decides
    (it had answered its own 400 invalid_json for valid-enough bodies it could not read)."""
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").respond(
            400, json={"error": {"message": "provider says no", "type": "invalid_request_error"}}
        )
        response = await client.post(
            "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
        )
    assert route.calls.last.request.content == raw
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "provider says no"


async def test_body_over_limit_is_413() -> None:
    async with proxy_client(make_settings(max_body_bytes=1024)) as client:
        big = orjson.dumps(
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * 2000}]}
        )
        response = await client.post("/v1/chat/completions", content=big)
    assert response.status_code == 413
    assert_openai_error(response.json(), "invalid_request_error")
    assert "1024 bytes" in response.json()["error"]["message"]


async def test_unknown_json_fields_are_forwarded_for_the_provider_to_judge(client) -> None:
    body = b'{"model": 42, "messages": "not-a-list", "x_vendor_flag": {"a": [1, 2.50]}}'
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(
                400,
                json={
                    "error": {
                        "message": "bad model",
                        "type": "invalid_request_error",
                        "param": "model",
                        "code": None,
                    }
                },
            )
        )
        response = await client.post("/v1/chat/completions", content=body)
    assert route.calls.last.request.content == body
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "model"


def raising_factory() -> tuple[list[ChatRequest], object]:
    seen: list[ChatRequest] = []

    def factory(settings: Settings, metrics: Metrics, parts: Parts) -> Rewriter:
        async def explode(request: ChatRequest) -> Rewrite:
            seen.append(request)
            raise RuntimeError("classifier bug")

        return explode

    return seen, factory


async def test_rewrite_hook_failure_forwards_original_bytes(chat_body, caplog) -> None:
    seen, factory = raising_factory()
    raw = orjson.dumps(chat_body())
    async with proxy_client(rewriter_factory=factory) as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(
                return_value=Response(200, json={"id": "chatcmpl-1", "choices": []})
            )
            response = await client.post("/v1/chat/completions", content=raw)
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 200
    assert len(seen) == 1
    assert route.calls.last.request.content == raw
    assert "recovery_proxy_rewrite_failures_total 1.0" in metrics
    lines = [r for r in caplog.records if "rewrite failed" in r.getMessage()]
    assert len(lines) == 1 and "classifier bug" in lines[0].getMessage()


async def test_rewrite_hook_can_replace_body_and_reports_injected(chat_body) -> None:
    def factory(settings: Settings, metrics: Metrics, parts: Parts) -> Rewriter:
        async def rewrite(request: ChatRequest) -> Rewrite:
            payload = dict(request.payload)
            payload["messages"] = [*payload["messages"], {"role": "user", "content": "[note]"}]
            return Rewrite(body=orjson.dumps(payload), injected=1)

        return rewrite

    async with proxy_client(rewriter_factory=factory) as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(
                return_value=Response(200, json={"choices": []})
            )
            response = await client.post("/v1/chat/completions", json=chat_body())
    sent = orjson.loads(route.calls.last.request.content)
    assert sent["messages"][-1] == {"role": "user", "content": "[note]"}
    assert response.headers["x-recovery-proxy-injected"] == "1"
    assert float(response.headers["x-recovery-proxy-overhead-ms"]) >= 0
