"""Memory is exact under concurrency (DESIGN invariant 9): 40 concurrent requests on one
session, each adding one failure on the same target, through every real store and through
two proxy processes on one Redis. The failures are counted 1..40 exactly, once each, and the
full conversation afterwards finds every one of them already judged (nothing new, every block
re-applied byte for byte)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.server.app import create_app
from tests.conftest import make_settings
from tests.upstream import ROOT, upstream_mock

N = 40
SESSION = {"Authorization": "Bearer sk-test-concurrency", "X-Session-Id": "forty-at-once"}
COUNT = re.compile(r"has happened (\d+) times|occurrence #(\d+)")


def conversation(attempts: range | list[int]) -> dict[str, Any]:
    """The agent's request after `attempts` failed reads of the same file (each its own call)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent in /srv/app."},
        {"role": "user", "content": "The build fails: find the config and fix it."},
    ]
    for i in attempts:
        arguments = orjson.dumps({"path": "src/config.ts", "encoding": f"utf-8#{i}"}).decode()
        call = {"id": f"call_{i}", "type": "function"}
        call["function"] = {"name": "read_file", "arguments": arguments}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": "Error: ENOENT: no such file or directory, open 'src/config.ts'",
            }
        )
    return {"model": "gpt-4o-mini", "messages": messages}


def occurrence(sent: dict[str, Any]) -> int:
    """Which occurrence of the failure the block after the last tool result counts it as."""
    text = sent["messages"][-1]["content"]
    assert "[Error Recovery Context]" in text
    found = COUNT.search(text)
    return int(next(g for g in found.groups() if g)) if found else 1


def check_exact(first_pass: list[dict[str, Any]], verify: httpx.Response, sent: Any) -> None:
    assert sorted(occurrence(body) for body in first_pass) == list(range(1, N + 1))
    assert verify.status_code == 200
    assert verify.headers["x-recovery-proxy-injected"] == "0"
    assert int(verify.headers["x-recovery-proxy-reapplied"]) >= N  # (and a summary, if any)
    blocks = {body["messages"][-1]["content"] for body in first_pass}
    tool_texts = {m["content"] for m in sent["messages"] if m["role"] == "tool"}
    assert tool_texts == blocks  # each block re-applied byte for byte where it was first sent


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'sessions.db'}"
    if request.param == "redis":
        return request.getfixturevalue("redis_url")
    return "memory"


async def test_forty_concurrent_failures_on_one_session_are_counted_exactly(store: str) -> None:
    app = create_app(make_settings(store=store))
    async with app.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy.local") as c:
            with upstream_mock() as mock:
                route = mock.post(f"{ROOT}/v1/chat/completions").respond(200, json={"choices": []})
                answers = await asyncio.gather(
                    *(
                        c.post("/v1/chat/completions", json=conversation([i]), headers=SESSION)
                        for i in range(N)
                    )
                )
                assert all(a.status_code == 200 for a in answers)
                first_pass = [orjson.loads(call.request.content) for call in route.calls]
                verify = await c.post(
                    "/v1/chat/completions", json=conversation(range(N)), headers=SESSION
                )
                sent = orjson.loads(route.calls.last.request.content)
            metrics = (await c.get("/metrics")).text
    check_exact(first_pass, verify, sent)
    assert "recovery_proxy_store_outages_total 0.0" in metrics


async def test_two_processes_on_one_redis_count_forty_concurrent_failures_exactly(
    redis_url: str, mock_model: Any, proxies: Any
) -> None:
    model, upstream = mock_model
    replicas = [proxies(upstream, redis_url), proxies(upstream, redis_url)]
    async with httpx.AsyncClient(timeout=30) as client:

        async def send(i: int) -> httpx.Response:
            url = f"{replicas[i % 2].url}/v1/chat/completions"
            return await client.post(url, json=conversation([i]), headers=SESSION)

        answers = await asyncio.gather(*(send(i) for i in range(N)))
        assert all(a.status_code == 200 for a in answers)
        first_pass = list(model.state.received)
        verify = await client.post(
            f"{replicas[0].url}/v1/chat/completions",
            json=conversation(range(N)),
            headers=SESSION,
        )
    check_exact(first_pass, verify, model.state.received[-1])
