"""Real parts for store tests: a redis-server process, proxy processes, the mock model."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.background import BackgroundServer, free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the operator's RECOVERY_PROXY_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    return {**env, **extra}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a child process, killing it if it does not exit promptly."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class RedisServer:
    """`redis-server` on a loopback port, no persistence; stop() and start() keep the port."""

    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not installed: the store tests need a real Redis. "
                "Install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: "
                "brew install redis) and run the tests again.",
                pytrace=False,
            )
        self.binary = binary
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    def client(self) -> Any:
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)


class ProxyProcess:
    """`python -m recovery_proxy serve` in its own OS process, on a fixed loopback port."""

    def __init__(
        self,
        upstream: str,
        store: str,
        log: Path,
        port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.upstream = upstream
        self.store = store
        self.log = log
        self.port = port or free_port()
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ProxyProcess:
        args = [
            sys.executable,
            "-m",
            "recovery_proxy",
            "serve",
            "--port",
            str(self.port),
            "--upstream",
            self.upstream,
            "--store",
            self.store,
            "--log-level",
            "warning",
        ]
        env = clean_env(RECOVERY_PROXY_HOT_RELOAD="false", **self.env)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"proxy did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    def restart(self) -> ProxyProcess:
        self.stop()
        return self.start()

    def chat(self, messages: list[dict[str, Any]], session: str) -> httpx.Response:
        return httpx.post(
            f"{self.url}/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": messages},
            headers={"Authorization": "Bearer sk-test-store", "X-Session-Id": session},
            timeout=30,
        )

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=10).text


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One redis-server for the whole run (tests flush it via `redis_url`)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The shared redis-server, emptied for this test."""
    with redis_server.client() as client:
        client.flushall()
    return redis_server.url


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server this test may stop and restart."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mock_model() -> Iterator[tuple[Any, str]]:
    """The mock model on a loopback port: (app, base URL ending in /v1); every request body
    it receives is in `app.state.received`."""
    app = create_mock_app()
    with BackgroundServer(app) as server:
        yield app, f"{server.url}/v1"


@pytest.fixture
def proxies(tmp_path: Path) -> Iterator[Any]:
    """A factory of proxy processes, all stopped when the test ends."""
    started: list[ProxyProcess] = []

    def make(upstream: str, store: str, **env: str) -> ProxyProcess:
        log = tmp_path / f"proxy-{len(started)}.log"
        proxy = ProxyProcess(upstream, store, log, env=env)
        started.append(proxy)
        return proxy.start()

    try:
        yield make
    finally:
        for proxy in started:
            proxy.stop()
