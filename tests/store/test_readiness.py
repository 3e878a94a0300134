"""Readiness tells the truth about the session store: a store unreachable at start is one
warning line, `/readyz` says so (while `/healthz`, liveness, stays 200), and it turns ready
once the store answers."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import make_settings, proxy_client
from tests.store.conftest import RedisServer


async def test_an_unreachable_store_is_one_warning_and_a_503_on_readyz(caplog) -> None:
    server = RedisServer()  # its port is free: nothing listens there yet
    with caplog.at_level(logging.WARNING, logger="recovery_proxy"):
        async with proxy_client(make_settings(store=server.url)) as client:
            live = await client.get("/healthz")
            ready = await client.get("/readyz")
            server.start()
            try:
                later = await client.get("/readyz")
            finally:
                server.stop()
    warnings = [r.getMessage() for r in caplog.records if "unreachable at start" in r.getMessage()]
    assert len(warnings) == 1 and server.url.split("//")[1] in warnings[0]
    assert live.status_code == 200
    assert ready.status_code == 503
    assert ready.json()["store"] == "unreachable" and "Error" in ready.json()["detail"]
    assert later.status_code == 200 and later.json() == {"status": "ready", "store": "ok"}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_reachable_store_is_ready(kind: str, tmp_path) -> None:
    store = "memory" if kind == "memory" else f"sqlite:{tmp_path / 'sessions.db'}"
    async with proxy_client(make_settings(store=store)) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["store"] == "ok"
