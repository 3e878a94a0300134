"""The floor of this stack: a bare relay on the proxy's own HTTP parts, `python -m
bench.floor_relay PORT UPSTREAM`.

Raw ASGI on uvicorn (uvloop + httptools) reading the whole body, one pooled aiohttp session
sending it on unchanged and the answer streamed back: what any Python proxy built from these
parts costs before it does anything. bench.compare measures it next to recovery-proxy, so the
difference between the two is what the recovery work itself adds.
"""

from __future__ import annotations

import sys
from typing import Any

import aiohttp
from yarl import URL

from bench.mock_upstream import run_fast

HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding"})
session: aiohttp.ClientSession | None = None
UPSTREAM = ""  # set from the command line


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global session
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                connector = aiohttp.TCPConnector(limit=100, limit_per_host=0)
                session = aiohttp.ClientSession(
                    connector=connector,
                    auto_decompress=False,
                    skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
                    cookie_jar=aiohttp.DummyCookieJar(),
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                assert session is not None
                await session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    assert session is not None
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    headers = {k.decode(): v.decode() for k, v in scope["headers"] if k.decode() not in HOP}
    url = URL(UPSTREAM + scope["path"], encoded=True)
    async with session.request(scope["method"], url, headers=headers, data=b"".join(chunks)) as r:
        out = [(k, v) for k, v in r.raw_headers if k.lower() not in (b"connection", b"keep-alive")]
        await send({"type": "http.response.start", "status": r.status, "headers": out})
        while chunk := await r.content.readany():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    UPSTREAM = sys.argv[2].rstrip("/")
    run_fast(app, int(sys.argv[1]))
