"""Bad input at the HTTP layer: a clear error in the wire's shape, never a 500, nothing lost."""

from __future__ import annotations

import gzip
import json
import socket
import zlib

import httpx
import orjson

from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock

OK = httpx.Response(200, json={"choices": []})


def raw_request(url: str, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes as they are (no client-side validation); the status and body back."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def test_header_values_that_are_not_utf8_get_a_400_in_the_wire_shape() -> None:
    settings = make_settings()
    with (
        upstream_mock(assert_all_called=False) as mock,
        BackgroundServer(create_app(settings)) as proxy,
    ):
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
        body = b'{"model":"gpt-4o","messages":[]}'
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nX-Session-Id: caf\xe9\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n"
        )
        status, answer = raw_request(proxy.url, head, body)
        assert status == 400
        error = orjson.loads(answer)["error"]
        assert "x-session-id" in error["message"] and error["code"] == "invalid_header"
        # UTF-8 is forwarded byte for byte; the proxy stays healthy.
        head = head.replace(b"caf\xe9", "café-ü".encode())
        status, _ = raw_request(proxy.url, head, body)
        assert status == 200
        sent = dict(route.calls.last.request.headers.raw)
        assert sent[b"x-session-id"] == "café-ü".encode()
        assert httpx.get(f"{proxy.url}/healthz").status_code == 200


def test_paths_that_leave_the_base_path_are_refused() -> None:
    settings = make_settings()
    with (
        upstream_mock(assert_all_called=False) as mock,
        BackgroundServer(create_app(settings)) as proxy,
    ):
        escape = mock.get(f"{UPSTREAM.rsplit('/', 1)[0]}/etc/passwd").mock(return_value=OK)
        for path in (
            b"/v1/../../etc/passwd",
            b"/v1/%2e%2e/%2e%2e/etc/passwd",
            b"/v1/..%2F..%2Fetc",
        ):
            status, answer = raw_request(
                proxy.url, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            )
            assert status == 400, path
            assert orjson.loads(answer)["error"]["code"] == "invalid_path"
        status, _ = raw_request(
            proxy.url, b"GET /v1/files/a%00b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        )
        assert status == 400
    assert not escape.called and not mock.unmatched


async def test_gzip_bomb_is_refused_without_expanding_it(chat_body) -> None:
    bomb = gzip.compress(b"[" + b" " * (50 * 1024 * 1024) + b"]")  # 50 MiB of JSON, ~50 KiB
    async with proxy_client(make_settings(max_body_bytes=1024 * 1024)) as client:
        with upstream_mock(assert_all_called=False) as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
            response = await client.post(
                "/v1/chat/completions", content=bomb, headers={"content-encoding": "gzip"}
            )
            assert response.status_code == 413
            assert response.json()["error"]["code"] == "request_too_large"
            small = zlib.compress(orjson.dumps(chat_body()))
            response = await client.post(
                "/v1/chat/completions", content=small, headers={"content-encoding": "deflate"}
            )
    assert response.status_code == 200
    assert route.call_count == 1 and route.calls.last.request.content == small


async def test_anonymous_callers_can_be_refused(chat_body) -> None:
    async with proxy_client(make_settings(require_credential=True)) as client:
        with upstream_mock(assert_all_called=False) as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
            anonymous = await client.post("/v1/chat/completions", json=chat_body())
            messages = await client.post(
                "/v1/messages", json={"model": "claude-sonnet-4-5", "messages": []}
            )
            signed = await client.post(
                "/v1/chat/completions", json=chat_body(), headers={"authorization": "Bearer sk-1"}
            )
            health = await client.get("/healthz")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "missing_credential"
    assert messages.status_code == 401 and messages.json()["type"] == "error"
    assert signed.status_code == 200 and route.call_count == 1
    assert health.status_code == 200  # health checks need no credential


def test_aborted_upload_is_not_an_error(caplog) -> None:
    settings = make_settings()
    with BackgroundServer(create_app(settings)) as proxy:
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 100000\r\n\r\n" + b'{"model": "gpt-4o", "messages": ['
            )
        assert httpx.get(f"{proxy.url}/healthz").status_code == 200
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


async def test_deeply_nested_body_still_gets_its_recovery(chat_body) -> None:
    # 400 levels: orjson reads it but cannot write it back; the block must still go out.
    body = chat_body()
    deep: dict = {}
    node = deep
    for _ in range(400):
        node["x"] = {}
        node = node["x"]
    body["metadata"] = deep
    body["messages"][-1]["content"] = "Error: ENOENT: no such file or directory, open 'Makefile'"
    async with proxy_client() as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
            response = await client.post(
                "/v1/chat/completions",
                content=json.dumps(body).encode(),
                headers={"authorization": "Bearer sk-deep"},
            )
    assert response.status_code == 200
    assert response.headers["x-recovery-proxy-injected"] == "1"
    sent = json.loads(route.calls.last.request.content)
    assert "[Error Recovery Context]" in sent["messages"][-1]["content"]
    assert sent["metadata"] == deep


