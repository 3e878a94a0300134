"""Resolution memory over the real HTTP path, in every wire format: what finally worked shows
in the post-compaction summary (frozen), in a later block for the same target, in the admin
API's session detail and in the A/B report; a streak that ends in giving up shows nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.core.state import SessionState
from tests.agent import ScriptedAgent
from tests.conftest import make_settings, proxy_client
from tests.wire.agents import ClaudeAgent, ResponsesAgent, user_item
from tests.wire.test_gemini import GeminiCliAgent

TOKEN = "admin-token-for-resolutions"
ENOENT = "Error: ENOENT: no such file or directory, open '{}'"
CLAUDE_MARKER = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nAnalysis: the port lives in src/settings.ts."
)
CODEX_MARKER = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process.\n\nThe port lives in src/settings.ts."
)


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)


def readme_example() -> str:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text(encoding="utf-8").split("### What worked", 1)[1]
    match = re.search(r"```\n(.*?)\n```", section, re.S)
    assert match, "the README lost its resolution example"
    return match.group(1)


class Driver:
    """One agent in one wire format: a tool call per turn, then a compaction."""

    format = ""

    async def call(self, tool: str, args: dict[str, Any], out: str, err: bool = False) -> None:
        raise NotImplementedError

    async def compact(self) -> httpx.Response:
        raise NotImplementedError

    def forwarded(self) -> dict[str, Any]:
        raise NotImplementedError

    def text(self) -> str:
        """Every string the provider received in the latest request."""
        return "\n".join(strings(self.forwarded()))

    def last_result(self) -> str:
        raise NotImplementedError


class Chat(Driver):
    format = "openai_chat"

    def __init__(self, client: httpx.AsyncClient, session: str = "res-chat") -> None:
        self.agent = ScriptedAgent(client, session=session)

    async def call(self, tool: str, args: dict[str, Any], out: str, err: bool = False) -> None:
        response = await self.agent.call(tool, args, out)
        self.session = response.headers["x-recovery-proxy-session"]

    async def compact(self) -> httpx.Response:
        m = self.agent.messages
        self.agent.messages = [m[0], {"role": "user", "content": CLAUDE_MARKER}]
        return await self.agent.send()

    def forwarded(self) -> dict[str, Any]:
        return self.agent.forwarded[-1]

    def last_result(self) -> str:
        return self.agent.last_tool_text


class Responses(Driver):
    format = "openai_responses"

    def __init__(self, client: httpx.AsyncClient, session: str = "") -> None:
        self.agent = ResponsesAgent(client, headers={"X-Session-Id": session} if session else {})

    async def call(self, tool: str, args: dict[str, Any], out: str, err: bool = False) -> None:
        response = await self.agent.call(tool, args, out)
        self.session = response.headers["x-recovery-proxy-session"]

    async def compact(self) -> httpx.Response:
        self.agent.input = [user_item(CODEX_MARKER)]
        return await self.agent.send()

    def forwarded(self) -> dict[str, Any]:
        return self.agent.last

    def last_result(self) -> str:
        return self.agent.last_output


class Messages(Driver):
    format = "anthropic_messages"

    def __init__(self, client: httpx.AsyncClient, session: str = "") -> None:
        self.agent = ClaudeAgent(client, headers={"X-Session-Id": session} if session else {})

    async def call(self, tool: str, args: dict[str, Any], out: str, err: bool = False) -> None:
        response = await self.agent.call(tool, args, out, True if err else None)
        self.session = response.headers["x-recovery-proxy-session"]

    async def compact(self) -> httpx.Response:
        self.agent.messages = [
            {"role": "user", "content": [{"type": "text", "text": CLAUDE_MARKER}]}
        ]
        return await self.agent.send()

    def forwarded(self) -> dict[str, Any]:
        return self.agent.last

    def last_result(self) -> str:
        content = self.agent.last_result["content"]
        return content if isinstance(content, str) else content[-1]["text"]


class Gemini(Driver):
    format = "gemini"

    def __init__(self, client: httpx.AsyncClient, session: str = "res-gemini") -> None:
        self.agent = GeminiCliAgent(client, session=session)

    async def call(self, tool: str, args: dict[str, Any], out: str, err: bool = False) -> None:
        response = await self.agent.call(tool, args, {"error": out} if err else {"output": out})
        self.session = response.headers["x-recovery-proxy-session"]

    async def compact(self) -> httpx.Response:
        snapshot = (
            "<state_snapshot>\n<overall_goal>Change the port</overall_goal>\n</state_snapshot>"
        )
        self.agent.contents = [{"role": "user", "parts": [{"text": snapshot}]}]
        return await self.agent.send()

    def forwarded(self) -> dict[str, Any]:
        return self.agent.last

    def last_result(self) -> str:
        response = self.agent.last_response
        return response.get("error") or response.get("output")


DRIVERS = {"chat": Chat, "responses": Responses, "messages": Messages, "gemini": Gemini}


async def session_detail(client: httpx.AsyncClient, key: str) -> dict[str, Any]:
    response = await client.get(
        f"/admin/sessions/{key}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("name", DRIVERS)
async def test_an_alternative_found_by_a_listing_shows_after_compaction(name: str) -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = DRIVERS[name](client)
        missing = ENOENT.format("src/config.ts")
        await agent.call("read_file", {"path": "src/config.ts"}, missing, err=True)
        await agent.call("read_file", {"path": "src/config.ts"}, missing, err=True)
        await agent.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")
        await agent.call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;")
        assert "worked" not in agent.text()  # nothing is said before a compaction
        response = await agent.compact()
        assert response.status_code == 200
        summary = agent.text()
        item = '- [not_found] read_file("src/config.ts") failed (turn 2): '
        worked = '  -> worked (turn 4): read_file("src/settings.ts"), found by list_dir("src")'
        assert f'{item}"{missing}"\n{worked}' in summary
        assert readme_example() in summary  # README's "What worked" is the real output
        # Frozen: a later request carries the same bytes.
        await agent.call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;")
        assert f'{item}"{missing}"\n{worked}' in agent.text()
        # The admin API lists what worked; the timeline has its event.
        body = await session_detail(client, agent.session)
        [resolution] = body["resolutions"]
        assert (resolution["kind"], resolution["tool"], resolution["worked"]) == (
            "alternative",
            "read_file",
            "src/settings.ts",
        )
        assert resolution["via"] == [["list_dir", "src"]] and len(resolution["failed"]) == 2
        page = await client.get(
            f"/admin/sessions/{agent.session}",
            headers={"Authorization": f"Bearer {TOKEN}", "Accept": "text/html"},
        )
        assert '<span class="tag k-resolution">resolution</span>' in page.text
        assert "found by list_dir(&quot;src&quot;)" in page.text
        events = [e for e in body["timeline"] if e["kind"] == "resolution"]
        assert [e["text"] for e in events] == [
            'read_file("src/config.ts") not_found x2 -> worked: read_file("src/settings.ts"), '
            'found by list_dir("src")'
        ]


@pytest.mark.parametrize("name", DRIVERS)
async def test_a_later_failure_on_the_same_target_is_told_what_worked(name: str) -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = DRIVERS[name](client)
        command = {"command": "pytest -q"}
        missing = "ModuleNotFoundError: No module named 'requests'\n[exit code 1]"
        await agent.call("bash", command, missing, err=True)
        await agent.call(
            "bash", {"command": "pip install requests"}, "Successfully installed requests-2.32.3"
        )
        await agent.call("bash", command, "12 passed in 0.8s")
        assert "Earlier in this session" not in agent.last_result()
        await agent.call("bash", command, missing, err=True)  # the venv was recreated
        block = agent.last_result()
        assert (
            'Earlier in this session, bash("pytest -q") (missing_dependency) was resolved by '
            'bash("pytest -q"), after bash("pip install requests").'
        ) in block
        body = await session_detail(client, agent.session)
        [resolution] = body["resolutions"]
        assert resolution["kind"] == "retry" and resolution["changed"] is False


@pytest.mark.parametrize("name", DRIVERS)
async def test_giving_up_and_unrelated_successes_resolve_nothing(name: str) -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        agent = DRIVERS[name](client)
        missing = ENOENT.format("src/config.ts")
        await agent.call("read_file", {"path": "src/config.ts"}, missing, err=True)
        await agent.call("read_file", {"path": "src/config.ts"}, missing, err=True)
        await agent.call("read_file", {"path": "README.md"}, "# shop\n")
        await agent.call("bash", {"command": "git status --short"}, " M src/index.ts")
        await agent.compact()
        summary = agent.text()
        assert '- [not_found] read_file("src/config.ts") failed' in summary
        assert "worked" not in summary
        body = await session_detail(client, agent.session)
        assert body["resolutions"] == []
        assert [e for e in body["timeline"] if e["kind"] == "resolution"] == []


async def test_the_report_counts_resolved_streaks_and_turns_per_arm(tmp_path) -> None:
    """Both arms track resolutions (control injects nothing): the report compares them."""
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    settings = make_settings(admin_token=TOKEN, store=store, control_fraction=0.5)
    async with proxy_client(settings) as client:
        arms: dict[str, list[str]] = {"treatment": [], "control": []}
        n = 0
        while min(len(v) for v in arms.values()) < 2 and n < 40:
            n += 1
            agent = ScriptedAgent(client, session=f"ab-{n}")
            missing = ENOENT.format("out/report.json")
            response = await agent.call("write_file", {"path": "out/report.json"}, missing)
            await agent.call("bash", {"command": "mkdir -p out"}, "")
            await agent.call("write_file", {"path": "out/report.json"}, "Wrote 2 bytes")
            arm = response.headers.get("x-recovery-proxy-arm", "treatment")
            arms[arm].append(response.headers["x-recovery-proxy-session"])
        report = (
            await client.get("/admin/report", headers={"Authorization": f"Bearer {TOKEN}"})
        ).json()
    assert min(len(keys) for keys in arms.values()) >= 2, arms
    for arm, keys in arms.items():
        assert report[arm]["streaks_resolved"] == len(keys)
        assert report[arm]["mean_turns_to_resolution"] == 2.0


def test_a_state_stored_before_resolutions_still_loads() -> None:
    old = {"records": [], "turn": 3, "stats": {"results": 2}, "timeline": []}
    state = SessionState.model_validate_json(orjson.dumps(old))
    assert state.resolutions.items == [] and state.turn == 3
