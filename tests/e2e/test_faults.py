"""A misbehaving upstream (raw sockets, no HTTP library to smooth things over): each fault has
a defined answer, and the proxy serves normally afterwards."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import orjson

from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings

EVENT = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
ANSWER = b'{"id":"chatcmpl-1","object":"chat.completion","choices":[]}'
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
Behaviour = Callable[[socket.socket], None]


def read_request(sock: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(rest) < length:
        rest += sock.recv(65536)


def reset_mid_stream(sock: socket.socket) -> None:
    read_request(sock)
    sock.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    sock.sendall(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
    time.sleep(0.1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()  # RST


def garbage(sock: socket.socket) -> None:
    read_request(sock)
    sock.sendall(b"\x00\xff this is not HTTP at all \x13\x37\r\n\r\n")
    sock.close()


def slow_drip(sock: socket.socket) -> None:
    read_request(sock)
    sock.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        % len(ANSWER)
    )
    for i in range(0, len(ANSWER), 4):
        sock.sendall(ANSWER[i : i + 4])
        time.sleep(0.02)


def healthy(sock: socket.socket) -> None:
    read_request(sock)
    sock.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
        % (len(ANSWER), ANSWER)
    )


@contextmanager
def faulty_upstream(behaviours: list[Behaviour]) -> Iterator[str]:
    """One behaviour per accepted connection, in order; then healthy answers."""
    queue = list(behaviours)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            (queue.pop(0) if queue else healthy)(self.request)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def through_proxy(upstream: str) -> BackgroundServer:
    settings = make_settings(upstream=upstream, stream_chunk_timeout=1.0, read_timeout=2.0)
    return BackgroundServer(create_app(settings))


def test_reset_mid_stream_ends_with_an_sse_error_event() -> None:
    with faulty_upstream([reset_mid_stream]) as upstream, through_proxy(upstream) as proxy:
        response = httpx.post(
            f"{proxy.url}/v1/chat/completions", json={**BODY, "stream": True}, timeout=10
        )
        assert response.status_code == 200
        assert response.content.startswith(EVENT)
        error = orjson.loads(response.content.removeprefix(EVENT).strip().removeprefix(b"data: "))
        assert error["error"]["code"] == "stream_broken"
        after = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
        assert after.status_code == 200 and after.content == ANSWER


def test_garbage_instead_of_http_is_a_502() -> None:
    with faulty_upstream([garbage]) as upstream, through_proxy(upstream) as proxy:
        response = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
        assert response.status_code == 502
        assert response.json()["error"]["code"] == "upstream_unreachable"
        after = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
        assert after.status_code == 200 and after.content == ANSWER


def test_slow_drip_arrives_whole() -> None:
    with faulty_upstream([slow_drip]) as upstream, through_proxy(upstream) as proxy:
        response = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
    assert response.status_code == 200 and response.content == ANSWER
