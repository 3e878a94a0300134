"""Start-up pays only for what the configuration uses: no litellm without `--models`, no
FastAPI without the admin API, no redis-py without a redis store, no httpx before a webhook
(each costs 0.03-3 s of the time to the first 200 on /healthz)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OPTIONAL = ("litellm", "fastapi", "redis", "httpx")
SERVE_UNTIL_READY = """
import asyncio, json, sys
from recovery_proxy.config import Settings
from recovery_proxy.cli.serve import start_app

app = start_app(Settings(store={store!r}, admin_token={token!r}, hot_reload=False))

async def ready() -> None:
    async with app.lifespan():
        assert app.ready

asyncio.run(ready())
print(json.dumps({{name: name in sys.modules for name in {optional!r}}}))
"""


def loaded_after_start(store: str, token: str | None = None) -> dict[str, bool]:
    code = SERVE_UNTIL_READY.format(store=store, token=token, optional=OPTIONAL)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("store", ["memory", "sqlite:{tmp}/sessions.db"])
def test_a_plain_start_imports_none_of_the_optional_libraries(tmp_path, store) -> None:
    loaded = loaded_after_start(store.format(tmp=tmp_path))
    assert loaded == dict.fromkeys(OPTIONAL, False)


def test_the_admin_api_brings_fastapi_and_nothing_else(tmp_path) -> None:
    loaded = loaded_after_start(f"sqlite:{tmp_path}/sessions.db", token="s3cret-admin-token")
    assert loaded == {"litellm": False, "fastapi": True, "redis": False, "httpx": False}
