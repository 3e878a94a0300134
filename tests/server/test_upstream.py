"""Forwarding: byte-identical bodies, headers both ways, passthrough paths, upstream errors."""

from __future__ import annotations

import gzip
import time

import httpx
import orjson
from httpx import Response

from recovery_proxy.server.background import free_port
from tests.conftest import ROOT, UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock


async def test_untouched_request_is_byte_identical(client, chat_body) -> None:
    # Odd spacing, key order and number formatting must all survive.
    raw = b'{ "model":"gpt-4o-mini" ,"temperature": 0.70, "messages":[{"role":"user","content":"caf\\u00e9"}]}'
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(200, json={"choices": []})
        )
        await client.post("/v1/chat/completions", content=raw)
        await client.post("/v1/chat/completions", content=orjson.dumps(chat_body()))
    assert route.calls[0].request.content == raw
    assert route.calls[1].request.content == orjson.dumps(chat_body())


async def test_request_headers_forwarded_and_hop_by_hop_dropped(client, chat_body) -> None:
    headers = {
        "Authorization": "Bearer sk-test-123",
        "OpenAI-Organization": "org-abc",
        "OpenAI-Project": "proj_xyz",
        "X-Stainless-Lang": "python",
        "X-Session-Id": "sess-42",
        "Connection": "keep-alive, x-drop-me",
        "Keep-Alive": "timeout=5",
        "TE": "trailers",
    }
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(200, json={"choices": []})
        )
        await client.post("/v1/chat/completions", json=chat_body(), headers=headers)
    sent = route.calls.last.request.headers
    assert sent["authorization"] == "Bearer sk-test-123"
    assert sent["openai-organization"] == "org-abc"
    assert sent["openai-project"] == "proj_xyz"
    assert sent["x-stainless-lang"] == "python"
    assert sent["x-session-id"] == "sess-42"
    assert sent["host"] == UPSTREAM.split("/")[2]
    for hop in ("keep-alive", "te"):
        assert hop not in sent
    assert sent.get("connection") != "keep-alive, x-drop-me"


async def test_response_headers_clients_rely_on_are_returned(client, chat_body) -> None:
    upstream_headers = {
        "retry-after": "3",
        "retry-after-ms": "2500",
        "x-request-id": "req_abc123",
        "x-ratelimit-remaining-requests": "99",
        "x-ratelimit-reset-tokens": "6m0s",
        "content-type": "application/json",
    }
    with upstream_mock() as mock:
        mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(200, json={"choices": []}, headers=upstream_headers)
        )
        response = await client.post("/v1/chat/completions", json=chat_body())
    for key, value in upstream_headers.items():
        assert response.headers[key] == value


async def test_other_v1_paths_pass_through(client) -> None:
    with upstream_mock() as mock:
        models = mock.get(f"{UPSTREAM}/models", params={"limit": "2"}).mock(
            return_value=Response(200, json={"object": "list", "data": []})
        )
        embeddings = mock.post(f"{UPSTREAM}/embeddings").mock(
            return_value=Response(200, json={"object": "list", "data": [{"embedding": [0.1]}]})
        )
        deleted = mock.delete(f"{UPSTREAM}/files/file-abc").mock(
            return_value=Response(200, json={"id": "file-abc", "deleted": True})
        )
        r1 = await client.get("/v1/models?limit=2", headers={"Authorization": "Bearer sk-1"})
        body = b'{"model":"text-embedding-3-small","input":"hello"}'
        r2 = await client.post("/v1/embeddings", content=body)
        r3 = await client.delete("/v1/files/file-abc")
    assert r1.status_code == r2.status_code == r3.status_code == 200
    assert models.calls.last.request.headers["authorization"] == "Bearer sk-1"
    assert embeddings.calls.last.request.content == body
    assert r3.json() == {"id": "file-abc", "deleted": True}
    assert deleted.called


async def test_upstream_errors_keep_status_and_body(client, chat_body) -> None:
    cases = [
        (
            400,
            {
                "error": {
                    "message": "bad",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
            {},
        ),
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            {},
        ),
        (
            404,
            {
                "error": {
                    "message": "model not found",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
            {},
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
            {"retry-after": "7"},
        ),
        (
            500,
            {
                "error": {
                    "message": "server error",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
            {},
        ),
    ]
    for status, body, headers in cases:
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").mock(
                return_value=Response(status, json=body, headers=headers)
            )
            response = await client.post("/v1/chat/completions", json=chat_body())
        assert response.status_code == status
        assert response.json() == body
        for key, value in headers.items():
            assert response.headers[key] == value


async def test_upstream_unreachable_is_502(chat_body) -> None:
    settings = make_settings(upstream=f"http://127.0.0.1:{free_port()}/v1")
    async with proxy_client(settings) as client:
        response = await client.post("/v1/chat/completions", json=chat_body())
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "upstream_error" and error["code"] == "upstream_unreachable"
    assert set(error) == {"message", "type", "param", "code"}


async def test_upstream_timeout_is_504_after_read_timeout(chat_body) -> None:
    # RECOVERY_PROXY_READ_TIMEOUT bounds the wait for response headers, whatever the
    # (longer) stream chunk timeout says.
    settings = make_settings(read_timeout=0.5, stream_chunk_timeout=300)
    async with proxy_client(settings) as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(
                side_effect=httpx.ReadTimeout("slow")
            )
            started = time.monotonic()
            response = await client.post("/v1/chat/completions", json=chat_body())
    assert 0.5 <= time.monotonic() - started < 5
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    assert route.called


async def test_compressed_response_is_relayed_raw_without_double_decoding(
    client, chat_body
) -> None:
    payload = orjson.dumps({"id": "chatcmpl-9", "choices": [{"message": {"content": "hi" * 500}}]})
    packed = gzip.compress(payload)
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(
                200,
                content=packed,
                headers={"content-encoding": "gzip", "content-type": "application/json"},
            )
        )
        response = await client.post(
            "/v1/chat/completions", json=chat_body(), headers={"accept-encoding": "gzip"}
        )
    assert route.calls.last.request.headers["accept-encoding"] == "gzip"
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) == len(packed)
    assert response.content == payload  # httpx decoded exactly once


async def test_without_accept_encoding_the_proxy_asks_for_identity(client, chat_body) -> None:
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(200, json={"choices": []})
        )
        raw = orjson.dumps(chat_body())
        await client.post("/v1/chat/completions", content=raw, headers={"accept-encoding": ""})
    assert route.calls.last.request.headers["accept-encoding"] in ("", "identity")


async def test_gzip_request_body_is_understood_and_forwarded_unchanged(client, chat_body) -> None:
    packed = gzip.compress(orjson.dumps(chat_body()))
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(200, json={"choices": []})
        )
        response = await client.post(
            "/v1/chat/completions", content=packed, headers={"content-encoding": "gzip"}
        )
    assert response.status_code == 200
    assert route.calls.last.request.content == packed
    assert route.calls.last.request.headers["content-encoding"] == "gzip"


