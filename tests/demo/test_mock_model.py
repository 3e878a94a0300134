"""The mock model: script entries that choose their turn from the request, in every format, and
the Gemini route's response shapes."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from recovery_proxy.demo.mock_model import DONE, create_mock_app, system_of
from recovery_proxy.demo.mock_model.script import pick

SYSTEM = "Be brief."
GEMINI = "/v1beta/models/gemini-2.5-pro"


def read_call(call_id: str = "call_1") -> dict[str, Any]:
    arguments = json.dumps({"file_path": "a.py"})
    return {"id": call_id, "type": "function", "function": {"name": "read", "arguments": arguments}}


def echo_system(payload: dict[str, Any]) -> dict[str, Any]:
    """A callable entry: answers with the system prompt it received."""
    return {"role": "assistant", "content": f"system: {system_of(payload) or '-'}"}


# One first request per format, each carrying SYSTEM, and how to read the reply's text.
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "/v1/chat/completions",
        {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]},
    ),
    "responses": ("/v1/responses", {"instructions": SYSTEM, "input": "hi"}),
    "messages": (
        "/v1/messages",
        {
            "system": [{"type": "text", "text": SYSTEM}],
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
    "gemini": (
        f"{GEMINI}:generateContent",
        {
            "systemInstruction": {"parts": [{"text": SYSTEM}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        },
    ),
}


def reply_text(fmt: str, body: dict[str, Any]) -> str:
    if fmt == "chat":
        return body["choices"][0]["message"]["content"]
    if fmt == "responses":
        return body["output"][0]["content"][0]["text"]
    if fmt == "messages":
        return body["content"][0]["text"]
    return body["candidates"][0]["content"]["parts"][0]["text"]


@pytest.mark.parametrize("by_request", [False, True])
@pytest.mark.parametrize("fmt", sorted(REQUESTS))
def test_a_callable_entry_chooses_from_the_request(fmt: str, by_request: bool) -> None:
    client = TestClient(create_mock_app([echo_system], by_request=by_request))
    path, body = REQUESTS[fmt]
    answer = client.post(path, json={"model": "m", **body})
    assert answer.status_code == 200, answer.text
    assert reply_text(fmt, answer.json()) == f"system: {SYSTEM}"


def test_pick_keeps_plain_turns_and_done() -> None:
    turn = {"role": "assistant", "content": "x"}
    assert pick([turn], 0) is turn
    assert pick([turn], 1) is DONE
    assert pick([echo_system], 0) == {"role": "assistant", "content": "system: -"}


def test_system_of_reads_every_format() -> None:
    for _, body in REQUESTS.values():
        assert system_of(body) == SYSTEM
    assert system_of({"messages": [{"role": "developer", "content": SYSTEM}]}) == SYSTEM
    assert system_of({"system_instruction": {"parts": [{"text": SYSTEM}]}}) == SYSTEM


def gemini_client(*turns: dict[str, Any]) -> TestClient:
    return TestClient(create_mock_app(scripts={"gemini": list(turns)}))


def test_gemini_generate_content_shape() -> None:
    turn = {"role": "assistant", "content": "Reading.", "tool_calls": [read_call("")]}
    _, body = REQUESTS["gemini"]
    answer = gemini_client(turn).post(f"{GEMINI}:generateContent", json=body).json()
    candidate = answer["candidates"][0]
    assert candidate["content"] == {
        "role": "model",
        "parts": [
            {"text": "Reading."},
            {"functionCall": {"name": "read", "args": {"file_path": "a.py"}}},
        ],
    }
    assert candidate["finishReason"] == "STOP"
    assert answer["usageMetadata"]["totalTokenCount"] == 15
    assert answer["modelVersion"] == "gemini-2.5-pro" and answer["responseId"]


def test_gemini_function_call_id_only_when_scripted() -> None:
    turn = {"role": "assistant", "content": None, "tool_calls": [read_call("read-1")]}
    _, body = REQUESTS["gemini"]
    answer = gemini_client(turn).post(f"{GEMINI}:generateContent", json=body).json()
    assert answer["candidates"][0]["content"]["parts"][0]["functionCall"]["id"] == "read-1"


def test_gemini_stream_sse_and_json_array() -> None:
    turn = {"role": "assistant", "content": "Reading.", "tool_calls": [read_call("")]}
    _, body = REQUESTS["gemini"]
    client = gemini_client(turn, turn)
    sse = client.post(f"{GEMINI}:streamGenerateContent?alt=sse", json=body)
    assert sse.headers["content-type"].startswith("text/event-stream")
    chunks = [orjson.loads(line[5:]) for line in sse.text.splitlines() if line.startswith("data:")]
    assert [list(c["candidates"][0]["content"]["parts"][0]) for c in chunks] == [
        ["text"],
        ["functionCall"],
    ]
    assert "finishReason" not in chunks[0]["candidates"][0]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]
    array = client.post(f"{GEMINI}:streamGenerateContent", json=body).json()
    assert isinstance(array, list) and len(array) == 2


def test_gemini_script_position_counts_model_contents() -> None:
    first = {"role": "assistant", "content": "one"}
    second = {"role": "assistant", "content": "two"}
    _, body = REQUESTS["gemini"]
    later = {**body, "contents": [*body["contents"], {"role": "model", "parts": [{"text": "one"}]}]}
    client = gemini_client(first, second)
    assert (
        reply_text("gemini", client.post(f"{GEMINI}:generateContent", json=later).json()) == "two"
    )
    missing = client.post(f"{GEMINI}:countTokens", json=body)
    assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"
