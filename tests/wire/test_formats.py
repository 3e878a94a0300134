"""Every wire format honours the protocol: unique routes, its own error and stream shapes,
passthrough routing by path or header."""

from __future__ import annotations

import orjson
import pytest

from recovery_proxy.config import Settings
from recovery_proxy.wire import (
    DEFAULT,
    FORMATS,
    WireFormat,
    anthropic_messages,
    for_passthrough,
    openai_chat,
    openai_responses,
)

STATUSES = (400, 409, 413, 502, 504)


def test_routes_are_unique_and_every_upstream_is_a_setting() -> None:
    paths = [path for fmt in FORMATS for path in fmt.paths]
    assert len(paths) == len(set(paths))
    assert {fmt.name for fmt in FORMATS} == {
        "openai_chat",
        "openai_responses",
        "anthropic_messages",
        "gemini",
    }
    assert all(fmt.upstream in Settings.model_fields for fmt in FORMATS)


def test_upstream_paths() -> None:
    assert openai_chat.FORMAT.upstream_path("/v1/chat/completions") == "/chat/completions"
    assert openai_responses.FORMAT.upstream_path("/v1/responses") == "/responses"
    assert anthropic_messages.FORMAT.upstream_path("/v1/messages") == "/v1/messages"


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_error_bodies_are_json_with_the_message(fmt: WireFormat) -> None:
    for status in STATUSES:
        body = orjson.loads(fmt.error_body(status, "Upstream unreachable: connection refused", "k"))
        error = body["error"]
        assert error["message"] == "Upstream unreachable: connection refused"
        kind = error.get("type") or error.get("status")  # Google's shape names a status
        assert isinstance(kind, str) and kind


def test_openai_and_anthropic_error_shapes_differ_as_their_apis_do() -> None:
    openai = orjson.loads(openai_chat.FORMAT.error_body(504, "slow", "upstream_timeout"))
    assert openai == {
        "error": {
            "message": "slow",
            "type": "upstream_timeout",
            "param": None,
            "code": "upstream_timeout",
        }
    }
    anthropic = orjson.loads(anthropic_messages.FORMAT.error_body(504, "slow", "upstream_timeout"))
    assert anthropic == {"type": "error", "error": {"type": "timeout_error", "message": "slow"}}


def test_stream_errors_are_each_apis_sse_event() -> None:
    chat = openai_chat.FORMAT.stream_error("no data for 300s", "stream_timeout")
    assert chat.startswith(b"data: {") and chat.endswith(b"\n\n")
    responses = openai_responses.FORMAT.stream_error("no data for 300s", "stream_timeout")
    event, data = responses.decode().strip().split("\n")
    assert event == "event: error"
    assert orjson.loads(data.removeprefix("data: "))["code"] == "stream_timeout"
    anthropic = anthropic_messages.FORMAT.stream_error("no data for 300s", "stream_timeout")
    event, data = anthropic.decode().strip().split("\n")
    assert event == "event: error"
    assert orjson.loads(data.removeprefix("data: "))["error"]["type"] == "timeout_error"


def test_passthrough_goes_to_the_api_the_request_belongs_to() -> None:
    assert for_passthrough("/v1/messages/count_tokens", {}) is anthropic_messages.FORMAT
    assert for_passthrough("/v1/models", {"anthropic-version": "2023-06-01"}) is (
        anthropic_messages.FORMAT
    )
    assert for_passthrough("/v1/models", {"authorization": "Bearer sk-proj-x"}) is DEFAULT
    assert for_passthrough("/v1/responses/compact", {}) is DEFAULT
