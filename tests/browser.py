"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, for tests.

No Playwright or Selenium: they download browsers of their own. One websocket to the browser
(aiohttp), pages attached in flat mode; each `Page` is a tab in a browser context (a context
is a separate cookie jar, like a private window).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

FLAGS = [
    "--headless=new",
    "--no-sandbox",  # CI runs as root in a container; the browser only visits loopback pages
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",  # the machine's network is closed: no phoning home
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]


def chromium_path() -> str | None:
    """The system Chromium: $CHROMIUM, else `chromium` / `chromium-browser` on PATH."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    return shutil.which("chromium") or shutil.which("chromium-browser")


class CDPError(Exception):
    pass


class Browser:
    """`async with Browser() as browser: page = await browser.new_page()`."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.profile = Path(tempfile.mkdtemp(prefix="rp-chromium-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Browser:
        args = [self.executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                err = (
                    self.process.stderr.read().decode(errors="replace")
                    if self.process.stderr
                    else ""
                )
                await self.__aexit__(None, None, None)
                raise RuntimeError(f"chromium did not start: {err[-2000:]}")
            await asyncio.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.http = aiohttp.ClientSession()
        self.ws = await self.http.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send("Browser.close"), 5)
            await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        if self.http is not None:
            await self.http.close()
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stderr:
                self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _read(self) -> None:
        assert self.ws is not None
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = message.json()
            future = self.waiting.pop(data.get("id", -1), None)
            if future is not None:
                if not future.done():
                    future.set_result(data)
            else:
                self.events.append(data)
                self.changed.set()

    async def send(self, method: str, session: str | None = None, **params: Any) -> Any:
        assert self.ws is not None
        ident = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[ident] = future
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        await self.ws.send_json(message)
        answer = await asyncio.wait_for(future, 30)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    async def wait_event(
        self, method: str, session: str, after: int, timeout: float = 30
    ) -> dict[str, Any]:
        """The first event `method` of `session` received after event number `after`."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[after:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    async def new_page(self, private: bool = False) -> Page:
        """A new tab; `private` gives it a browser context (cookie jar) of its own."""
        params: dict[str, Any] = {"url": "about:blank"}
        if private:
            context = await self.send("Target.createBrowserContext")
            params["browserContextId"] = context["browserContextId"]
        target = await self.send("Target.createTarget", **params)
        attached = await self.send(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )
        page = Page(self, attached["sessionId"])
        await page.call("Page.enable")
        await page.call("Runtime.enable")
        return page


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    async def call(self, method: str, **params: Any) -> Any:
        return await self.browser.send(method, self.session, **params)

    async def goto(self, url: str) -> int:
        """Navigate (following redirects) until the load event; the final HTTP status."""
        mark = len(self.browser.events)
        result = await self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise CDPError(f"navigation to {url} failed: {result['errorText']}")
        await self.browser.wait_event("Page.loadEventFired", self.session, mark)
        return int(await self.eval("performance.getEntriesByType('navigation')[0].responseStatus"))

    async def eval(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def text(self) -> str:
        return str(await self.eval("document.body ? document.body.innerText : ''"))

    async def cookies(self, url: str) -> list[dict[str, Any]]:
        return list((await self.call("Network.getCookies", urls=[url]))["cookies"])

    async def screenshot(self, width: int = 1280, max_height: int = 2400) -> bytes:
        """A PNG of the whole page (up to `max_height` CSS pixels tall)."""
        height = int(await self.eval("document.documentElement.scrollHeight"))
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=min(max(height, 200), max_height),
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = await self.call("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])
