"""Gemini generateContent: functionCall/functionResponse, Gemini CLI's `{"error": ...}`, the
model in the path, `?key=`, Google's error shape, SSE relayed unbuffered."""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from recovery_proxy.core.plan import Plan
from recovery_proxy.rules.model import Placement
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from recovery_proxy.wire import FORMATS, for_passthrough
from recovery_proxy.wire.gemini import FORMAT, error_body, matches, parse, splice, with_query_key
from tests.conftest import local_rules, make_settings, proxy_client
from tests.upstream import ROOT, MockRoute, upstream_mock

APPEND = Placement(mode="append")
MODEL = "gemini-2.5-pro"
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent"
GEMINI_SYSTEM = "You are an interactive CLI agent specializing in software engineering tasks."
NOT_FOUND = "File not found: /home/dev/invoice/src/totals.py"
EDIT_FAILED = (
    "Failed to edit, 0 occurrences found for old_string (round(total, 2)). Original "
    "old_string was (round(total, 2)) in /home/dev/invoice/src/totals.py. No edits made."
)
READ = {"file_path": "/home/dev/invoice/src/totals.py"}  # gemini-cli read_file
_ids = itertools.count(1)


def call_part(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    return {"functionCall": call}


def response_part(name: str, response: Any, call_id: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"name": name, "response": response}
    if call_id:
        answer["id"] = call_id
    return {"functionResponse": answer}


def body(*turns: dict[str, Any]) -> dict[str, Any]:
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "Fix the rounding bug in invoice totals."}]},
            *turns,
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": GEMINI_SYSTEM}]},
        "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "replace"}]}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
    }


def test_calls_and_responses_by_id_and_by_name() -> None:
    conv = parse(
        body(
            {
                "role": "model",
                "parts": [
                    call_part("read_file", READ, "read_file-1755-a1"),
                    call_part("glob", {"pattern": "**/*.py"}),
                ],
            },
            {
                "role": "user",
                "parts": [
                    response_part("read_file", {"error": NOT_FOUND}, "read_file-1755-a1"),
                    response_part("glob", {"output": "src/totals.py\nsrc/cli.py"}),
                ],
            },
        )
    )
    assert conv is not None
    read, glob = conv.results
    assert read.call_id == "read_file-1755-a1" and read.is_error is True
    assert read.text == NOT_FOUND and read.tool == "read_file"
    assert read.call is not None and read.call.arguments == READ
    assert glob.call_id == "gemini-2-1" and glob.is_error is None  # judged from the text
    assert glob.tool == "glob" and glob.text.startswith("src/totals.py")
    assert [r.position for r in conv.results] == [(2, 0), (2, 1)]
    assert conv.system == GEMINI_SYSTEM and conv.first_user.startswith("Fix the rounding")
    assert conv.ends_with_result and not conv.ends_with_user


def test_snake_case_keys_and_structured_responses() -> None:
    conv = parse(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "What is the weather in Lisbon?"}]},
                {"role": "model", "parts": [{"function_call": {"name": "get_weather"}}]},
                {
                    "role": "user",
                    "parts": [
                        {
                            "function_response": {
                                "name": "get_weather",
                                "response": {"result": {"temp_c": 21}},
                            }
                        }
                    ],
                },
            ],
            "system_instruction": {"parts": [{"text": "Be brief."}]},
        }
    )
    assert conv is not None and conv.system == "Be brief."
    (result,) = conv.results
    assert result.tool == "get_weather" and result.is_error is None
    assert orjson.loads(result.text) == {"result": {"temp_c": 21}}


def test_splice_appends_inside_the_error_or_output_and_leaves_the_input_alone() -> None:
    payload = body(
        {"role": "model", "parts": [call_part("read_file", READ), call_part("run", {})]},
        {
            "role": "user",
            "parts": [
                response_part("read_file", {"error": NOT_FOUND}),
                response_part("run", {"output": "Exit Code: 1"}),
                response_part("mcp", {"content": [{"type": "text", "text": "timeout"}]}),
            ],
        },
    )
    before = copy.deepcopy(payload)
    plan = Plan(appends={(2, 0): "[B0]", (2, 1): "[B1]", (2, 2): "[B2]"})
    out = splice(payload, plan, APPEND)
    parts = out["contents"][2]["parts"]
    assert parts[0]["functionResponse"]["response"] == {"error": NOT_FOUND + "\n\n[B0]"}
    assert parts[1]["functionResponse"]["response"] == {"output": "Exit Code: 1\n\n[B1]"}
    assert parts[2]["functionResponse"]["response"]["recovery"] == "[B2]"
    assert out["contents"][1] is payload["contents"][1] and payload == before
    message = splice(payload, Plan(appends={(2, 0): "[B0]"}), Placement(mode="message"))
    assert message["contents"][2]["parts"][:3] == payload["contents"][2]["parts"]
    assert message["contents"][2]["parts"][3] == {"text": "[B0]"}


