"""Proxy overhead vs calling the mock upstream directly, in one run.

    python -m bench.latency [--requests 1000] [--messages 50]

Requests alternate direct / via proxy so both see the same machine state.
"""

from __future__ import annotations

import argparse
import time

import httpx
import orjson

from bench.common import conversation, mock_upstream, percentiles, proxy_process


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--store", default="memory")
    args = parser.parse_args()
    body = orjson.dumps({"model": "gpt-4o-mini", "messages": conversation(args.messages)})
    headers = {
        "content-type": "application/json",
        "authorization": "Bearer sk-bench",
        "x-session-id": "bench",
    }
    with mock_upstream() as upstream, proxy_process(upstream, args.store) as proxy:
        timings: dict[str, list[float]] = {"direct": [], "proxy": []}
        with httpx.Client(headers=headers, timeout=30) as client:
            for base in (upstream, proxy) * 20:  # warm up both paths
                client.post(f"{base}/chat/completions", content=body)
            for _ in range(args.requests):
                for name, base in (("direct", upstream), ("proxy", proxy)):
                    start = time.perf_counter()
                    response = client.post(f"{base}/chat/completions", content=body)
                    timings[name].append(time.perf_counter() - start)
                    assert response.status_code == 200, response.text
    direct, via = percentiles(timings["direct"]), percentiles(timings["proxy"])
    print(
        f"{args.requests} sequential requests, {args.messages} messages, "
        f"{len(body)} bytes each, store={args.store}"
    )
    print(f"{'':8} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name, stats in (("direct", direct), ("proxy", via)):
        print(f"{name:8} {stats['p50']:8.3f} {stats['p99']:8.3f} {stats['mean']:8.3f}")
    print(
        f"added    {via['p50'] - direct['p50']:8.3f} {via['p99'] - direct['p99']:8.3f} "
        f"{via['mean'] - direct['mean']:8.3f}"
    )
    print(f"ratio    {via['p50'] / direct['p50']:8.2f}x {via['p99'] / direct['p99']:7.2f}x")


if __name__ == "__main__":
    main()
