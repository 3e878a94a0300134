"""Shared fixtures: the real app over ASGI, a real mock provider on loopback."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import pytest

from recovery_proxy.config import Settings
from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import Rules
from recovery_proxy.server.app import RewriterFactory, create_app
from tests.upstream import ROOT

UPSTREAM = f"{ROOT}/v1"
ANTHROPIC_UPSTREAM = ROOT


def make_settings(**overrides: Any) -> Settings:
    """Settings for a test: loopback upstream, memory store, no hot reload."""
    values: dict[str, Any] = {
        "upstream": UPSTREAM,
        "anthropic_upstream": ANTHROPIC_UPSTREAM,
        "gemini_upstream": ROOT,
        "store": "memory",
        "hot_reload": False,
    }
    values.update(overrides)
    return Settings(**values)


@functools.cache
def bundled_rules() -> Rules:
    """The bundled rules, loaded once for the whole run (loading takes about half a second)."""
    return load_rules()


def bundled_rules_for(settings: Settings) -> Rules | None:
    """The loaded bundled rules when `settings` read those alone, else None (the app loads its
    own)."""
    return bundled_rules() if settings.rules is None and settings.extra_rules is None else None


@asynccontextmanager
async def proxy_client(
    settings: Settings | None = None, rewriter_factory: RewriterFactory | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to the real app (lifespan run) over ASGI."""
    settings = settings or make_settings()
    app = create_app(settings, rewriter_factory, bundled_rules_for(settings))
    async with app.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy.local") as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with proxy_client() as c:
        yield c


@pytest.fixture
def chat_body() -> Callable[..., dict[str, Any]]:
    """A realistic chat request with a tool call and its (successful) result."""

    def build(**extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a coding agent working in /repo."},
                {"role": "user", "content": "Why does `make test` fail?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_8Jd2kXq",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "Makefile"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_8Jd2kXq",
                    "content": "test:\n\tpytest -q tests/\n",
                },
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "parameters": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                        },
                    },
                }
            ],
            "temperature": 0.2,
        }
        body.update(extra)
        return body

    return build


def local_rules(tmp_path: Path, edit: dict[str, str]) -> Path:
    """A copy of the bundled rules with text replacements applied to 30-recovery.yaml."""
    target = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), target)
    recovery = target / "30-recovery.yaml"
    text = recovery.read_text()
    for old, new in edit.items():
        assert old in text, old
        text = text.replace(old, new)
    recovery.write_text(text)
    return target
