"""`python -m recovery_proxy.demo.mock_model --port N` as a user runs it: a server of its own
that `recovery-proxy run --upstream` can front, offline, with any agent."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")} | {
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
AGENT = textwrap.dedent(
    """
    import json, os, httpx
    base = os.environ["OPENAI_BASE_URL"]
    call = {"name": "read_file", "arguments": json.dumps({"path": "a.ts"})}
    messages = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix the build."},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": call}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": "Error: ENOENT: no such file or directory, open 'a.ts'"},
    ]
    reply = httpx.post(base + "/chat/completions", json={"model": "m", "messages": messages},
                       headers={"Authorization": "Bearer sk-x"}).json()
    print(reply["choices"][0]["message"]["content"])
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_in_front_of_the_mock_model_entry_point(tmp_path: Path) -> None:
    port = free_port()
    model = subprocess.Popen(
        [sys.executable, "-m", "recovery_proxy.demo.mock_model", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert model.stdout is not None
        assert model.stdout.readline().startswith(f"mock model on http://127.0.0.1:{port}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        agent = tmp_path / "agent.py"
        agent.write_text(AGENT, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "recovery_proxy", "run", "--upstream",
             f"http://127.0.0.1:{port}/v1", "--", sys.executable, str(agent)],
            capture_output=True, text=True, timeout=60, env=ENV, cwd=REPO, check=False,
        )  # fmt: skip
    finally:
        model.terminate()
        model.wait(timeout=10)
    assert done.returncode == 0, done.stdout + done.stderr
    # the model saw the proxy's block; run's summary counted it
    assert done.stdout.strip() == (
        "mock model: received 4 items, 1 recovery blocks, failure summary: no."
    )
    assert "blocks injected 1" in done.stderr
