"""Gemini answers of the mock model (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent`).

A `GenerateContentResponse`: `candidates[0].content` (role `model`) holds `text` and
`functionCall {name, args, id?}` parts, with `finishReason: "STOP"` (the API's reason after
function calls too), `usageMetadata`, `modelVersion` and `responseId` (shapes of google-genai
`types.GenerateContentResponse`, camelCase as the REST API sends them). A call's `id` is sent
only when the script gives one: the Gemini API usually omits it, and Gemini CLI then answers
with ids of its own. `streamGenerateContent?alt=sse` streams one response per part as
`data:` events (the last carries `finishReason` and the usage); without `alt=sse` the stream is
one JSON array of those responses, as the REST API answers.
"""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.demo.mock_model.script import Turn, calls_of, stamp, text_of

Part = dict[str, Any]
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def content_parts(turn: Turn) -> list[Part]:
    """The parts of the model content for a scripted turn: its text, then its calls."""
    parts: list[Part] = []
    if text_of(turn):
        parts.append({"text": text_of(turn)})
    for call in calls_of(turn):
        function_call: Part = {"name": call.name, "args": call.input}
        if call.id:
            function_call["id"] = call.id
        parts.append({"functionCall": function_call})
    return parts


def response_body(model: str, parts: list[Part], rid: str, done: bool = True) -> Part:
    """A `GenerateContentResponse`; `done=False` is a stream chunk before the last."""
    candidate: Part = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: Part = {"candidates": [candidate]}
    if done:
        candidate["finishReason"] = "STOP"
        body["usageMetadata"] = USAGE
    return body | {"modelVersion": model, "responseId": rid}


def stream_bodies(model: str, parts: list[Part], rid: str) -> list[Part]:
    """The responses of a stream: one per part, the last one finished."""
    parts = parts or [{"text": ""}]
    return [
        response_body(model, [part], rid, done=n == len(parts) - 1) for n, part in enumerate(parts)
    ]


def sse_frames(bodies: list[Part]) -> list[bytes]:
    """`alt=sse`: each response as one `data:` event."""
    return [b"data: " + orjson.dumps(body) + b"\r\n\r\n" for body in bodies]


def response_id() -> str:
    return f"mock-{stamp()}"


def split_target(target: str) -> tuple[str, str]:
    """`gemini-2.5-pro:generateContent` -> (model, method)."""
    model, _, method = target.rpartition(":")
    return model, method


def turns_taken(payload: dict[str, Any]) -> int:
    """Model contents already in a request: the script's position."""
    contents = payload.get("contents") or []
    return sum(1 for c in contents if isinstance(c, dict) and c.get("role") == "model")


def not_found(target: str) -> Part:
    """Google's 404 body for a path the mock does not serve."""
    message = f"models/{target} is not found, or the method is not supported."
    return {"error": {"code": 404, "message": message, "status": "NOT_FOUND"}}
