"""Run an ASGI app on a loopback port in a background thread (demo, tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from recovery_proxy.server.protocol import HeadTimeoutProtocol, with_head_timeout

# How uvicorn serves the proxy: no `server`/`date` headers of its own (the upstream's are
# relayed; adding uvicorn's made every answer carry two of each), no X-Forwarded-* rewriting
# of the client address (nothing uses it), no access log (a line per request cost more than
# the rewrite), and a deadline on request heads (`server.protocol`).
SERVER_OPTIONS: dict[str, Any] = {
    "http": HeadTimeoutProtocol,  # request heads have a deadline (slowloris)
    "server_header": False,
    "date_header": False,
    "proxy_headers": False,
    "access_log": False,
}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class BackgroundServer:
    """`with BackgroundServer(app) as server: server.url` serves `app` until the block ends."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, head_timeout: float | None = None
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        options = dict(SERVER_OPTIONS)
        if head_timeout is not None:
            options["http"] = with_head_timeout(head_timeout)
        config = uvicorn.Config(
            app, host=host, port=self.port, log_level="warning", lifespan="on", **options
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
