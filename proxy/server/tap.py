"""The response side, off the critical path: a tap on the relay that keeps a reference to
each chunk after it went out (no copy, nothing waits on it) and, once the last byte is
relayed, reads the response (calls, usage, stop reason) on a later turn of the event loop.

Nothing here can change, hold back or delay a byte: `feed` only appends a reference (and
stops keeping them past `LIMIT`), and every failure of reading is counted and dropped."""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable

from recovery_proxy.core.reply import Reply
from recovery_proxy.metrics import Metrics

log = logging.getLogger("recovery_proxy")

LIMIT = 8 * 1024 * 1024  # bytes of one response kept for reading; past it, not read
ENCODINGS = {"": 0, "identity": 0, "gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

Reader = Callable[[bytes, bool], Reply | None]


class ResponseTap:
    """One response's tap: `start` with its head, `feed` each relayed chunk, `finish` when
    the body is complete; `deliver` gets the Reply."""

    __slots__ = ("chunks", "deliver", "encoding", "metrics", "on", "read", "size", "sse")

    def __init__(self, read: Reader, deliver: Callable[[Reply], None], metrics: Metrics) -> None:
        self.read = read
        self.deliver = deliver
        self.metrics = metrics
        self.chunks: list[bytes] = []
        self.size = 0
        self.on = False
        self.sse = False
        self.encoding = ""

    def start(self, status: int, content_type: str, encoding: str) -> None:
        """Read only successful answers in an encoding the standard library undoes."""
        encoding = encoding.strip().lower()
        self.on = status == 200 and encoding in ENCODINGS
        self.sse = content_type == "text/event-stream"
        self.encoding = encoding

    def feed(self, chunk: bytes) -> None:
        """Keep a reference to a chunk that has already gone to the client."""
        if self.on:
            self.size += len(chunk)
            if self.size > LIMIT:
                self.on = False
                self.chunks.clear()
            else:
                self.chunks.append(chunk)

    def finish(self) -> None:
        """The body went out whole: read it on a later turn of the event loop."""
        if self.on:
            asyncio.get_running_loop().call_soon(self._read)

    def _read(self) -> None:
        body = b"".join(self.chunks)
        self.chunks = []
        try:
            wbits = ENCODINGS[self.encoding]
            if wbits:
                inflater = zlib.decompressobj(wbits)
                body = inflater.decompress(body, LIMIT)
            reply = self.read(body, self.sse)
            if reply is not None:
                self.deliver(reply)
        except Exception as exc:  # the response side never affects anything
            self.metrics.reply_failures.inc()
            log.debug("response not read: %s: %s", type(exc).__name__, exc)
