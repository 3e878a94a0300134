"""Added latency per wire format: Chat Completions, Responses, Anthropic Messages.

    python -m bench.formats [--requests 500] [--messages 100]

The same agent transcript (every 10th tool result failing) in each format's own shape,
through one `recovery-proxy serve` (sqlite store, the default kind) in front of the mock
upstream. Each session is built turn by turn first, so the timed requests re-apply every
block (steady state). Requests alternate direct / proxy so both see the same machine state.
"""

from __future__ import annotations

import argparse
import http.client
import tempfile
import time
from typing import Any
from urllib.parse import urlsplit

import orjson

from bench.common import conversation, mock_upstream, percentiles, proxy_process

HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}


def as_responses(messages: list[dict[str, Any]]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for m in messages[1:]:
        if m["role"] == "user":
            items.append({"type": "message", "role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            for c in m["tool_calls"]:
                fn = c["function"]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": fn["name"],
                        "arguments": fn["arguments"],
                    }
                )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": m["content"],
                }
            )
    return {"model": "gpt-4.1", "instructions": messages[0]["content"], "input": items}


def as_messages(messages: list[dict[str, Any]]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for m in messages[1:]:
        if m["role"] == "user":
            out.append({"role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            uses = [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": orjson.loads(c["function"]["arguments"]),
                }
                for c in m["tool_calls"]
            ]
            out.append({"role": "assistant", "content": uses})
        else:
            result = {"type": "tool_result", "tool_use_id": m["tool_call_id"]}
            out.append({"role": "user", "content": [{**result, "content": m["content"]}]})
    system = [
        {"type": "text", "text": messages[0]["content"], "cache_control": {"type": "ephemeral"}}
    ]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": out}


def as_chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "gpt-4.1", "messages": messages}


FORMATS = {
    "chat": ("/v1/chat/completions", "/v1/chat/completions", as_chat),
    "responses": ("/v1/responses", "/v1/responses", as_responses),
    "messages": ("/v1/messages", "/v1/messages", as_messages),
}


def post(conn: http.client.HTTPConnection, path: str, body: bytes, session: str) -> float:
    start = time.perf_counter()
    conn.request("POST", path, body=body, headers={**HEADERS, "x-session-id": session})
    response = conn.getresponse()
    response.read()
    assert response.status == 200, response.status
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--messages", type=int, default=100)
    args = parser.parse_args()
    messages = conversation(args.messages, failures_every=10)
    with tempfile.TemporaryDirectory() as tmp, mock_upstream() as upstream:
        root = upstream.removesuffix("/v1")
        env = {"RECOVERY_PROXY_ANTHROPIC_UPSTREAM": root}
        with proxy_process(upstream, f"sqlite:{tmp}/sessions.db", env) as proxy:
            up, via = urlsplit(upstream), urlsplit(proxy)
            direct = http.client.HTTPConnection(up.hostname, up.port)
            through = http.client.HTTPConnection(via.hostname, via.port)
            print(f"{args.requests} requests per format, {args.messages} messages, sqlite store")
            print(
                f"{'format':10} {'KiB':>5} {'direct p50':>11} {'added p50':>10} {'added p99':>10}"
            )
            for name, (route, direct_path, build) in FORMATS.items():
                session = f"formats-{name}"
                for end in range(4, len(messages), 2):  # built turn by turn, as an agent does
                    post(through, route, orjson.dumps(build(messages[:end])), session)
                body = orjson.dumps(build(messages))
                times: dict[str, list[float]] = {"direct": [], "proxy": []}
                for _ in range(args.requests):
                    times["direct"].append(post(direct, direct_path, body, session))
                    times["proxy"].append(post(through, route, body, session))
                d, p = percentiles(times["direct"]), percentiles(times["proxy"])
                print(
                    f"{name:10} {len(body) / 1024:5.0f} {d['p50']:11.2f} "
                    f"{p['p50'] - d['p50']:10.2f} {p['p99'] - d['p99']:10.2f}"
                )


if __name__ == "__main__":
    main()
