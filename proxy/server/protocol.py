"""uvicorn's HTTP protocol with a deadline on request heads (slowloris).

uvicorn closes a connection that idles between requests (`timeout_keep_alive`), but not one
that connects and sends nothing, or sends part of a request head and stops: each such socket
held a file descriptor for as long as its client liked (200 of them, none closed after 45 s).
Here every request head must be complete within `head_timeout` seconds of the connection
opening or of its first byte; otherwise the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeadTimeoutProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` that closes connections whose request head does not arrive in time."""

    head_timeout: float = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._expire)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def with_head_timeout(seconds: float) -> type[Any]:
    """The protocol class for uvicorn's `http=` option, with this deadline."""
    return type("HeadTimeoutProtocol", (HeadTimeoutProtocol,), {"head_timeout": seconds})
