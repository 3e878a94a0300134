"""The response side over real HTTP: replies are read after they went out, byte for byte as
the provider sent them; `previous_response_id` chains get the real call; usage and cost land
in the session; a response that cannot be read changes nothing."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import httpx
import orjson

from tests.conftest import ANTHROPIC_UPSTREAM, UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock

HEADERS = {"Authorization": "Bearer sk-tenant", "X-Session-Id": "tap-1"}
MISSING = "FileNotFoundError: [Errno 2] No such file or directory: 'src/config.ts'"


async def settle(client: httpx.AsyncClient) -> None:
    """Let the replies read after the last responses be stored."""
    for _ in range(50):
        await asyncio.sleep(0.01)
        if not client.app.rewriter.learning:  # type: ignore[attr-defined]
            return


async def state_of(client: httpx.AsyncClient, response: httpx.Response) -> Any:
    await settle(client)
    store = client.app.state.store  # type: ignore[attr-defined]
    return await store.get(response.headers["x-recovery-proxy-session"])


def responses_answer(call_id: str, usage: dict[str, Any]) -> dict[str, Any]:
    call = {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": "read_file"}
    call["arguments"] = '{"path":"src/config.ts"}'
    return {
        "id": "resp_1",
        "model": "gpt-4o",
        "status": "completed",
        "output": [call],
        "usage": usage,
    }


async def test_previous_response_id_chain_gets_the_real_call(client) -> None:
    call_id = "call_Zq81nF3kP0aLx7Rt"
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
    }
    first = {"model": "gpt-4o", "input": [{"role": "user", "content": "Change the port."}]}
    with upstream_mock() as mock:
        mock.post(f"{UPSTREAM}/responses").respond(200, json=responses_answer(call_id, usage))
        response = await client.post("/v1/responses", json=first, headers=HEADERS)
    assert response.json()["output"][0]["call_id"] == call_id
    await settle(client)
    output = {"type": "function_call_output", "call_id": call_id, "output": MISSING}
    chained = {"model": "gpt-4o", "previous_response_id": "resp_1", "input": [output]}
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/responses").respond(200, json={"output": []})
        await client.post("/v1/responses", json=chained, headers=HEADERS)
    sent = orjson.loads(route.calls.last.request.content)["input"][0]["output"]
    assert 'Operation: read_file("src/config.ts")' in sent
    assert "unknown_tool_call" not in sent


async def test_a_stream_is_relayed_byte_for_byte_and_its_usage_stored(client) -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "model": "claude-sonnet-4-5",
                "content": [],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Done."},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 40},
        },
        {"type": "message_stop"},
    ]
    stream = b"".join(
        b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events
    )
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "stream": True,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01AbCdEfGhIjKlMnOpQr",
                        "name": "read_file",
                        "input": {"path": "src/config.ts"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01AbCdEfGhIjKlMnOpQr",
                        "content": MISSING,
                        "is_error": True,
                    }
                ],
            },
        ],
    }
    headers = {
        "x-api-key": "sk-ant",
        "anthropic-version": "2023-06-01",
        "X-Session-Id": "tap-stream",
    }
    with upstream_mock() as mock:
        mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages").respond(
            200, content=stream, headers={"content-type": "text/event-stream"}
        )
        response = await client.post("/v1/messages", json=body, headers=headers)
    assert response.content == stream
    usage = (await state_of(client, response)).provider.usage
    assert (usage.responses, usage.input, usage.cached, usage.output) == (1, 2010, 2000, 40)
    # the request ended in a failed result: its answer was spent inside a failure streak
    assert (usage.streak_responses, usage.streak_input, usage.streak_output) == (1, 2010, 40)
    assert usage.added > 0  # the recovery block's tokens
    assert usage.priced == 1 and 0 < usage.streak_cost == usage.cost  # the bundled price
    metrics = (await client.get("/metrics")).text
    assert (
        'recovery_proxy_usage_tokens_total{arm="none",kind="cached",streak="yes"} 2000.0' in metrics
    )
    assert 'recovery_proxy_cost_usd_total{arm="none",streak="yes"}' in metrics


async def test_unreadable_answers_are_relayed_untouched(client, chat_body) -> None:
    answers = [
        (b'{"choices": [{"message": ', {"content-type": "application/json"}),
        (b"\x00\xff garbage", {"content-type": "text/event-stream"}),
        (b"not gzip at all", {"content-encoding": "gzip"}),
        (b"opaque", {"content-encoding": "br"}),
    ]
    for raw, headers in answers:
        answer = httpx.Response(200, stream=httpx.ByteStream(raw), headers=headers)
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=answer)
            async with client.stream(
                "POST", "/v1/chat/completions", json=chat_body(), headers=HEADERS
            ) as response:
                relayed = b"".join([chunk async for chunk in response.aiter_raw()])
        assert response.status_code == 200 and relayed == raw
    await settle(client)
    metrics = (await client.get("/metrics")).text
    assert "recovery_proxy_reply_read_failures_total 1.0" in metrics  # the bad gzip; br unread


async def test_a_gzipped_answer_is_read_and_relayed_compressed(client, chat_body) -> None:
    answer = {
        "model": "gpt-4o-mini",
        "choices": [],
        "usage": {"prompt_tokens": 77, "completion_tokens": 5},
    }
    packed = gzip.compress(orjson.dumps(answer))
    with upstream_mock() as mock:
        mock.post(f"{UPSTREAM}/chat/completions").respond(
            200,
            content=packed,
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )
        response = await client.post(
            "/v1/chat/completions", json=chat_body(), headers={**HEADERS, "accept-encoding": "gzip"}
        )
    assert response.headers["content-encoding"] == "gzip"
    usage = (await state_of(client, response)).provider.usage
    assert (usage.input, usage.output, usage.streak_responses) == (77, 5, 0)


async def test_a_price_file_of_ones_own(tmp_path, chat_body) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 1000000, cached: 0, output: 2000000}\n")
    async with proxy_client(make_settings(prices=prices)) as client:
        answer = {
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json=answer)
            response = await client.post("/v1/chat/completions", json=chat_body(), headers=HEADERS)
        usage = (await state_of(client, response)).provider.usage
        assert usage.cost == 7.0  # 3 x $1 + 2 x $2


async def test_reading_responses_can_be_turned_off(chat_body) -> None:
    async with proxy_client(make_settings(read_responses=False)) as client:
        answer = {"model": "gpt-4o-mini", "choices": [], "usage": {"prompt_tokens": 3}}
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json=answer)
            response = await client.post("/v1/chat/completions", json=chat_body(), headers=HEADERS)
        assert (await state_of(client, response)).provider.usage.responses == 0


async def test_the_inspector_shows_what_the_loops_cost(chat_body) -> None:
    token = "t" * 32
    async with proxy_client(make_settings(admin_token=token)) as client:
        answer = {"model": "gpt-4o-mini", "choices": [], "usage": {"prompt_tokens": 900}}
        answer["usage"]["completion_tokens"] = 100
        body = chat_body()
        body["messages"][-1]["content"] = MISSING  # a failed result: a streak
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json=answer)
            response = await client.post("/v1/chat/completions", json=body, headers=HEADERS)
        await settle(client)
        key = response.headers["x-recovery-proxy-session"]
        auth = {"Authorization": f"Bearer {token}"}
        detail = (await client.get(f"/admin/sessions/{key}", headers=auth)).json()
        assert detail["usage"]["streak_input"] == 900 and detail["usage"]["priced"] == 1
        page = (
            await client.get(f"/admin/sessions/{key}", headers={**auth, "accept": "text/html"})
        ).text
        assert "<dt>tokens in failure streaks</dt><dd>1000</dd>" in page
        report = (await client.get("/admin/report", headers=auth)).json()
        assert report["treatment"]["streak_tokens"] == 1000
