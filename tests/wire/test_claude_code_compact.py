"""Claude Code's real `/compact` request (recorded from Claude Code 2.1.197, see
tests/data/claude_code_compact.json) moves its `cache_control` breakpoint from the last
`tool_result` onto the last assistant `tool_use`: the same calls, so the same results, with the
same blocks and nothing new (no phantom third attempt, no escalation, no loop notice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.conftest import ANTHROPIC_UPSTREAM
from tests.upstream import upstream_mock

RECORDED = orjson.loads((Path(__file__).parents[1] / "data/claude_code_compact.json").read_bytes())
REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request, in order."""
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def test_compact_request_moving_cache_control_is_the_same_calls(client) -> None:
    requests = RECORDED["requests"]
    compact = requests[-1]["body"]
    assert "cache_control" in compact["messages"][-2]["content"][0]  # on the tool_use now
    forwarded: list[dict[str, Any]] = []
    injected: list[str] = []
    with upstream_mock() as mock:
        route = mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages").respond(200, json=REPLY)
        for request in requests:
            response = await client.post(
                "/v1/messages?beta=true",
                content=orjson.dumps(request["body"]),
                headers={**request["headers"], "x-api-key": "sk-ant-test"},
            )
            assert response.status_code == 200
            forwarded.append(orjson.loads(route.calls.last.request.content))
            injected.append(response.headers["x-recovery-proxy-injected"])
    assert injected == ["0", "1", "1", "0"]  # first request, two failures, /compact
    before, after = results(forwarded[-2]), results(forwarded[-1])
    assert [b["content"] for b in after] == [b["content"] for b in before]
    text = orjson.dumps(forwarded[-1]).decode()
    assert "STOP" not in text and "3 times" not in text
    assert "  2. " not in after[-1]["content"]  # attempts listed: the first only
    # Claude Code's own bytes before the last tool result are unchanged (prompt cache)
    assert forwarded[-1]["messages"][:3] == forwarded[-2]["messages"][:3]
    assert forwarded[-1]["messages"][-2] == compact["messages"][-2]
