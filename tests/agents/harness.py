"""Real agent CLIs against the mock model (proxy/demo/mock_model/agents.py), through
`recovery-proxy serve` (with a recording tap in front, so the bytes each agent sent can be
compared with the bytes the model received) or `recovery-proxy run --`.

The CLIs come from npm (`.ci/run` installs today's releases into `.agents/`); without them the
tests skip, unless `RECOVERY_PROXY_REQUIRE_AGENTS=1` (as `.ci/run` sets) makes that a failure.
Each run gets a scratch directory with a throwaway HOME and a time limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.demo.mock_model.agents import agent_turn
from recovery_proxy.server.background import BackgroundServer, free_port

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("RECOVERY_PROXY_AGENTS_BIN", REPO / ".agents/node_modules/.bin"))
REQUIRED = os.environ.get("RECOVERY_PROXY_REQUIRE_AGENTS") == "1"
PROMPT = "read missing.txt"
BLOCK = "[Error Recovery Context]"
TIME_LIMIT = 90
CLI = [sys.executable, "-m", "recovery_proxy"]


def cli(name: str) -> str:
    """The path of an agent CLI, or skip (fail under RECOVERY_PROXY_REQUIRE_AGENTS=1)."""
    path = BIN / name
    if not path.exists():
        message = f"{name} is not installed in {BIN} (bash .ci/run installs it)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


@dataclass
class Exchange:
    """One HTTP request: what was sent, and (through the tap) the proxy's response headers."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    answer: dict[str, str] = field(default_factory=dict)

    @property
    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


class Recorder:
    """An ASGI wrapper keeping every request (method, path, headers, raw body) it passes on."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[Exchange] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append(Exchange(scope["method"], scope["path"], headers, b"".join(chunks)))
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


class Tap:
    """A pass-through in front of the proxy: records each request as the agent sent it and the
    proxy's response headers; a WebSocket upgrade gets the proxy's own answer to it."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[Exchange] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k != b"host"]
        query = scope.get("query_string", b"").decode()
        url = self.target + scope["raw_path"].decode() + (f"?{query}" if query else "")
        if scope["type"] == "websocket":
            await receive()
            async with httpx.AsyncClient() as client:
                answer = await client.get(url.replace("ws://", "http://"), headers=headers)
            out = [(b"content-type", b"application/json")]
            start = {"type": "websocket.http.response.start", "status": answer.status_code}
            await send({**start, "headers": out})
            await send({"type": "websocket.http.response.body", "body": answer.content})
            self.seen.append(Exchange("WS", scope["path"], dict(headers), b""))
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        exchange = Exchange(scope["method"], scope["path"], dict(headers), body)
        self.seen.append(exchange)
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.request(scope["method"], url, headers=headers, content=body)
        exchange.answer = dict(answer.headers)
        kept = [
            (k.encode(), v.encode())
            for k, v in answer.headers.items()
            if k not in ("content-length", "content-encoding", "transfer-encoding")
        ]
        await send({"type": "http.response.start", "status": answer.status_code, "headers": kept})
        await send({"type": "http.response.body", "body": answer.content})


@contextmanager
def mock_model(websocket: bool = False) -> Iterator[tuple[str, Recorder]]:
    """The agent-aware mock model on loopback: its root URL and what it received over HTTP
    (`websocket`: it serves the Responses WebSocket too; its messages are in
    `recorder.app.state.socket_messages`)."""
    recorder = Recorder(create_mock_app([], after=agent_turn, websocket=websocket))
    with BackgroundServer(recorder) as server:
        yield server.url, recorder


@contextmanager
def served(upstream: str, store: Path) -> Iterator[tuple[str, Tap]]:
    """`recovery-proxy serve` against the mock (all three upstreams), a tap in front: the tap's
    root URL and what the agents sent."""
    port = free_port()
    command = [
        *CLI,
        "serve",
        "--port",
        str(port),
        "--upstream",
        f"{upstream}/v1",
        "--anthropic-upstream",
        upstream,
        "--gemini-upstream",
        upstream,
        "--store",
        f"sqlite:{store}",
    ]
    proxy = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proxy.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)
        tap = Tap(f"http://127.0.0.1:{port}")
        with BackgroundServer(tap) as server:
            yield server.url, tap
    finally:
        proxy.terminate()
        proxy.wait(timeout=15)


def session_names(store: Path) -> list[str]:
    """The stored sessions' names (`recovery-proxy sessions list --json`)."""
    command = [*CLI, "sessions", "list", "--store", f"sqlite:{store}", "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    return [row["name"] for row in json.loads(done.stdout)]


def run_agent(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = TIME_LIMIT
) -> subprocess.CompletedProcess[str]:
    """Run an agent command to the end (stdin closed), bounded by `timeout`."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
