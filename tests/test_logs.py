"""Logs of a real `serve` process: one line per rewritten request, text or JSON, with counts
and ids only (no credential, no message content unless LOG_BODIES), at the chosen level."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.logs import JsonFormatter, TextFormatter
from recovery_proxy.server.background import BackgroundServer, free_port
from tests.store.conftest import ROOT, clean_env

SECRET = "sk-live-do-not-log-4f9a"
CONTENT = "ENOENT: no such file or directory, open 'src/secret-plans.md'"
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Read the plans"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_k3JtQ9xWm2LpR7vN4bY8cD1f",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "src/secret-plans.md"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_k3JtQ9xWm2LpR7vN4bY8cD1f",
        "content": f"Error: {CONTENT}",
    },
]


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with BackgroundServer(create_mock_app()) as server:
        yield server.url + "/v1"


def run_proxy(upstream: str, *flags: str, model: str = "gpt-4o-mini", **env: str) -> list[str]:
    """Serve, send the failing request twice, stop: the lines the process logged."""
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "recovery_proxy",
        "serve",
        "--port",
        str(port),
        "--store",
        "memory",
    ]
    args += flags
    environment = clean_env(
        RECOVERY_PROXY_UPSTREAM=upstream, RECOVERY_PROXY_HOT_RELOAD="false", **env
    )
    proc = subprocess.Popen(
        args, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        for _ in range(2):
            response = httpx.post(
                f"http://127.0.0.1:{port}/s/plans/v1/chat/completions",
                json={"model": model, "messages": MESSAGES},
                headers={"Authorization": f"Bearer {SECRET}"},
                timeout=30,
            )
            assert response.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    return err.splitlines()


def test_json_lines_one_per_request_without_secrets_or_content(upstream: str) -> None:
    lines = run_proxy(upstream, RECOVERY_PROXY_LOG_FORMAT="json")
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    requests = [e for e in entries if e["logger"] == "recovery_proxy.requests"]
    assert len(requests) == 2
    first, second = requests
    assert first["session"] == second["session"] and ":" in first["session"]
    assert first["wire"] == "openai_chat" and first["rules"]
    assert (first["results"], first["new_failures"], first["injected"], first["reapplied"]) == (
        1,
        1,
        1,
        0,
    )
    assert (second["new_failures"], second["injected"], second["reapplied"]) == (0, 0, 1)
    assert first["overhead_ms"] > 0 and first["time"].endswith("Z") is False
    assert all(e["level"] in ("info", "warning") for e in entries)
    started = [e for e in entries if e["message"].startswith("Started server process")]
    assert [e["logger"] for e in started] == ["uvicorn"]  # not "uvicorn.error": no error
    assert "uvicorn.error" not in {e["logger"] for e in entries}
    text = "\n".join(lines)
    assert SECRET not in text and "secret-plans" not in text and "Read the plans" not in text


def test_text_lines_carry_the_same_fields(upstream: str) -> None:
    lines = run_proxy(upstream)
    requests = [line for line in lines if "recovery_proxy.requests" in line]
    assert len(requests) == 2
    assert "wire=openai_chat results=1 new_failures=1 injected=1 reapplied=0" in requests[0]
    assert SECRET not in "\n".join(lines)
    assert any(" INFO uvicorn: Started server process [" in line for line in lines)
    assert not [line for line in lines if "uvicorn.error" in line]


def test_debug_level_still_logs_no_content(upstream: str, tmp_path: Path) -> None:
    """Through litellm too (`--models`): at debug its token counter printed conversations."""
    models = tmp_path / "models.yaml"
    models.write_text(
        "model_list:\n"
        "  - model_name: via-litellm\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o-mini\n"
        "      api_key: sk-provider-key-for-litellm\n"
        f"      api_base: {upstream}\n"
    )
    lines = run_proxy(
        upstream, "--models", str(models), model="via-litellm", RECOVERY_PROXY_LOG_LEVEL="debug"
    )
    text = "\n".join(lines)
    assert " DEBUG " in text  # the level took effect
    assert len([line for line in lines if "recovery_proxy.requests" in line]) == 2
    assert "sk-provider-key-for-litellm" not in text
    assert SECRET not in text and "secret-plans" not in text and "Read the plans" not in text


def test_warning_level_drops_request_lines(upstream: str) -> None:
    lines = run_proxy(upstream, RECOVERY_PROXY_LOG_LEVEL="warning")
    assert not [line for line in lines if "recovery_proxy.requests" in line]


def test_bodies_only_when_asked(upstream: str) -> None:
    lines = run_proxy(upstream, RECOVERY_PROXY_LOG_FORMAT="json", RECOVERY_PROXY_LOG_BODIES="true")
    requests = [json.loads(x) for x in lines if "recovery_proxy.requests" in x]
    assert CONTENT in requests[0]["body"]
    assert "[Error Recovery Context]" in requests[0]["body"]  # the body as forwarded
    assert SECRET not in "\n".join(lines)  # credentials never, even then


def test_the_readme_example_line_has_the_real_fields(upstream: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = json.loads(
        readme.split("RECOVERY_PROXY_LOG_FORMAT=json`:\n\n```json\n", 1)[1].split("\n```", 1)[0]
    )
    lines = run_proxy(upstream, RECOVERY_PROXY_LOG_FORMAT="json")
    real = next(json.loads(x) for x in lines if "recovery_proxy.requests" in x)
    assert set(example) == set(real)
    assert {k: type(v) for k, v in example.items()} == {k: type(v) for k, v in real.items()}
    assert (example["results"], example["new_failures"], example["injected"]) == (1, 1, 1)


def test_uvicorn_error_is_shown_as_uvicorn_in_both_formats() -> None:
    """uvicorn logs its start and stop under `uvicorn.error`; the record itself keeps the name
    (other handlers, and filters on it, see it as it was)."""
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started", None, None)
    assert " INFO uvicorn: Started" in TextFormatter().format(record)
    assert json.loads(JsonFormatter().format(record))["logger"] == "uvicorn"
    assert record.name == "uvicorn.error"
    other = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, "GET /", None, None)
    assert " INFO uvicorn.access: GET /" in TextFormatter().format(other)
