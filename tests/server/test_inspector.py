"""The session inspector in a real headless Chromium (Debian's `chromium`, over the DevTools
protocol): the token exchange and cookie, sessions listed, a session's requests (what the model
received), timeline and records, the page following the session by reloading itself, attacker
text shown as text and never run, nothing without the token.

Also a script for the README's screenshot:

    python -m tests.server.test_inspector docs/inspector.png
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
from tests.browser import Browser, CDPError, Page, chromium_path
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
            await build.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")
            await build.call(
                "read_file", {"path": "src/settings.ts"}, ENOENT.format("src/settings.ts")
            )

        hostile = ScriptedAgent(http, session="scrape-7", api_key="sk-team-beta")
        url = f"https://example.test/search?q={ATTACK}"  # the model echoes a page's text
        await hostile.call("fetch", {"url": url}, f"Error: {ATTACK}")
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

            # Per request, newest first: each text added in full (as the API gives it, which
            # tests/server/test_admin.py checks against what the provider received), what was
            # re-applied byte for byte, and the new tokens.
            assert "Requests (4)" in detail
            rows = await page.eval(
                "[...document.querySelectorAll('#requests tbody tr')].map(r => ["
                "r.cells[2].textContent, [...r.cells[3].querySelectorAll('pre')]"
                ".map(p => p.textContent), r.cells[4].textContent])"
            )
            api = await session_json(server.url, keys["build"])
            assert rows == [
                [
                    str(r["tokens_added"]),
                    [a["text"] for a in r["added"]],
                    ", ".join(a["call_id"] for a in r["reapplied"]) or "none",
                ]
                for r in reversed(api["requests"])
            ]
            assert rows[0][1][0].startswith('[Error Recovery Context]\nOperation: bash("npm test")')
            assert rows[0][2].count("call_") == 3 and rows[-1][2] == "none"
            assert sum(int(tokens) for tokens, _, _ in rows) == api["stats"]["tokens_injected"]
            assert "read_file(src/config.ts)" in detail and "not_found" in detail
            assert "has happened 2 times" in detail and "STOP: occurrence #3" in detail
            assert "Loop notice: read_file" not in detail  # STOP speaks for that event
            kinds = await page.eval(
                "[...document.querySelectorAll('.tag')].map(t => t.textContent)"
            )
            # What the tracker recorded: four blocks, the repeat note and STOP.
            assert kinds.count("block") == 4 and kinds.count("notice") == 2
            assert "tokens added" in detail and "repeat and loop notices" in detail

            # The attacker's text is shown as text and never runs (here without auto-refresh).
            url = f"{server.url}/admin/sessions/{keys['hostile']}?refresh=0"
            assert await page.goto(url) == 200
            hostile = await page.text()
            assert "<script>window.pwned=1;document.title='pwned'</script>" in hostile
            assert '<img src=x onerror="window.pwned=2">' in hostile
            added = await page.eval("document.querySelector('#requests pre').textContent")
            assert f'fetch("https://example.test/search?q={ATTACK}")' in added  # verbatim, as text
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


async def session_json(url: str, key: str) -> dict:
    """A session's detail from the admin API (Bearer token)."""
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.get(
            f"/admin/sessions/{key}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    response.raise_for_status()
    return response.json()


async def text_once_loaded(chrome: Browser, page: Page, needle: str, timeout: float) -> str:
    """The page's text once it holds `needle`, waiting for the page to reload itself (the
    test never navigates meanwhile); TimeoutError if it does not within `timeout` s."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        mark = len(chrome.events)
        try:
            text = await page.text()
        except CDPError:  # asked while a reload replaced the document
            text = ""
        if needle in text:
            return text
        left = deadline - asyncio.get_running_loop().time()
        await chrome.wait_event("Page.loadEventFired", page.session, mark, max(left, 0.01))


async def test_the_session_page_follows_the_session_until_stopped(tmp_path: Path) -> None:
    """Opened once, the session page reloads itself (a `<meta>` refresh: no script) and shows a
    request the agent makes afterwards; its `stop` link ends the reloads."""
    with inspector_server(tmp_path / "sessions.db") as server:
        async with httpx.AsyncClient(base_url=server.url) as http, browser() as chrome:
            agent = ScriptedAgent(http, session="live-run-7", api_key="sk-team-alpha")
            await agent.call("read_file", {"path": "src/config.ts"}, ENOENT.format("src/config.ts"))
            key = agent.responses[-1].headers["x-recovery-proxy-session"]
            page = await chrome.new_page(private=True)
            url = f"{server.url}/admin/sessions/{key}?refresh=1&token={TOKEN}"
            assert await page.goto(url) == 200
            assert "Requests (1)" in await page.text()
            assert await page.eval("document.scripts.length") == 0

            await agent.call("bash", {"command": "npm test"}, "npm ERR! Test failed.  See above.")
            text = await text_once_loaded(chrome, page, "Requests (2)", timeout=15)
            assert 'Operation: bash("npm test")' in text
            assert "refreshes every 1 s" in text

            stop = await page.eval("document.querySelector('.refresh a').href")
            assert stop == f"{server.url}/admin/sessions/{key}?refresh=0"
            assert await page.goto(stop) == 200
            mark = len(chrome.events)
            await agent.call("list_dir", {"path": "src"}, "index.ts\nsettings.ts")
            with pytest.raises(TimeoutError):  # no reload any more
                await chrome.wait_event("Page.loadEventFired", page.session, mark, timeout=3)
            assert "refresh every 5 s" in await page.text()


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
