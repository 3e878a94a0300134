"""Escalation webhooks over httpx, answered by respx (no socket): one POST per event, JSON,
in the background; a failure is logged once and not retried."""

from __future__ import annotations

import asyncio
import logging

import httpx
import orjson
import pytest
import respx

from recovery_proxy.webhooks import Webhooks

HOOK = "https://hooks.example.test/recovery-events"
EVENTS = [
    {"event": "recovery_escalation", "tool": "bash", "reason": "3 failures"},
    {"event": "recovery_escalation", "tool": "edit_file", "reason": "loop"},
]


async def drain(webhooks: Webhooks) -> None:
    await asyncio.gather(*list(webhooks.background))


@respx.mock
async def test_each_event_is_posted_as_json_in_the_background() -> None:
    route = respx.post(HOOK).respond(204)
    webhooks = Webhooks()
    assert webhooks.client is None  # no HTTP client until the first event
    webhooks.send(HOOK, EVENTS)
    assert not route.called  # send() returns before any POST
    await drain(webhooks)
    await webhooks.close()
    assert [orjson.loads(c.request.content) for c in route.calls] == EVENTS
    assert {c.request.headers["content-type"] for c in route.calls} == {"application/json"}


@respx.mock
async def test_a_failed_post_is_logged_once_and_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    route = respx.post(HOOK).mock(side_effect=httpx.ConnectError("connection refused"))
    webhooks = Webhooks()
    with caplog.at_level(logging.WARNING, logger="recovery_proxy"):
        webhooks.send(HOOK, EVENTS[:1])
        await drain(webhooks)
    await webhooks.close()
    assert route.call_count == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"escalation webhook to {HOOK} failed: connection refused"
    ]
    assert not webhooks.background
