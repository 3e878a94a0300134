"""The litellm route is an upstream built from the same Settings as the HTTP one: its read
timeout, overhead header and overhead metric apply to `--models` traffic too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import make_settings, proxy_client
from tests.upstream import ROOT, upstream_mock

MODELS = (
    "model_list:\n"
    "  - model_name: claude-haiku\n"
    "    litellm_params:\n"
    "      model: anthropic/claude-haiku-4-5-20251001\n"
    "      api_key: os.environ/RP_TEST_ANTHROPIC_KEY\n"
    f"      api_base: {ROOT}\n"
)
REQUEST = {
    "model": "claude-haiku",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "List the open pull requests."}],
}
ANSWER = {
    "id": "msg_01HaikuAnswer",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5-20251001",
    "content": [{"type": "text", "text": "There are 3 open pull requests."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 21, "output_tokens": 9},
}


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RP_TEST_ANTHROPIC_KEY", "sk-ant-api03-settings-test")
    path = tmp_path / "models.yaml"
    path.write_text(MODELS)
    return path


async def test_the_overhead_header_and_metric_cover_the_litellm_route(models: Path) -> None:
    async with proxy_client(make_settings(models=models)) as client:
        with upstream_mock() as mock:
            mock.post(f"{ROOT}/v1/messages").respond(200, json=ANSWER)
            response = await client.post("/v1/chat/completions", json=REQUEST)
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == ANSWER["content"][0]["text"]
    assert 0 < float(response.headers["x-recovery-proxy-overhead-ms"]) < 1000
    assert "recovery_proxy_overhead_seconds_count 1.0" in metrics


async def test_a_provider_that_never_answers_is_a_504_after_the_read_timeout(
    models: Path,
) -> None:
    settings = make_settings(models=models, read_timeout=0.5)
    async with proxy_client(settings) as client:
        with upstream_mock() as mock:
            mock.post(f"{ROOT}/v1/messages").mock(side_effect=httpx.TimeoutException("stall"))
            response = await client.post("/v1/chat/completions", json=REQUEST)
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 504
    error = response.json()["error"]
    assert error["code"] == "upstream_timeout" and "0.5s" in error["message"]
    assert 'recovery_proxy_upstream_errors_total{kind="timeout"} 1.0' in metrics
