"""Provider-compaction request shapes as the anthropic and openai SDKs build them (issue 25):
clients/compaction_client.py runs in the frameworks venv, through the proxy, against a mock
provider; the bodies the provider received must carry the failure ledger in each compaction
request's instructions and the summary after each compaction boundary."""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings
from tests.frameworks.test_frameworks import frameworks_python, run_client
from tests.upstream import ROOT, upstream_mock

LEDGER = "Keep these tool failures from this session in the summary"
SUMMARY = "## Recent failures (from earlier in this session)"
MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 2},
}
RESPONSE = {
    "id": "resp_01",
    "object": "response",
    "created_at": 0,
    "model": "gpt-5.1-codex",
    "status": "completed",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
COMPACTED = {
    "id": "resp_cmp",
    "object": "response.compaction",
    "created_at": 0,
    "output": [{"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB-opaque"}],
    "usage": {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    },
}


def bodies(route: Any) -> list[dict[str, Any]]:
    return [orjson.loads(call.request.content) for call in route.calls]


def test_sdk_compaction_requests_carry_the_ledger_and_get_the_summary() -> None:
    frameworks_python()
    with upstream_mock() as mock:
        messages = mock.post(f"{ROOT}/v1/messages").respond(200, json=MESSAGE)
        responses = mock.post(f"{ROOT}/v1/responses").respond(200, json=RESPONSE)
        compact = mock.post(f"{ROOT}/v1/responses/compact").respond(200, json=COMPACTED)
        settings = make_settings(upstream=f"{ROOT}/v1", anthropic_upstream=ROOT)
        with BackgroundServer(create_app(settings)) as proxy:
            done = run_client("compaction_client.py", proxy.url)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    threshold, boundary, on_demand = bodies(messages)

    clear, steered = threshold["context_management"]["edits"]
    assert clear == {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}
    assert steered["instructions"].startswith("Keep file paths.\n\n" + LEDGER)
    assert "ENOENT" in steered["instructions"]
    assert steered["trigger"] == {"type": "input_tokens", "value": 150000}

    system = boundary["system"]
    assert system[0]["cache_control"] == {"type": "ephemeral"}  # the client's breakpoint stays
    assert system[-1]["text"].startswith(SUMMARY) and "ENOENT" in system[-1]["text"]
    assert orjson.dumps(boundary).count(b'"cache_control"') == 1

    instructions = on_demand["compaction"]["instructions"]
    assert instructions.startswith("Write a summary of the conversation so far")
    assert LEDGER in instructions and "ENOENT" in instructions

    reached, after = bodies(responses)
    assert reached["instructions"].startswith("You are Codex.")
    assert LEDGER in reached["instructions"] and "npm test" in reached["instructions"]
    (compacting,) = bodies(compact)
    assert compacting["instructions"].startswith("You are Codex.\n\n" + LEDGER)
    assert SUMMARY in after["instructions"] and "npm test" in after["instructions"]
    assert LEDGER not in after["instructions"]  # threshold far away: no ledger
