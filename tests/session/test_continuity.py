"""Header-less runs: a thread that starts again from its first user message, after its
conversation has judged tool results, is a new run with a session of its own (two `gemini -p`
runs with the same prompt); a retry of the first request stays in its conversation."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from tests.upstream import ROOT, upstream_mock

PATH = "/v1beta/models/gemini-2.5-pro:generateContent"
SYSTEM = {"parts": [{"text": "You are Gemini CLI, an interactive CLI agent."}]}
PROMPT = {"role": "user", "parts": [{"text": "read missing.txt"}]}
FAILED = (
    "<untrusted_context>\nOutput: cat: missing.txt: No such file or directory\nExit Code: 1\n"
    "Process Group PGID: 2520\n</untrusted_context>"
)
REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}


def turn(n: int) -> list[dict[str, Any]]:
    """The model's n-th shell call and its failed result (ids as Gemini CLI makes them)."""
    call = {"id": f"call-{n}", "name": "run_shell_command", "args": {"command": "cat missing.txt"}}
    answer = {"id": f"call-{n}", "name": "run_shell_command", "response": {"output": FAILED}}
    return [
        {"role": "model", "parts": [{"functionCall": call}]},
        {"role": "user", "parts": [{"functionResponse": answer}]},
    ]


async def send(client: httpx.AsyncClient, contents: list[dict[str, Any]]) -> httpx.Response:
    body = {"contents": contents, "systemInstruction": SYSTEM}
    headers = {"x-goog-api-key": "gemini-key"}
    response = await client.post(PATH, content=orjson.dumps(body), headers=headers)
    assert response.status_code == 200
    return response


async def run(client: httpx.AsyncClient, route: Any) -> tuple[set[str], str]:
    """One Gemini CLI run: the prompt, then two failed shell calls. Its sessions and the
    last result as the model received it."""
    sessions = set()
    contents = [PROMPT]
    sessions.add((await send(client, contents)).headers["x-recovery-proxy-session"])
    for n in (1, 2):
        contents += turn(n)
        sessions.add((await send(client, contents)).headers["x-recovery-proxy-session"])
    forwarded = orjson.loads(route.calls.last.request.content)
    return sessions, forwarded["contents"][-1]["parts"][0]["functionResponse"]["response"]["output"]


async def test_two_runs_with_the_same_prompt_are_two_sessions(client) -> None:
    with upstream_mock() as mock:
        route = mock.post(f"{ROOT}{PATH}").respond(200, json=REPLY)
        first, first_last = await run(client, route)
        second, second_last = await run(client, route)
    assert len(first) == 1 and len(second) == 1 and first != second
    for last in (first_last, second_last):  # each run: its own first attempt, nothing more
        assert "  1. run_shell_command(" in last and "  2. " not in last
    assert second_last == first_last


async def test_a_retried_first_request_stays_in_its_session(client) -> None:
    with upstream_mock() as mock:
        mock.post(f"{ROOT}{PATH}").respond(200, json=REPLY)
        one = (await send(client, [PROMPT])).headers["x-recovery-proxy-session"]
        again = (await send(client, [PROMPT])).headers["x-recovery-proxy-session"]
        later = (await send(client, [PROMPT, *turn(1)])).headers["x-recovery-proxy-session"]
    assert one == again == later
