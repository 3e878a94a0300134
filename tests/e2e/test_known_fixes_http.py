"""Known fixes across sessions over the real HTTP path, in every wire format: off by default,
offered once enough sessions of the same tenant resolved a failure the same way, marked as
learned, followed up in the report, never across tenants, never in the control arm, purgeable."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from recovery_proxy.cli.sessions import purge_sessions
from tests.agent import ScriptedAgent
from tests.conftest import make_settings, proxy_client
from tests.e2e.test_resolutions_http import DRIVERS, ENOENT, TOKEN, Driver

MISSING = ENOENT.format("src/config.ts")
OFFER = (
    'Learned from 2 earlier sessions (not verified in this one): read_file("src/config.ts") '
    '(not_found) was resolved by read_file("src/settings.ts"), found by list_dir("src").'
)


def readme_offer() -> str:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    text = " ".join(readme.read_text(encoding="utf-8").split())
    match = re.search(r"`(Learned from [^`]*)`", text)
    assert match, "the README lost its known-fix example"
    return match.group(1)


async def resolve(agent: Driver | ScriptedAgent) -> None:
    """The session finds where the setting lives after a missing file."""
    call = agent.call
    if isinstance(agent, ScriptedAgent):
        await call("read_file", {"path": "src/config.ts"}, MISSING)
    else:
        await call("read_file", {"path": "src/config.ts"}, MISSING, err=True)
    await call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")
    await call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;")


async def report(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/admin/report", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("name", DRIVERS)
async def test_a_fix_seen_in_enough_sessions_is_offered_followed_and_counted(name: str) -> None:
    settings = make_settings(admin_token=TOKEN, known_fixes=True, known_fixes_sessions=2)
    async with proxy_client(settings) as client:
        make = DRIVERS[name]
        await resolve(make(client, session="first"))
        later = make(client, session="second")
        await later.call("read_file", {"path": "src/config.ts"}, MISSING, err=True)
        assert "Learned from" not in later.last_result()  # one session is not enough
        await later.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")
        await later.call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;")

        third = make(client, session="third")
        await third.call("read_file", {"path": "src/config.ts"}, MISSING, err=True)
        assert OFFER in third.last_result()
        await third.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")  # follows it
        await third.call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;")
        await third.call("read_file", {"path": "src/config.ts"}, MISSING, err=True)
        assert "Learned from" not in third.last_result()  # offered once; this session knows now
        assert "Earlier in this session" in third.last_result()
        [row] = (await report(client))["known_fixes"]
        assert row["failed"] == 'read_file("src/config.ts")' and row["category"] == "not_found"
        assert row["worked"] == 'read_file("src/settings.ts")' and row["via"] == ['list_dir("src")']
        assert (row["sessions"], row["offered"], row["followed"], row["resolved"]) == (3, 1, 1, 1)


async def test_off_by_default() -> None:
    async with proxy_client(make_settings(admin_token=TOKEN)) as client:
        for n in range(3):
            await resolve(ScriptedAgent(client, session=f"s{n}"))
        agent = ScriptedAgent(client, session="s-later")
        await agent.call("read_file", {"path": "src/config.ts"}, MISSING)
        assert "Learned from" not in agent.last_tool_text
        assert (await report(client))["known_fixes"] == []


async def test_never_across_tenants() -> None:
    settings = make_settings(admin_token=TOKEN, known_fixes=True, known_fixes_sessions=2)
    async with proxy_client(settings) as client:
        for n in range(3):
            await resolve(ScriptedAgent(client, session=f"a{n}", api_key="sk-tenant-a"))
        stranger = ScriptedAgent(client, session="b0", api_key="sk-tenant-b")
        await stranger.call("read_file", {"path": "src/config.ts"}, MISSING)
        assert "Learned from" not in stranger.last_tool_text
        owner = ScriptedAgent(client, session="a-later", api_key="sk-tenant-a")
        await owner.call("read_file", {"path": "src/config.ts"}, MISSING)
        assert readme_offer() in owner.last_tool_text  # the README's example, word for word
        rows = (await report(client))["known_fixes"]
        assert len({row["tenant"] for row in rows}) == 1


async def test_never_in_the_control_arm() -> None:
    settings = make_settings(
        admin_token=TOKEN, known_fixes=True, known_fixes_sessions=1, control_fraction=0.5
    )
    async with proxy_client(settings) as client:
        await resolve(ScriptedAgent(client, session="teacher"))
        seen = {"treatment": 0, "control": 0}
        n = 0
        while min(seen.values()) < 2 and n < 40:
            n += 1
            agent = ScriptedAgent(client, session=f"later-{n}")
            response = await agent.call("read_file", {"path": "src/config.ts"}, MISSING)
            arm = response.headers["x-recovery-proxy-arm"]
            seen[arm] += 1
            sent = agent.forwarded[-1]["messages"][-1]["content"]
            if arm == "control":
                assert sent == MISSING  # forwarded untouched: no block, no fix
            else:
                assert "Learned from 1 earlier sessions" in sent
        assert min(seen.values()) >= 2
        [row] = (await report(client))["known_fixes"]
        assert row["offered"] == seen["treatment"]


async def test_purged_fixes_are_forgotten(tmp_path) -> None:
    store = f"sqlite:{tmp_path / 'sessions.db'}"
    settings = make_settings(
        admin_token=TOKEN, known_fixes=True, known_fixes_sessions=1, store=store
    )
    async with proxy_client(settings) as client:
        await resolve(ScriptedAgent(client, session="teacher"))
        # `recovery-proxy sessions purge --name "known fixes"`, from another thread (its own loop)
        assert await asyncio.to_thread(purge_sessions, settings, None, "known fixes") == 0
        agent = ScriptedAgent(client, session="later")
        await agent.call("read_file", {"path": "src/config.ts"}, MISSING)
        assert "Learned from" not in agent.last_tool_text
        assert (await report(client))["known_fixes"] == []
