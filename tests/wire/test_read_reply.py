"""Reading relayed responses: calls, usage and stop reason for all four formats, JSON and SSE,
in the shapes the SDKs parse (openai 3.57 `Response`/`ChatCompletionChunk`, anthropic 2.13
`BetaMessage` and its stream events, google-genai 3.6 `GenerateContentResponse`)."""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.core.reply import ReplyCall
from recovery_proxy.wire import anthropic_messages, gemini, openai_chat, openai_responses


def sse(*events: tuple[str, Any]) -> bytes:
    out = b""
    for name, data in events:
        if name:
            out += b"event: " + name.encode() + b"\n"
        out += b"data: " + (data if isinstance(data, bytes) else orjson.dumps(data)) + b"\n\n"
    return out


CALL = ReplyCall("call_abc", "read_file", '{"path":"src/config.ts"}')


def test_chat_completion_json_and_stream() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"src/config.ts"}'},
            }
        ],
    }
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    body = {
        "model": "gpt-4o",
        "choices": [{"message": message, "finish_reason": "tool_calls"}],
        "usage": usage,
    }
    reply = openai_chat.read_reply(orjson.dumps(body), False)
    assert (
        reply
        and reply.calls == [CALL]
        and (reply.input, reply.cached, reply.output) == (1200, 1024, 30)
    )
    assert reply.stop_reason == "tool_calls" and reply.model == "gpt-4o"
    start = {
        "index": 0,
        "id": "call_abc",
        "type": "function",
        "function": {"name": "read_file", "arguments": ""},
    }
    chunks = [
        {"model": "gpt-4o", "choices": [{"index": 0, "delta": {"tool_calls": [start]}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]},
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "function": {"arguments": '"src/config.ts"}'}}]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": usage},
    ]
    reply = openai_chat.read_reply(sse(*[("", c) for c in chunks], ("", b"[DONE]")), True)
    assert (
        reply
        and reply.calls == [CALL]
        and (reply.input, reply.cached, reply.output) == (1200, 1024, 30)
    )


RESPONSE = {
    "id": "resp_1",
    "model": "gpt-5.1-codex",
    "status": "completed",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_abc",
            "name": "read_file",
            "arguments": '{"path":"src/config.ts"}',
        },
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "call_sh",
            "action": {"type": "exec", "command": ["bash", "-lc", "npm test"]},
        },
    ],
    "usage": {
        "input_tokens": 5000,
        "input_tokens_details": {"cached_tokens": 4096},
        "output_tokens": 80,
    },
}


def test_responses_json_and_stream() -> None:
    for body, stream in (
        (orjson.dumps(RESPONSE), False),
        (
            sse(
                (
                    "response.created",
                    {
                        "type": "response.created",
                        "response": {**RESPONSE, "status": "in_progress", "output": []},
                    },
                ),
                (
                    "response.output_text.delta",
                    {"type": "response.output_text.delta", "delta": "hi"},
                ),
                ("response.completed", {"type": "response.completed", "response": RESPONSE}),
            ),
            True,
        ),
    ):
        reply = openai_responses.read_reply(body, stream)
        assert reply is not None
        assert reply.calls[0] == CALL
        assert reply.calls[1] == ReplyCall("call_sh", "local_shell", '{"command":"npm test"}')
        assert (reply.input, reply.cached, reply.output) == (5000, 4096, 80)
        assert reply.stop_reason == "completed"


def test_anthropic_json_and_stream() -> None:
    usage = {
        "input_tokens": 20,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 500,
        "output_tokens": 60,
    }
    message = {
        "type": "message",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "Reading."},
            {
                "type": "tool_use",
                "id": "call_abc",
                "name": "read_file",
                "input": {"path": "src/config.ts"},
            },
        ],
        "stop_reason": "tool_use",
        "usage": usage,
        "context_management": {
            "applied_edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "cleared_tool_uses": 4,
                    "cleared_input_tokens": 9000,
                }
            ]
        },
    }
    reply = anthropic_messages.read_reply(orjson.dumps(message), False)
    assert (
        reply
        and reply.calls == [CALL]
        and (reply.input, reply.cached, reply.output) == (3520, 3000, 60)
    )
    assert reply.cleared == 4 and reply.stop_reason == "tool_use"
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    del start["context_management"]
    stream = sse(
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "call_abc",
                    "name": "read_file",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"path":'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"src/config.ts"}'},
            },
        ),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 60},
                "context_management": message["context_management"],
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    reply = anthropic_messages.read_reply(stream, True)
    assert (
        reply
        and reply.calls == [CALL]
        and (reply.input, reply.cached, reply.output) == (3520, 3000, 60)
    )
    assert reply.cleared == 4 and reply.stop_reason == "tool_use"


def test_gemini_json_and_stream() -> None:
    call = {
        "functionCall": {"id": "call_abc", "name": "read_file", "args": {"path": "src/config.ts"}}
    }
    usage = {
        "promptTokenCount": 900,
        "cachedContentTokenCount": 512,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 10,
    }
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-pro",
    }
    for body, stream in (
        (orjson.dumps(chunk), False),
        (sse(("", {"candidates": [{"content": {"parts": [{"text": "a"}]}}]}), ("", chunk)), True),
    ):
        reply = gemini.read_reply(body, stream)
        assert (
            reply
            and reply.calls == [CALL]
            and (reply.input, reply.cached, reply.output) == (900, 512, 50)
        )
        assert reply.stop_reason == "STOP" and reply.model == "gemini-2.5-pro"


def test_garbage_reads_as_an_empty_reply() -> None:
    for read in (
        openai_chat.read_reply,
        openai_responses.read_reply,
        anthropic_messages.read_reply,
        gemini.read_reply,
    ):
        for body in (
            b"",
            b"not json",
            b"[1, 2]",
            b'{"choices": "x", "output": 3, "content": 7, "candidates": {}}',
        ):
            for stream in (False, True):
                reply = read(body, stream)
                assert reply is not None and not reply.calls and not reply.usage
