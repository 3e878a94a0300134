"""The Responses WebSocket relay: each `response.create` rewritten as the HTTP route rewrites a
POST (a chained one as its whole conversation), other messages and the upstream's frames
relayed untouched, the session from the path."""

from __future__ import annotations

from typing import Any

import orjson
from websockets.asyncio.client import connect

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings

FAILED = "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: a.txt: No such file or directory"
BLOCK = "[Error Recovery Context]"
CALL = {"name": "shell", "arguments": '{"command": "cat a.txt"}'}
SCRIPT = [
    {"role": "assistant", "content": "", "tool_calls": [{"id": f"call_{n:020d}", "function": CALL}]}
    for n in range(3)
]


def create(**body: Any) -> str:
    return orjson.dumps({"type": "response.create", **body}).decode()


async def exchange(socket: Any, message: str) -> list[dict[str, Any]]:
    """Send one message; the events up to `response.completed`."""
    await socket.send(message)
    events = []
    while not events or events[-1]["type"] != "response.completed":
        events.append(orjson.loads(await socket.recv()))
    return events


def output(body: dict[str, Any]) -> str:
    return next(i["output"] for i in body["input"] if i["type"] == "function_call_output")


async def test_a_chained_conversation_gets_the_http_routes_blocks() -> None:
    mock = create_mock_app(SCRIPT, websocket=True)
    with BackgroundServer(mock) as upstream:
        settings = make_settings(upstream=f"{upstream.url}/v1")
        with BackgroundServer(create_app(settings)) as proxy:
            url = proxy.url.replace("http", "ws") + "/s/ws-run/v1/responses"
            headers = {"Authorization": "Bearer sk-test"}
            async with connect(url, additional_headers=headers) as socket:
                user = {"type": "message", "role": "user", "content": "read a.txt"}
                first = await exchange(socket, create(model="m", input=[user]))
                await socket.send(orjson.dumps({"type": "response.processed"}).decode())
                previous = first[-1]["response"]["id"]
                calls = [e["item"] for e in first if e["type"] == "response.output_item.done"]
                result = {"type": "function_call_output", "call_id": calls[0]["call_id"]}
                second = await exchange(
                    socket,
                    create(
                        model="m",
                        previous_response_id=previous,
                        input=[{**result, "output": FAILED}],
                    ),
                )
                call = next(e["item"] for e in second if e["type"] == "response.output_item.done")
                answer = {"type": "function_call_output", "call_id": call["call_id"]}
                await exchange(
                    socket,
                    create(
                        model="m",
                        previous_response_id=second[-1]["response"]["id"],
                        input=[{**answer, "output": FAILED}],
                    ),
                )
    received = mock.state.socket_messages
    assert received[0] == {"type": "response.create", "model": "m", "input": [user]}
    one, two = output(received[1]), output(received[2])
    assert one.startswith(FAILED + "\n\n" + BLOCK) and 'shell("cat a.txt")' in one
    assert '  1. shell("cat a.txt")' in two
    assert [len(m["input"]) for m in received] == [1, 1, 1]  # only the new items go upstream
    assert first[0]["type"] == "response.created"