def test_a_huge_request_does_not_stall_other_requests() -> None:
    """5,000 failing results in one body (1.2 MB): the tracker runs off the event loop, the
    request gets its recovery, and health checks keep answering meanwhile."""
    import threading

    from recovery_proxy.demo.mock_model import create_mock_app

    messages: list[dict[str, object]] = [{"role": "user", "content": "run the workers"}]
    for n in range(5_000):
        call = {
            "id": f"call_{n:05d}",
            "type": "function",
            "function": {"name": "run_worker", "arguments": "{}"},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{n:05d}",
                "content": f"Traceback (most recent call last):\nRuntimeError: worker {n} crashed",
            }
        )
    body = orjson.dumps({"model": "gpt-4.1", "messages": messages})  # a 1M-token window
    mock = create_mock_app()
    with (
        BackgroundServer(mock) as upstream,
        BackgroundServer(create_app(make_settings(upstream=f"{upstream.url}/v1"))) as proxy,
    ):
        answers: list[httpx.Response] = []

        def big() -> None:
            headers = {"content-type": "application/json", "x-session-id": "huge"}
            url = f"{proxy.url}/v1/chat/completions"
            answers.append(httpx.post(url, content=body, headers=headers, timeout=60))

        thread = threading.Thread(target=big)
        thread.start()
        health = 0
        with httpx.Client(timeout=10) as client:
            while thread.is_alive():
                health += client.get(f"{proxy.url}/healthz").status_code == 200
        thread.join()
    assert answers[0].status_code == 200
    assert answers[0].headers["x-recovery-proxy-injected"] == "1"  # the newest failure's block
    last = mock.state.received[-1]["messages"][-1]["content"]
    assert "[Error Recovery Context]" in last and "worker 4999 crashed" in last
    assert health >= 1  # answered while the huge request was in flight


def expect_continue(url: str, path: bytes, body: bytes) -> tuple[bytes, int]:
    """A client that sends `Expect: 100-continue`, waits for the 100, then sends the body:
    (the interim response line, the final status)."""
    host, port = url.removeprefix("http://").split(":")
    head = (
        b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        interim = sock.recv(65536)
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return interim.split(b"\r\n", 1)[0], int(data.split(b" ", 2)[1])


def test_expect_100_continue_is_answered_on_the_client_hop_and_never_forwarded() -> None:
    """The upstream (like most providers' front ends) ignores Expect: the proxy must not wait
    for its 100, on a rewritten route or a passthrough one (it had waited until read_timeout,
    and the passthrough client never got its 100)."""
    body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
    with upstream_mock() as mock, BackgroundServer(create_app(make_settings())) as proxy:
        chat = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
        other = mock.post(f"{UPSTREAM}/embeddings").mock(return_value=OK)
        for path in (b"/v1/chat/completions", b"/v1/embeddings"):
            interim, status = expect_continue(proxy.url, path, body)
            assert interim == b"HTTP/1.1 100 Continue" and status == 200, path
    for route in (chat, other):
        assert route.calls.last.request.content == body
        assert "expect" not in route.calls.last.request.headers


def test_connections_that_never_finish_a_request_head_are_closed() -> None:
    """Slowloris: sockets that send nothing, or part of a request head, are closed once the
    head deadline passes (none had been closed after 45 s); whole requests still pass."""
    partial = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: appl"
    with (
        upstream_mock() as mock,
        BackgroundServer(create_app(make_settings()), head_timeout=0.5) as proxy,
    ):
        mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
        host, port = proxy.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(100)]
        for sock in idle[:50]:
            sock.sendall(partial)
        body = b'{"model":"gpt-4o","messages":[]}'
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: 32\r\n"
        )
        assert raw_request(proxy.url, head, body)[0] == 200
        closed = 0
        for sock in idle:
            with sock:
                sock.settimeout(3)
                try:
                    if sock.recv(1024) != b"":  # b"": the server closed it
                        break
                except TimeoutError:
                    break
                closed += 1
        for sock in idle:
            sock.close()
        assert closed == 100


async def test_integers_beyond_64_bits_survive_a_rewrite_exactly() -> None:
    """Untouched fields keep their numbers: an integer over 64 bits was forwarded as
    1.2345678901234568e+28 once the request was rewritten."""
    raw = (
        b'{"model":"gpt-4o-mini","seed":12345678901234567890123456789,'
        b'"metadata":{"trace":[98765432109876543210987654321,-1,1.5e300]},"messages":['
        b'{"role":"user","content":"Open the config."},'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"call_Bq7Xw2","type":"function",'
        b'"function":{"name":"read_file","arguments":"{\\"path\\": \\"src/config.ts\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"call_Bq7Xw2","content":"Error: ENOENT: no such file"}]}'
    )
    async with proxy_client() as client:
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/chat/completions").mock(return_value=OK)
            response = await client.post("/v1/chat/completions", content=raw)
    assert response.headers["x-recovery-proxy-injected"] == "1"
    sent = route.calls.last.request.content
    assert b'"seed":12345678901234567890123456789,' in sent
    assert b'"trace":[98765432109876543210987654321,-1,1.5e+300]' in sent
    assert json.loads(sent)["messages"][-1]["content"].startswith("Error: ENOENT: no such file\n\n")
