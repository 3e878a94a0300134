"""recovery_hook inside a real LiteLLM Proxy process (litellm[proxy], the pinned version) on
127.0.0.1, in front of a mock OpenAI upstream: the upstream sees the recovery block, and the
second failure's block lists the first attempt.

LiteLLM Proxy runs from its own venv (`bash bench/setup-litellm.sh && .venv-litellm/bin/pip
install -e .`), or the interpreter named by RECOVERY_PROXY_LITELLM_PYTHON.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.server.background import free_port
from tests.upstream import ROOT, upstream_mock

REPO = Path(__file__).resolve().parents[2]
PYTHON_ENV = "RECOVERY_PROXY_LITELLM_PYTHON"
DEFAULT_PYTHON = REPO / ".venv-litellm" / "bin" / "python"
MASTER_KEY = "sk-litellm-master-7f3a"
SESSION = "9d41c7e2-6b0a-4f55-8e13-2a7c5b9d0e64"
NOT_FOUND = "Error: [Errno 2] No such file or directory: 'config/settings.toml'"
COMPLETION = {
    "id": "chatcmpl-AZx1",
    "object": "chat.completion",
    "created": 1755000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "I will create the file."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127},
}


def litellm_python() -> Path:
    """The LiteLLM Proxy venv's interpreter; a missing one is a broken setup: the test fails."""
    python = Path(os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON)
    if not python.is_file():
        pytest.fail(
            f"LiteLLM Proxy interpreter {python} not found. Create it with `bash "
            "bench/setup-litellm.sh && .venv-litellm/bin/pip install -e .`, or point "
            f"{PYTHON_ENV} at one.",
            pytrace=False,
        )
    return python


@pytest.fixture(scope="module")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`litellm --config` on a free loopback port, the hook loaded as a callback file."""
    python = litellm_python()
    folder = tmp_path_factory.mktemp("litellm")
    (folder / "recovery_callbacks.py").write_text(
        "from recovery_proxy.integrations.litellm_hook import recovery_hook\n"
    )
    (folder / "config.yaml").write_text(
        "model_list:\n"
        "  - model_name: gpt-4o-mini\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o-mini\n"
        f"      api_base: {ROOT}/v1\n"
        "      api_key: sk-mock-upstream\n"
        "litellm_settings:\n"
        "  callbacks: recovery_callbacks.recovery_hook\n"
        "  telemetry: false\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "RECOVERY_PROXY_STORE": "memory",
        "RECOVERY_PROXY_HOT_RELOAD": "false",
        "PYTHONPATH": str(REPO),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    env.pop("DATABASE_URL", None)
    command = [str(python), "-m", "litellm.proxy.proxy_cli"]
    command += ["--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)]
    log = (folder / "litellm.log").open("wb")
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, folder / "litellm.log")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"litellm exited {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/health/liveliness", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"litellm did not start within 120 s:\n{log.read_text()[-4000:]}")


def request(*paths: str) -> dict[str, Any]:
    """A chat request with one failed `read_file` per path."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /srv/app."},
        {"role": "user", "content": "Load the settings and start the server."},
    ]
    for i, path in enumerate(paths):
        call_id = f"call_{i + 1:04d}"
        arguments = orjson.dumps({"path": path}).decode()
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": NOT_FOUND})
    return {"model": "gpt-4o-mini", "messages": messages}


def test_the_upstream_sees_the_block_and_the_second_lists_the_first(litellm_proxy: str) -> None:
    headers = {"Authorization": f"Bearer {MASTER_KEY}", "x-litellm-session-id": SESSION}
    with upstream_mock() as mock, httpx.Client(base_url=litellm_proxy, timeout=60) as client:
        route = mock.post(f"{ROOT}/v1/chat/completions").respond(200, json=COMPLETION)
        first = client.post(
            "/v1/chat/completions", json=request("config/settings.toml"), headers=headers
        )
        second = client.post(
            "/v1/chat/completions",
            json=request("config/settings.toml", "config/settings.toml"),
            headers=headers,
        )
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    assert first.json()["choices"][0]["message"]["content"] == "I will create the file."
    sent = [orjson.loads(call.request.content)["messages"] for call in route.calls]
    block = sent[0][-1]["content"]
    assert block.startswith(NOT_FOUND + "\n\n[Error Recovery Context]\n")
    assert sent[1][3]["content"] == block  # re-applied byte for byte
    assert "1. read_file(" in sent[1][-1]["content"]
    for call in route.calls:
        assert MASTER_KEY not in str(call.request.headers.raw)


def test_the_hook_module_is_importable_in_this_venv() -> None:
    """The plugin imports with the proxy's own pinned litellm too (no LiteLLM Proxy extras)."""
    code = "from recovery_proxy.integrations.litellm_hook import recovery_hook; print(type(recovery_hook).__mro__[1].__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "CustomLogger"
