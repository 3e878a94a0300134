"""A scripted mock model for the demo, tests and benchmarks, speaking four wire formats:
Chat Completions (`/v1/chat/completions`), OpenAI Responses (`/v1/responses`), Anthropic
Messages (`/v1/messages`), each as JSON or SSE, and Gemini (`/v1beta/models/{model}:
generateContent`, `:streamGenerateContent`, with or without `alt=sse`), so real SDKs parse its
answers.

The reply to a request is turn n of the script, where n is the number of model turns already
in the conversation (or, with `by_request=True`, the number of requests this format received
before); past the end of the script it answers "Done." (or `after`). Turns are written once, as Chat
Completions assistant messages, and rendered in each format; an entry may also be a callable
that chooses the turn from the request body (`(payload) -> Turn`). `scripts` gives a format its
own script ("chat", "responses", "messages", "gemini"). Every request body received is kept, in
order, in `app.state.received`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from recovery_proxy.demo.mock_model import anthropic, chat, gemini, responses
from recovery_proxy.demo.mock_model.chat import completion, stream_chunks
from recovery_proxy.demo.mock_model.script import DONE, Entry, Turn, pick, system_of

__all__ = [
    "DONE",
    "Entry",
    "Turn",
    "completion",
    "create_mock_app",
    "stream_chunks",
    "system_of",
]


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")


def _sse(frames: list[bytes]) -> StreamingResponse:
    async def gen() -> AsyncIterator[bytes]:
        for frame in frames:
            yield frame

    return StreamingResponse(gen(), media_type="text/event-stream")


def create_mock_app(
    script: Sequence[Entry] | None = None,
    by_request: bool = False,
    scripts: Mapping[str, Sequence[Entry]] | None = None,
    after: Entry = DONE,
    websocket: bool = False,
) -> Starlette:
    """The mock model app; `script` lists the assistant turns to answer with, in order (a
    callable entry picks its turn from the request body), `after` answers past its end;
    `websocket` also serves the Responses WebSocket (`GET /v1/responses`, Codex's transport)."""
    own = dict(scripts or {})
    served: Counter[str] = Counter()

    async def receive(request: Request, fmt: str) -> tuple[dict[str, Any], Sequence[Entry], int]:
        payload = orjson.loads(await request.body())
        app.state.received.append(payload)
        served[fmt] += 1
        return payload, own.get(fmt, script or []), served[fmt] - 1

    async def chat_route(request: Request) -> Response:
        payload, turns, before = await receive(request, "chat")
        turn = pick(turns, before if by_request else chat.turns_taken(payload), payload, after)
        model = payload.get("model", "mock-model")
        if payload.get("stream"):
            usage = bool((payload.get("stream_options") or {}).get("include_usage"))
            return _sse(stream_chunks(turn, model, usage))
        return _json(completion(turn, model))

    async def responses_route(request: Request) -> Response:
        payload, turns, before = await receive(request, "responses")
        history = memory.history(payload)
        if history is None:
            return _json(responses.not_found(payload["previous_response_id"]), 400)
        turn = pick(turns, before if by_request else responses.turns_taken(history), payload, after)
        rid = f"resp_mock_{len(app.state.received)}"
        output = responses.output_items(turn)
        memory.remember(rid, history, output)
        if payload.get("stream"):
            return _sse(responses.stream_events(payload, rid, output))
        return _json(responses.response_body(payload, rid, output, done=True))

    async def responses_socket(socket: WebSocket) -> None:
        """The Responses WebSocket as Codex speaks it: each `response.create` message (the
        request body with its type, often only new items after `previous_response_id`) is
        answered with the stream's events, one message each; a callable script entry is given
        the whole conversation as `input`."""
        await socket.accept()
        try:
            while True:
                message = orjson.loads(await socket.receive_text())
                if message.get("type") != "response.create":
                    continue  # `response.processed` and the like need no answer
                payload = {k: v for k, v in message.items() if k != "type"}
                app.state.received.append(payload)
                app.state.socket_messages.append(message)
                served["responses"] += 1
                history = memory.history(payload) or []
                seen = {**payload, "input": history}  # the whole conversation, as a model sees it
                turns = own.get("responses", script or [])
                turn = pick(turns, responses.turns_taken(history), seen, after)
                rid = f"resp_mock_{len(app.state.received)}"
                output = responses.output_items(turn)
                memory.remember(rid, history, output)
                for event in responses.event_objects(payload, rid, output):
                    await socket.send_text(orjson.dumps(event).decode())
        except WebSocketDisconnect:
            return

    async def messages_route(request: Request) -> Response:
        payload, turns, before = await receive(request, "messages")
        turn = pick(turns, before if by_request else anthropic.turns_taken(payload), payload, after)
        content = anthropic.content_blocks(turn)
        if payload.get("stream"):
            return _sse(anthropic.stream_events(payload, content))
        return _json(anthropic.message_body(payload, content))

    async def gemini_route(request: Request) -> Response:
        target = request.path_params["target"]
        model, method = gemini.split_target(target)
        if method not in ("generateContent", "streamGenerateContent"):
            return _json(gemini.not_found(target), 404)
        payload, turns, before = await receive(request, "gemini")
        turn = pick(turns, before if by_request else gemini.turns_taken(payload), payload, after)
        parts, rid = gemini.content_parts(turn), gemini.response_id()
        if method == "generateContent":
            return _json(gemini.response_body(model, parts, rid))
        bodies = gemini.stream_bodies(model, parts, rid)
        if request.query_params.get("alt") == "sse":
            return _sse(gemini.sse_frames(bodies))
        return _json(bodies)

    async def models(request: Request) -> Response:
        data = [{"id": "mock-model", "object": "model", "owned_by": "mock"}]
        return _json({"object": "list", "data": data})

    memory = responses.Memory()
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_route, methods=["POST"]),
            Route("/v1/responses", responses_route, methods=["POST"]),
            Route("/v1/messages", messages_route, methods=["POST"]),
            Route("/v1beta/models/{target}", gemini_route, methods=["POST"]),
            Route("/v1/models/{target}", gemini_route, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            *([WebSocketRoute("/v1/responses", responses_socket)] if websocket else []),
        ]
    )
    app.state.received = []
    app.state.socket_messages = []
    return app