def test_summary_is_the_last_part_of_the_system_instruction() -> None:
    out = splice(body(), Plan(summary="## Recent failures"), APPEND)
    assert out["systemInstruction"] == {
        "role": "user",
        "parts": [{"text": GEMINI_SYSTEM}, {"text": "## Recent failures"}],
    }
    bare = {"contents": body()["contents"], "system_instruction": None}
    assert splice(bare, Plan(summary="[S]"), APPEND)["system_instruction"] == {
        "parts": [{"text": "[S]"}]
    }
    absent = splice({"contents": []}, Plan(summary="[S]"), APPEND)
    assert absent["systemInstruction"] == {"parts": [{"text": "[S]"}]}


def test_routes_errors_and_credentials() -> None:
    assert matches(f"/v1beta/models/{MODEL}:generateContent")
    assert matches(STREAM_PATH) and matches("/v1/models/gemini-2.5-flash:generateContent")
    assert not matches(f"/v1beta/models/{MODEL}:countTokens")
    assert not matches("/v1beta/models/a/b:generateContent")
    assert not matches("/v1beta/models/:generateContent")
    assert FORMAT in FORMATS and for_passthrough("/v1beta/models", {}) is FORMAT
    assert for_passthrough("/v1/models", {"x-goog-api-key": "AIza"}) is FORMAT
    assert orjson.loads(error_body(409, "Stop.", "recovery_escalation")) == {
        "error": {"code": 409, "message": "Stop.", "status": "ABORTED"}
    }
    assert with_query_key({}, b"alt=sse&key=AIzaSyA") == {"x-goog-api-key": "AIzaSyA"}
    assert with_query_key({"x-goog-api-key": "AIzaB"}, b"key=AIzaSyA") == {
        "x-goog-api-key": "AIzaB"
    }


# ---- over HTTP: the real app, a mock Gemini API on loopback ---------------------------------------------


class GeminiCliAgent:
    """Gemini CLI-like: the whole history each turn to `:streamGenerateContent?alt=sse`,
    `functionCall` with ids, `{"error": message}` / `{"output": text}` responses. Gemini CLI
    sends no session id of its own; `GEMINI_CLI_CUSTOM_HEADERS` adds one (`session`)."""

    def __init__(
        self, client: httpx.AsyncClient, key: str = "AIzaSyD-gemini-tenant", session: str = ""
    ) -> None:
        self.client = client
        self.headers = {"x-goog-api-key": key} | ({"X-Session-Id": session} if session else {})
        self.contents: list[dict[str, Any]] = [
            {"role": "user", "parts": [{"text": "Fix the rounding bug in invoice totals."}]}
        ]
        self.sent: list[bytes] = []
        self.forwarded: list[bytes] = []
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    async def call(self, name: str, args: dict[str, Any], response: Any) -> httpx.Response:
        call_id = f"{name}-{next(_ids)}"
        self.contents.append({"role": "model", "parts": [call_part(name, args, call_id)]})
        self.contents.append({"role": "user", "parts": [response_part(name, response, call_id)]})
        return await self.send()

    async def send(self) -> httpx.Response:
        raw = orjson.dumps(
            {
                "contents": self.contents,
                "systemInstruction": {"role": "user", "parts": [{"text": GEMINI_SYSTEM}]},
                "generationConfig": {"temperature": 0},
            }
        )
        answer = b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}\r\n\r\n'
        with upstream_mock(assert_all_called=False) as mock:
            route: MockRoute = mock.post(f"{ROOT}{STREAM_PATH}").mock(
                return_value=httpx.Response(
                    200, content=answer, headers={"content-type": "text/event-stream"}
                )
            )
            response = await self.client.post(
                f"{STREAM_PATH}?alt=sse", content=raw, headers=self.headers
            )
        self.sent.append(raw)
        self.responses.append(response)
        if route.called:
            self.requests.append(route.calls.last.request)
            self.forwarded.append(route.calls.last.request.content)
        return response

    @property
    def last(self) -> dict[str, Any]:
        return orjson.loads(self.forwarded[-1])

    @property
    def last_response(self) -> dict[str, Any]:
        """The newest functionResponse.response the model received."""
        return self.last["contents"][-1]["parts"][0]["functionResponse"]["response"]