def test_a_real_server_relays_the_upstreams_date_and_server_once(chat_body) -> None:
    """Served by uvicorn as `serve` runs it: the upstream's `date` and `server` headers come
    through once, and the proxy adds none of its own."""
    from recovery_proxy.server.app import create_app
    from recovery_proxy.server.background import BackgroundServer

    stamp = "Sun, 22 Nov 2026 09:00:00 GMT"
    with upstream_mock() as mock, BackgroundServer(create_app(make_settings())) as proxy:
        mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(
                200, json={"choices": []}, headers={"server": "openai-edge", "date": stamp}
            )
        )
        response = httpx.post(f"{proxy.url}/v1/chat/completions", json=chat_body(), timeout=10)
    names = [name.lower() for name, _ in response.headers.raw]
    assert names.count(b"server") == 1 and names.count(b"date") == 1, response.headers.raw
    assert response.headers["server"] == "openai-edge" and response.headers["date"] == stamp


def test_upstream_cookies_are_relayed_never_kept_or_replayed(chat_body) -> None:
    """A provider's `Set-Cookie` (Cloudflare's `__cf_bm` on api.openai.com) goes back to the
    client that got it; the proxy keeps no cookie jar, so no other request, and no other
    tenant, ever sends it upstream."""
    from recovery_proxy.server.app import create_app
    from recovery_proxy.server.background import BackgroundServer

    by_name = UPSTREAM.replace("127.0.0.1", "localhost")  # a host name: jars keep its cookies
    settings = make_settings(upstream=by_name)
    with upstream_mock() as mock, BackgroundServer(create_app(settings)) as proxy:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=Response(
                200,
                json={"choices": []},
                headers={"set-cookie": "__cf_bm=tenant-a-secret; path=/; HttpOnly"},
            )
        )
        url = f"{proxy.url}/v1/chat/completions"
        first = httpx.post(url, json=chat_body(), headers={"authorization": "Bearer sk-a"})
        assert first.headers["set-cookie"].startswith("__cf_bm=tenant-a-secret")
        httpx.post(url, json=chat_body(), headers={"authorization": "Bearer sk-b"})
        assert route.call_count == 2
        assert "cookie" not in route.calls.last.request.headers


async def test_the_overhead_histogram_counts_every_forwarded_request_by_route(chat_body) -> None:
    """Each API's rewritten route, passthrough, and a request whose upstream is unreachable
    (the proxy's own time was spent all the same) land in `recovery_proxy_overhead_seconds`,
    labelled like `recovery_proxy_requests`; passthrough's near-zero times stay apart from
    the rewrites'."""
    closed = f"http://127.0.0.1:{free_port()}"
    async with proxy_client(make_settings(gemini_upstream=closed)) as client:
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={"choices": []})
            mock.post(f"{UPSTREAM}/responses").respond(200, json={"output": []})
            mock.post(f"{ROOT}/v1/messages").respond(200, json={"content": []})
            mock.get(f"{UPSTREAM}/models").respond(200, json={"data": []})
            chat = await client.post("/v1/chat/completions", json=chat_body())
            await client.post("/v1/responses", json={"model": "gpt-4o-mini", "input": "hi"})
            messages = [{"role": "user", "content": "hi"}]
            body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages}
            await client.post("/v1/messages", json=body)
            await client.get("/v1/models")
        gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        path = "/v1beta/models/gemini-2.5-flash:generateContent"
        assert (await client.post(path, json=gemini)).status_code == 502
        metrics = (await client.get("/metrics")).text
    for route in ("openai_chat", "openai_responses", "anthropic_messages", "gemini", "passthrough"):
        assert f'recovery_proxy_overhead_seconds_count{{route="{route}"}} 1.0' in metrics, route
    total = float(chat.headers["x-recovery-proxy-overhead-ms"]) / 1000
    line = 'recovery_proxy_overhead_seconds_sum{route="openai_chat"} '
    summed = next(x for x in metrics.splitlines() if x.startswith(line))
    assert abs(float(summed.removeprefix(line)) - total) < 1e-6  # the header's very figure
