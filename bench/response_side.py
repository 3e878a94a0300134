"""What reading the response side costs a stream: time to first byte and per-chunk delay,
side by side with it on and off (`RECOVERY_PROXY_READ_RESPONSES`).

    python -m bench.response_side [--requests 200] [--chunks 40] [--gap-ms 2]

One mock model streams CHUNKS chunks GAP_MS apart, each stamped with the time it was written
(bench/stream_upstream.py). Two `recovery-proxy serve` processes (memory store) stand in front
of it, one reading responses and one not; requests alternate direct / on / off, the order
rotating, so all three see the same machine state. Each request is a 20-message Chat
Completions transcript whose last tool result failed (a session, a block, a stored reply on
every request). Per request: time to first byte (request sent to first body byte), and for
every chunk the delay from the mock writing it to the client reading it; the table gives p50
/ p99 of each, and what each proxy adds over the direct call.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import aiohttp
import orjson

from bench.common import conversation, percentiles, process, proxy_process
from recovery_proxy.server.background import free_port


@contextmanager
def stream_upstream(chunks: int, gap_ms: float) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, "-m", "bench.stream_upstream", str(port), str(chunks), str(gap_ms)]
    with process(args, f"http://127.0.0.1:{port}/healthz"):
        yield f"http://127.0.0.1:{port}/v1"


async def one(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> tuple[float, list[float]]:
    """(time to first byte, per-chunk delays) of one streamed request, in seconds."""
    started = time.perf_counter()
    first: float | None = None
    delays: list[float] = []
    async with session.post(url, data=body, headers=headers) as response:
        assert response.status == 200, response.status
        async for data in response.content.iter_any():
            now_ns = time.time_ns()
            if first is None:
                first = time.perf_counter() - started
            for line in data.split(b"\n"):
                if line.startswith(b'data: {"id"') and b'"t":' in line:
                    stamp = orjson.loads(line[6:]).get("t")
                    if isinstance(stamp, int):
                        delays.append((now_ns - stamp) / 1e9)
    assert first is not None
    return first, delays


Results = dict[str, tuple[list[float], list[float]]]  # name -> (TTFBs, per-chunk delays)


async def measure(urls: dict[str, str], requests: int) -> Results:
    messages = conversation(20, failures_every=10)
    messages[-1]["content"] = "Error: ENOENT: no such file or directory, open 'src/missing.ts'"
    body = orjson.dumps({"model": "gpt-4o-mini", "messages": messages, "stream": True})
    out: Results = {name: ([], []) for name in urls}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        for i in range(requests + 20):
            names = list(urls)
            names = names[i % 3 :] + names[: i % 3]  # each in each position: no order bias
            for name in names:
                url = urls[name]
                headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
                headers["x-session-id"] = f"bench-{name}-{i % 10}"
                ttfb, delays = await one(session, url, body, headers)
                if i >= 20:  # warm-up
                    out[name][0].append(ttfb)
                    out[name][1].extend(delays)
    return out


def table(results: Results) -> str:
    direct_ttfb = percentiles(results["direct"][0])
    direct_chunk = percentiles(results["direct"][1])
    lines = [
        "| ms | TTFB p50 | TTFB p99 | per-chunk delay p50 | per-chunk delay p99 |"
        " added TTFB p50 | added per-chunk p50 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (ttfbs, delays) in results.items():
        t, c = percentiles(ttfbs), percentiles(delays)
        added = (
            f"{t['p50'] - direct_ttfb['p50']:.3f} | {c['p50'] - direct_chunk['p50']:.3f}"
            if name != "direct"
            else "- | -"
        )
        cells = [t["p50"], t["p99"], c["p50"], c["p99"]]
        lines.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in cells) + f" | {added} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--gap-ms", type=float, default=2.0)
    args = parser.parse_args()
    with ExitStack() as stack:
        upstream = stack.enter_context(stream_upstream(args.chunks, args.gap_ms))
        on = stack.enter_context(proxy_process(upstream))
        off = stack.enter_context(
            proxy_process(upstream, extra_env={"RECOVERY_PROXY_READ_RESPONSES": "false"})
        )
        urls = {
            "direct": f"{upstream}/chat/completions",
            "proxy, responses read": f"{on}/chat/completions",
            "proxy, responses not read": f"{off}/chat/completions",
        }
        results = asyncio.run(measure(urls, args.requests))
    print(
        f"{args.requests} streamed requests per row, {args.chunks} chunks {args.gap_ms:g} ms "
        f"apart ({len(results['direct'][1])} chunks per row)\n"
    )
    print(table(results))


if __name__ == "__main__":
    main()
