"""Benchmark helpers: processes on loopback ports, percentiles, request bodies."""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from recovery_proxy.server.background import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextmanager
def process(args: list[str], health_url: str, env: dict[str, str] | None = None) -> Iterator[None]:
    """Start a server process and wait until `health_url` answers."""
    proc = subprocess.Popen(args, env={**os.environ, **(env or {})}, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(health_url, timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{args} did not start")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@contextmanager
def mock_upstream() -> Iterator[str]:
    """The fast mock model in its own process; yields its base URL (ending in /v1)."""
    port = free_port()
    args = [sys.executable, "-m", "bench.mock_upstream", str(port)]
    with process(args, f"http://127.0.0.1:{port}/v1/models"):
        yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def proxy_process(
    upstream: str, store: str = "memory", extra_env: dict[str, str] | None = None
) -> Iterator[str]:
    """`recovery-proxy serve` in its own process; yields its base URL (ending in /v1)."""
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "recovery_proxy",
        "serve",
        "--port",
        str(port),
        "--upstream",
        upstream,
        "--store",
        store,
        "--log-level",
        "warning",
    ]
    with process(args, f"http://127.0.0.1:{port}/healthz", extra_env):
        yield f"http://127.0.0.1:{port}/v1"


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 / p99 / mean in milliseconds."""
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50": pick(0.50) * 1000,
        "p99": pick(0.99) * 1000,
        "mean": statistics.fmean(ordered) * 1000,
    }


def call_id(i: int) -> str:
    """An id shaped like the providers' (`call_` + 24 random-looking characters); local model
    servers' short ids (`call_0`) take the proxy's slower digest identity instead."""
    return "call_" + hashlib.sha256(str(i).encode()).hexdigest()[:24]


def conversation(n_messages: int, failures_every: int = 0) -> list[dict[str, Any]]:
    """A realistic agent conversation of about `n_messages` messages (tool calls and results)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /repo. " * 20},
        {"role": "user", "content": "Make the test suite pass."},
    ]
    i = 0
    while len(messages) < n_messages:
        i += 1
        path = f"src/module_{i % 17}.py"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id(i),
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "{path}"}}'},
                    }
                ],
            }
        )
        failing = failures_every and i % failures_every == 0
        content = (
            f"Error: ENOENT: no such file or directory, open '{path}'"
            if failing
            else f"def handler_{i}(request):\n    return process(request)\n" * 12
        )
        messages.append({"role": "tool", "tool_call_id": call_id(i), "content": content})
    return messages[:n_messages]
