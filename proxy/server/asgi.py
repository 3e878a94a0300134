"""Raw ASGI helpers for the hot path: read a bounded body, answer an error, watch for hang-ups.

The proxied routes are plain ASGI handlers, not FastAPI endpoints: request objects,
dependency injection and response classes cost more than the whole rewrite (issue 9).
"""

from __future__ import annotations

import asyncio
import secrets
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from recovery_proxy.session.keys import CREDENTIAL_HEADERS

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_HEADERS = [(b"content-type", b"application/json")]


class Refusal(Exception):
    """A request the proxy answers itself, in the wire format's error shape (the app answers
    every refusal in one place, so the request path reads as the happy path)."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers or []


class BodyTooLarge(Exception):
    """The request body (or what it decompresses to) is over the limit."""


class ClientGone(Exception):
    """The client disconnected before the request was complete."""


async def read_body(receive: Receive, limit: int, declared: int | None) -> bytes:
    """The whole request body, refused as soon as it passes `limit` bytes."""
    if declared is not None and declared > limit:
        raise BodyTooLarge
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if not message.get("more_body"):
        if len(body) > limit:
            raise BodyTooLarge
        return body
    parts, size = [body], len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


async def stream_body(receive: Receive, done: asyncio.Event) -> Any:
    """The request body as an async iterator (passthrough uploads); sets `done` at its end."""
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            if chunk:
                yield chunk
            if not message.get("more_body"):
                return
    finally:
        done.set()


def decode_body(body: bytes, encoding: str | None, limit: int) -> bytes | None:
    """The JSON bytes of a possibly compressed body, decompressed at most to `limit` bytes
    (a gzip bomb is refused, never expanded); None for an encoding we cannot read."""
    if not encoding or encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate", "x-gzip"):
        return None
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error:
        return None
    if len(plain) > limit or inflater.unconsumed_tail:
        raise BodyTooLarge
    return plain


async def send_error(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer with a JSON error body the proxy made itself, with a `request-id` of its own
    (as providers send one: Claude Code de-duplicates usage by it)."""
    out = [*JSON_HEADERS, (b"content-length", str(len(body)).encode()), request_id()]
    await send({"type": "http.response.start", "status": status, "headers": out + (headers or [])})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def request_id() -> tuple[bytes, bytes]:
    """A fresh `request-id` header for an answer the proxy made (`req_proxy_` + 24 hex)."""
    return (b"request-id", b"req_proxy_" + secrets.token_hex(12).encode())


async def until_disconnect(
    receive: Receive, task: asyncio.Task[Any], body_read: asyncio.Event | None, flag: list[bool]
) -> None:
    """Cancel `task` when the client hangs up (after its body was read); `flag[0]` says so."""
    if body_read is not None:
        await body_read.wait()
    while (await receive())["type"] != "http.disconnect":
        pass
    flag[0] = True
    task.cancel()


def length_and_encoding(headers: list[tuple[bytes, bytes]]) -> tuple[int | None, str | None]:
    """The declared `content-length` and `content-encoding` of a request's raw headers."""
    declared: int | None = None
    encoding: str | None = None
    for name, value in headers:
        if name == b"content-length" and value.isdigit():
            declared = int(value)
        elif name == b"content-encoding":
            encoding = value.decode("latin-1").strip().lower() or None
    return declared, encoding


CREDENTIALS = frozenset(name.encode() for name in CREDENTIAL_HEADERS)


def has_credential(scope: Scope) -> bool:
    """Whether the caller sent a non-empty credential header (or Gemini's `key=` parameter)."""
    if any(k in CREDENTIALS and v.strip() for k, v in scope["headers"]):
        return True
    query: bytes = scope.get("query_string", b"")
    return query.startswith(b"key=") or b"&key=" in query


def escapes(path: str) -> bool:
    """True for a (decoded) path with `.`/`..` segments or a NUL: it could leave the base."""
    if "\x00" in path:
        return True
    if "." not in path:
        return False
    return any(part in (".", "..") for part in path.replace("\\", "/").split("/"))
