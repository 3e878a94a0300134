"""Any provider through litellm: a listed model goes out with `litellm.acompletion`; the
provider (respx: no socket) speaks Anthropic Messages at `api_base` and sees the recovery block
inside the tool_result; the client gets OpenAI shapes back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import respx

from recovery_proxy.server.background import free_port
from recovery_proxy.server.litellm_models import ModelsError, load_models
from tests.conftest import UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock

PROVIDER = "https://api.anthropic.test"
MESSAGES = f"{PROVIDER}/v1/messages"
ANTHROPIC_KEY = "sk-ant-api03-from-the-environment"
CLIENT_KEY = "Bearer sk-proj-client-tenant"
NOT_FOUND = "Error: [Errno 2] No such file or directory: 'config/settings.toml'"
MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "The file is missing; I will create it."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 412, "output_tokens": 14},
}


def models_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(
        "model_list:\n"
        "  - model_name: claude-sonnet\n"
        "    litellm_params:\n"
        "      model: anthropic/claude-sonnet-4-5-20250929\n"
        "      api_key: os.environ/RP_TEST_ANTHROPIC_KEY\n"
        f"      api_base: {PROVIDER}\n"
    )
    return path


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RP_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY)
    return models_file(tmp_path)


@pytest.fixture
def provider() -> Iterator[respx.MockRouter]:
    """The provider behind litellm, mocked where httpx picks a transport (litellm's client runs
    on aiohttp underneath, out of sight of respx's default httpcore mocker); requests from the
    test client to the app pass through to it. Any other request fails the test."""
    with respx.mock(using="httpx") as mock:
        mock.route(host="proxy.local").pass_through()
        yield mock


def chat(model: str = "claude-sonnet", *calls: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A Chat Completions request with one failed read per entry of `calls`."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /srv/app."},
        {"role": "user", "content": "Load the settings and start the server."},
    ]
    for call_id, path in calls:
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
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
    return {"model": model, "messages": messages, "tools": [tool], "max_tokens": 512, **extra}


def provider_calls(provider: respx.MockRouter) -> list[httpx.Request]:
    """The requests litellm sent (the rest are the test client's, to the app)."""
    return [c.request for c in provider.calls if c.request.url.host != "proxy.local"]


def tool_result(request: httpx.Request, index: int = -1) -> dict[str, Any]:
    """The tool_result block of the `index`th user message Anthropic received."""
    messages = orjson.loads(request.content)["messages"]
    users = [m for m in messages if m["role"] == "user" and isinstance(m["content"], list)]
    return next(b for b in users[index]["content"] if b["type"] == "tool_result")


async def test_a_listed_model_goes_out_natively_with_the_block_inside_the_tool_result(
    models: Path, provider: respx.MockRouter
) -> None:
    route = provider.post(MESSAGES).respond(200, json=MESSAGE)
    async with proxy_client(make_settings(models=models)) as client:
        first = await client.post(
            "/v1/chat/completions",
            json=chat("claude-sonnet", ("call_1", "config/settings.toml")),
            headers={"Authorization": CLIENT_KEY},
        )
        second = await client.post(
            "/v1/chat/completions",
            json=chat(
                "claude-sonnet",
                ("call_1", "config/settings.toml"),
                ("call_2", "config/settings.toml"),
            ),
            headers={"Authorization": CLIENT_KEY},
        )
    assert first.status_code == 200 and first.headers["x-recovery-proxy-injected"] == "1"
    answer = first.json()
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"] == "The file is missing; I will create it."
    request = route.calls[0].request
    assert request.headers["x-api-key"] == ANTHROPIC_KEY
    assert CLIENT_KEY not in str(request.headers.raw)
    sent = orjson.loads(request.content)
    assert sent["model"] == "claude-sonnet-4-5-20250929" and "max_tokens" in sent
    block = str(tool_result(request)["content"])
    assert NOT_FOUND in block and "[Error Recovery Context]" in block
    again = str(tool_result(route.calls[1].request)["content"])
    assert second.status_code == 200 and 'read_file("config/settings.toml")' in again
    assert "1. read_file(" in again


async def test_streaming_is_relayed_as_chat_completion_chunks(
    models: Path, provider: respx.MockRouter
) -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {**MESSAGE, "content": []}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Creating it."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    sse = b"".join(
        b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
        for name, data in events
    )
    route = provider.post(MESSAGES).respond(
        200, content=sse, headers={"content-type": "text/event-stream"}
    )
    async with proxy_client(make_settings(models=models)) as client:
        response = await client.post(
            "/v1/chat/completions",
            json=chat("claude-sonnet", ("call_1", "config/settings.toml"), stream=True),
            headers={"Authorization": CLIENT_KEY},
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [f.removeprefix("data: ") for f in response.text.split("\n\n") if f]
    assert frames[-1] == "[DONE]"
    chunks = [orjson.loads(f) for f in frames[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Creating it."
    assert orjson.loads(route.calls.last.request.content)["stream"] is True
    assert "[Error Recovery Context]" in str(tool_result(route.calls.last.request)["content"])


async def test_provider_errors_come_back_in_openais_shape_with_the_providers_status(
    models: Path, provider: respx.MockRouter
) -> None:
    overloaded = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit",
        },
    }
    provider.post(MESSAGES).respond(429, json=overloaded, headers={"retry-after": "17"})
    async with proxy_client(make_settings(models=models)) as client:
        response = await client.post(
            "/v1/chat/completions", json=chat(), headers={"Authorization": CLIENT_KEY}
        )
    assert response.status_code == 429 and response.headers["retry-after"] == "17"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "rate_limit_error" and "per-minute rate limit" in error["message"]


@pytest.mark.parametrize(
    "field", ["api_base", "base_url", "api_key", "extra_headers", "custom_llm_provider"]
)
async def test_clients_cannot_choose_the_destination_or_the_key(
    models: Path, provider: respx.MockRouter, field: str
) -> None:
    async with proxy_client(make_settings(models=models)) as client:
        response = await client.post(
            "/v1/chat/completions",
            json=chat(**{field: "http://attacker.example"}),
            headers={"Authorization": CLIENT_KEY},
        )
    assert response.status_code == 400 and not provider_calls(provider)
    error = response.json()["error"]
    assert field in error["message"] and error["code"] == "routing_not_allowed"


async def test_unlisted_models_go_to_the_upstream_as_before(
    models: Path, provider: respx.MockRouter
) -> None:
    """The upstream relay is aiohttp (invisible to respx): a real loopback mock answers it."""
    raw = orjson.dumps(chat("gpt-4o-mini", api_base="http://kept-as-is.example"))
    async with proxy_client(make_settings(models=models)) as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={"choices": []})
            await client.post(
                "/v1/chat/completions", content=raw, headers={"Authorization": CLIENT_KEY}
            )
    assert route.calls.last.request.content == raw and not provider_calls(provider)


def test_models_file_errors_name_the_file_and_the_field(tmp_path: Path) -> None:
    path = models_file(tmp_path)
    with pytest.raises(ModelsError, match=r"models.yaml: model_list\[0\]\.litellm_params\.api_key"):
        load_models(path, environ={})
    params = load_models(path, environ={"RP_TEST_ANTHROPIC_KEY": "k"})["claude-sonnet"]
    assert params == {
        "model": "anthropic/claude-sonnet-4-5-20250929",
        "api_key": "k",
        "api_base": PROVIDER,
    }
    path.write_text("model_list:\n  - model_name: x\n    litellm_params: {api_base: http://h}\n")
    with pytest.raises(ModelsError, match=r"model_list\[0\]\.litellm_params\.model"):
        load_models(path)
    path.write_text("models: []\n")
    with pytest.raises(ModelsError, match="model_list: expected a non-empty list"):
        load_models(path)


def test_the_app_does_not_import_litellm_without_models() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from recovery_proxy.server.app import create_app; from recovery_proxy.config import Settings; "
        "create_app(Settings(store='memory')); print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


WITHOUT_LITELLM = """
import sys
from importlib.abc import MetaPathFinder

class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "litellm" or name.startswith("litellm."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from recovery_proxy.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_litellm_models_stop_the_start_in_one_line(models: Path) -> None:
    import subprocess
    import sys

    command = [sys.executable, "-c", WITHOUT_LITELLM, "serve", "--models", str(models)]
    command += ["--store", "memory", "--port", str(free_port())]
    out = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr == (
        "recovery-proxy: --models needs litellm: pip install 'recovery-proxy[litellm]'\n"
    )


# ---- the same Settings as the HTTP upstream ----------------------------------------------


async def test_the_overhead_header_and_metric_cover_the_litellm_route(
    models: Path, provider: respx.MockRouter
) -> None:
    provider.post(MESSAGES).respond(200, json=MESSAGE)
    async with proxy_client(make_settings(models=models)) as client:
        response = await client.post("/v1/chat/completions", json=chat("claude-sonnet"))
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 200
    assert 0 < float(response.headers["x-recovery-proxy-overhead-ms"]) < 1000
    assert 'recovery_proxy_overhead_seconds_count{route="openai_chat"} 1.0' in metrics


async def test_a_provider_that_never_answers_is_a_504_after_the_read_timeout(
    models: Path,
) -> None:
    reached: list[httpx.Request] = []

    async def stall(request: httpx.Request) -> httpx.Response:
        reached.append(request)  # (respx records a call only once it has answered)
        await asyncio.sleep(30)
        return httpx.Response(200, json=MESSAGE)

    with respx.mock(using="httpx", assert_all_called=False) as provider:
        provider.route(host="proxy.local").pass_through()
        provider.post(MESSAGES).mock(side_effect=stall)
        async with proxy_client(make_settings(models=models, read_timeout=0.5)) as client:
            response = await client.post("/v1/chat/completions", json=chat("claude-sonnet"))
            metrics = (await client.get("/metrics")).text
    assert len(reached) == 1
    assert response.status_code == 504
    error = response.json()["error"]
    assert error["code"] == "upstream_timeout" and "0.5s" in error["message"]
    assert 'recovery_proxy_upstream_errors_total{kind="timeout"} 1.0' in metrics
