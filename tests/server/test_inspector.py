"""The session inspector in a real headless Chromium (Debian's `chromium`, over the DevTools
protocol): the token exchange and cookie, sessions listed, a session's timeline and records,
attacker text shown as text and never run, nothing without the token.

Also a script for the README's screenshot:

    python -m tests.test_inspector docs/inspector.png
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest

from recovery_proxy.demo.scenario import COMPACTED
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from recovery_proxy.session.keys import tenant_of
from tests.agent import ScriptedAgent
from tests.browser import Browser, chromium_path
from tests.conftest import make_settings

TOKEN = "inspect-Xr7Kq2mW9pZt"
ATTACK = (
    "<script>window.pwned=1;document.title='pwned'</script><img src=x onerror=\"window.pwned=2\">"
)
ENOENT = "Error: ENOENT: no such file or directory, open '{}'"


def need_chromium() -> str:
    path = chromium_path()
    if path is None:
        pytest.fail(
            "chromium not found: the inspector test needs Debian's chromium "
            "(apt-get install -y chromium; .ci/run installs it) or $CHROMIUM set to a binary"
        )
    return path


@contextmanager
def inspector_server(db: Path) -> Iterator[BackgroundServer]:
    settings = make_settings(admin_token=TOKEN, store=f"sqlite:{db}")
    with BackgroundServer(create_app(settings)) as server:
        yield server


async def play_sessions(url: str, db: Path, compact: bool = False) -> dict[str, str]:
    """Real failing tool calls through the proxy: the tracker keeps the stats and timeline."""
    keys: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=url) as http:
        build = ScriptedAgent(http, session="build-fix-42", api_key="sk-team-alpha")
        for _ in range(3):
            await build.call("read_file", {"path": "src/config.ts"}, ENOENT.format("src/config.ts"))
        await build.call("bash", {"command": "npm test"}, "npm ERR! Test failed.  See above.")
        keys["build"] = build.responses[-1].headers["x-recovery-proxy-session"]
        if compact:  # the agent compacts its history: the proxy adds the failure summary
            build.messages = [build.messages[0], {"role": "user", "content": COMPACTED}]
            await build.send()

        hostile = ScriptedAgent(http, session="scrape-7", api_key="sk-team-beta")
        await hostile.call("fetch", {"url": "https://example.test"}, f"Error: {ATTACK}")
        keys["hostile"] = hostile.responses[-1].headers["x-recovery-proxy-session"]
    return keys


@asynccontextmanager
async def browser() -> AsyncIterator[Browser]:
    async with Browser(need_chromium()) as b:
        yield b


async def test_inspector_in_chromium(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with inspector_server(db) as server:
        keys = await play_sessions(server.url, db)
        async with browser() as chrome:
            # Without the token: a small 401 page, no session data.
            stranger = await chrome.new_page(private=True)
            assert await stranger.goto(f"{server.url}/admin/") == 401
            text = await stranger.text()
            assert "Token required" in text
            for key in keys.values():
                assert key not in text
            assert await stranger.goto(f"{server.url}/admin/sessions/{keys['build']}") == 401
            assert "src/config.ts" not in await stranger.text()
            assert await stranger.goto(f"{server.url}/admin/?token=wrong") == 401
            assert await stranger.cookies(f"{server.url}/admin/") == []

            # Opened once with the token: cookie set, redirected to the URL without it.
            page = await chrome.new_page(private=True)
            assert await page.goto(f"{server.url}/admin/?token={TOKEN}") == 200
            assert await page.eval("location.href") == f"{server.url}/admin/"
            (cookie,) = await page.cookies(f"{server.url}/admin/")
            assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
            assert cookie["path"] == "/admin" and TOKEN not in cookie["value"]
            assert await page.eval("document.cookie") == ""  # HttpOnly: scripts cannot read it

            # A plain navigation now: the cookie alone authorizes.
            assert await page.goto(f"{server.url}/admin/") == 200
            listing = await page.text()
            for key in keys.values():
                assert key in listing
            assert tenant_of({"authorization": "Bearer sk-team-alpha"}, "recovery-proxy") in listing
            assert "sk-team-alpha" not in listing
            names = await page.eval(
                "[...document.querySelectorAll('a.name')].map(a => a.textContent)"
            )
            assert sorted(names) == ["build-fix-42", "scrape-7"]  # the names agents gave
            links = await page.eval("[...document.querySelectorAll('a.name')].map(a => a.href)")
            assert f"{server.url}/admin/sessions/{keys['build']}" in links

            # The filter box is a plain GET form (no script): what it submits lists only the
            # sessions whose name matches, and the box keeps the text.
            form = await page.eval(
                "(f => [f.method, f.getAttribute('action'), f.elements[0].name])"
                "(document.querySelector('form'))"
            )
            assert form == ["get", "/admin/", "name"]
            assert await page.goto(f"{server.url}/admin/?name=BUILD") == 200
            filtered = await page.text()
            assert keys["build"] in filtered and keys["hostile"] not in filtered
            assert await page.eval("document.querySelector('input[name=name]').value") == "BUILD"

            # A session page: timeline and records.
            assert (
                await page.goto(links[links.index(f"{server.url}/admin/sessions/{keys['build']}")])
                == 200
            )
            detail = await page.text()
            assert "Timeline (6)" in detail and "Failure records (4)" in detail
            assert "read_file(src/config.ts)" in detail and "not_found" in detail
            assert "has happened 2 times" in detail and "STOP: occurrence #3" in detail
            assert "Loop notice: read_file" not in detail  # STOP speaks for that event
            kinds = await page.eval(
                "[...document.querySelectorAll('.tag')].map(t => t.textContent)"
            )
            # What the tracker recorded: four blocks, the repeat note and STOP.
            assert kinds.count("block") == 4 and kinds.count("notice") == 2
            assert "tokens injected" in detail

            # The attacker's text is shown as text and never runs.
            assert await page.goto(f"{server.url}/admin/sessions/{keys['hostile']}") == 200
            hostile = await page.text()
            assert "<script>window.pwned=1;document.title='pwned'</script>" in hostile
            assert '<img src=x onerror="window.pwned=2">' in hostile
            assert await page.eval("typeof window.pwned") == "undefined"
            assert "pwned" not in await page.eval("document.title")
            assert await page.eval("document.scripts.length") == 0
            assert await page.eval("document.images.length") == 0

            png = await page.screenshot()
            assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
            (tmp_path / "inspector.png").write_bytes(png)

            # Another browser context (no cookie) still sees nothing.
            other = await chrome.new_page(private=True)
            assert await other.goto(f"{server.url}/admin/sessions/{keys['hostile']}") == 401
            assert "pwned" not in await other.text()


async def screenshot(out: Path) -> None:
    """The README's picture: a realistic session page, rendered by Chromium."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        with inspector_server(db) as server:
            keys = await play_sessions(server.url, db, compact=True)
            async with browser() as chrome:
                page = await chrome.new_page(private=True)
                await page.goto(f"{server.url}/admin/sessions/{keys['build']}?token={TOKEN}")
                out.write_bytes(await page.screenshot(max_height=1800))
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/inspector.png")))