async def test_block_inside_the_error_and_the_second_lists_the_first(client) -> None:
    agent = GeminiCliAgent(client)
    response = await agent.call("read_file", READ, {"error": NOT_FOUND})
    assert response.status_code == 200 and response.headers["x-recovery-proxy-injected"] == "1"
    assert response.headers["content-type"].startswith("text/event-stream")
    request = agent.requests[-1]
    assert str(request.url) == f"{ROOT}{STREAM_PATH}?alt=sse"
    assert request.headers["x-goog-api-key"] == "AIzaSyD-gemini-tenant"
    first = agent.last_response["error"]
    assert first.startswith(NOT_FOUND + "\n\n[Error Recovery Context]\n")
    assert "read_file" in first
    await agent.call("replace", {"file_path": READ["file_path"]}, {"error": NOT_FOUND})
    assert "1. read_file(" in agent.last_response["error"]
    assert agent.last["contents"][2]["parts"][0]["functionResponse"]["response"]["error"] == first


async def test_nothing_to_add_is_forwarded_byte_for_byte(client) -> None:
    agent = GeminiCliAgent(client)
    response = await agent.call("read_file", READ, {"output": "def total(items):\n    ..."})
    assert response.headers["x-recovery-proxy-injected"] == "0"
    assert agent.forwarded[-1] == agent.sent[-1]
    assert response.text.startswith('data: {"candidates"')


async def test_repeats_end_in_stop(client) -> None:
    agent = GeminiCliAgent(client)
    for i in range(3):
        await agent.call("read_file", READ, {"error": NOT_FOUND})
        if i < 2:
            await agent.call("glob", {"pattern": f"src/{i}*.py"}, {"output": "src/totals.py"})
    assert "STOP: occurrence #3 of the same not_found failure" in agent.last_response["error"]


async def test_every_request_extends_the_previous_one(client) -> None:
    agent = GeminiCliAgent(client)
    script: list[tuple[str, dict[str, Any], Any]] = [
        ("read_file", READ, {"error": NOT_FOUND}),
        ("glob", {"pattern": "**/*.py"}, {"output": "src/totals.py"}),
        ("replace", {"file_path": "src/totals.py"}, {"error": EDIT_FAILED}),
        ("read_file", {"file_path": "src/totals.py"}, {"output": "def total(): ..."}),
    ]
    for _ in range(3):
        for name, args, response in script:
            assert (await agent.call(name, args, response)).status_code == 200
    dump = orjson.dumps
    for previous, current in itertools.pairwise(agent.forwarded):
        before, after = orjson.loads(previous), orjson.loads(current)
        n = len(before["contents"])
        assert [dump(c) for c in after["contents"][:n]] == [dump(c) for c in before["contents"]]
        assert dump(after["systemInstruction"]) == dump(before["systemInstruction"])


async def test_key_query_parameter_scopes_the_tenant_and_is_forwarded(client) -> None:
    for key in ("AIzaSyA-tenant-one", "AIzaSyB-tenant-two"):
        raw = orjson.dumps(
            body(
                {"role": "model", "parts": [call_part("read_file", READ, "r1")]},
                {"role": "user", "parts": [response_part("read_file", {"error": NOT_FOUND}, "r1")]},
            )
        )
        with upstream_mock() as mock:
            route = mock.post(f"{ROOT}/v1beta/models/{MODEL}:generateContent").respond(
                200, json={"candidates": []}
            )
            await client.post(f"/v1beta/models/{MODEL}:generateContent?key={key}", content=raw)
        request = route.calls.last.request
        assert request.url.params["key"] == key
        sent = orjson.loads(request.content)["contents"][2]["parts"][0]
        assert "Earlier attempts" not in sent["functionResponse"]["response"]["error"]


async def test_escalation_block_is_a_409_in_googles_shape(tmp_path) -> None:
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: block ",
        },
    )
    async with proxy_client(make_settings(rules=rules)) as client:
        agent = GeminiCliAgent(client)
        await agent.call("run_shell_command", {"command": "pytest"}, {"error": NOT_FOUND})
        blocked = await agent.call(
            "run_shell_command", {"command": "pytest -x"}, {"error": NOT_FOUND}
        )
    assert blocked.status_code == 409
    error = blocked.json()["error"]
    assert set(error) == {"code", "message", "status"} and error["status"] == "ABORTED"
    assert "2 consecutive tool calls have failed" in error["message"]
    assert len(agent.forwarded) == 1


async def test_compaction_summary_goes_into_the_system_instruction(client) -> None:
    agent = GeminiCliAgent(client, session="b7e2c1d0-5a4f-4c3e-9d2b-1f0e8a7c6d5e")
    await agent.call("read_file", READ, {"error": NOT_FOUND})
    await agent.call("replace", {"file_path": "src/totals.py"}, {"error": EDIT_FAILED})
    agent.contents = [
        {
            "role": "user",
            "parts": [
                {
                    "text": "<state_snapshot>\n<overall_goal>Fix rounding</overall_goal>\n</state_snapshot>"
                }
            ],
        },
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
    ]
    agent.contents.append({"role": "user", "parts": [{"text": "Continue."}]})
    await agent.send()
    parts = agent.last["systemInstruction"]["parts"]
    assert parts[0] == {"text": GEMINI_SYSTEM}
    assert parts[1]["text"].startswith("## Recent failures") and "read_file" in parts[1]["text"]


FRAMES = [
    b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "Rea"}]}}]}\r\n\r\n',
    b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "dy"}]}, "finishReason": "STOP"}]}\r\n\r\n',
]


def test_sse_is_relayed_as_it_arrives() -> None:
    """Real sockets on both sides: the first frame reaches the client while the upstream is
    still holding the second."""
    release = threading.Event()

    async def generate(request: Request) -> StreamingResponse:
        await request.body()

        async def frames() -> AsyncIterator[bytes]:
            yield FRAMES[0]
            while not release.is_set():
                await asyncio.sleep(0.01)
            yield FRAMES[1]

        return StreamingResponse(frames(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route(STREAM_PATH, generate, methods=["POST"])])
    raw = orjson.dumps(body())
    with BackgroundServer(upstream) as up:
        settings = make_settings(gemini_upstream=up.url)
        with (
            BackgroundServer(create_app(settings)) as proxy,
            httpx.Client(timeout=10) as http,
            http.stream(
                "POST",
                f"{proxy.url}{STREAM_PATH}?alt=sse",
                content=raw,
                headers={"x-goog-api-key": "AIzaSyD-gemini-tenant"},
            ) as response,
        ):
            chunks = response.iter_raw()
            first = next(chunks)
            assert first == FRAMES[0] and not release.is_set()
            release.set()
            rest = b"".join(chunks)
    assert rest == FRAMES[1]


async def test_other_gemini_paths_pass_through(client) -> None:
    raw = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    with upstream_mock() as mock:
        route = mock.post(f"{ROOT}/v1beta/models/{MODEL}:countTokens").respond(
            200, json={"totalTokens": 3}
        )
        response = await client.post(
            f"/v1beta/models/{MODEL}:countTokens", content=raw, headers={"x-goog-api-key": "AIza"}
        )
    assert response.json() == {"totalTokens": 3} and route.calls.last.request.content == raw


async def test_the_window_is_the_path_models(client) -> None:
    """The body names no model: the path's `gemini-2.5-pro` (a 1M-token window) sets the
    budget, so a 150k-token session still gets full blocks (a 128k default would allow only
    escalations past ~109k tokens)."""
    from recovery_proxy.wire.gemini import model_of_path

    assert model_of_path(STREAM_PATH) == MODEL
    assert model_of_path("/v1/models/gemini-2.5-flash:generateContent") == "gemini-2.5-flash"
    agent = GeminiCliAgent(client)
    agent.contents[0]["parts"][0]["text"] += "\n" + "x" * 600_000  # ~150k tokens by estimate
    response = await agent.call("read_file", READ, {"error": NOT_FOUND})
    assert response.headers["x-recovery-proxy-injected"] == "1"
    assert "[Error Recovery Context]" in agent.last_response["error"]
