"""Session stores compared: latency each adds per request, and the memory store's footprint.

    python -m bench.stores [--requests 600] [--sessions 12] [--memory-sessions 10000]

Latency: one proxy process per store (memory, sqlite file, redis-server) in front of the mock
model. Agent sessions grow by one tool call and result per request, every third result a
failure, so every request writes the session. Requests rotate direct / memory / sqlite /
redis so all see the same machine state. Reported per store: the proxy's own overhead (the
`x-recovery-proxy-overhead-ms` header: request in to forward out, store update included) and
the end-to-end latency against calling the mock directly.

Memory: RSS growth of an in-process MemoryStore holding 10,000 sessions of 10 failure records
each (states made by the real tracker, so blocks, seen ids and threads are all there).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson

from bench.common import conversation, mock_upstream, percentiles, proxy_process
from recovery_proxy.server.background import free_port

STORES = ("memory", "sqlite", "redis")


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on a loopback port, no persistence; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server not found: install it (apt-get install -y redis-server)")
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def session_requests(requests: int, sessions: int) -> list[tuple[str, bytes]]:
    """(session id, body) in sending order: sessions one after another, each growing by one
    tool call + result per request."""
    per_session = max(1, requests // sessions)
    plan: list[tuple[str, bytes]] = []
    for s in range(sessions):
        for i in range(per_session):
            messages = conversation(2 + 2 * (i + 1), failures_every=3)
            plan.append(
                (f"bench-{s}", orjson.dumps({"model": "gpt-4o-mini", "messages": messages}))
            )
    return plan


def latency(requests: int, sessions: int) -> None:
    plan = session_requests(requests, sessions)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-stores-")))
        upstream = stack.enter_context(mock_upstream())
        specs = {
            "memory": "memory",
            "sqlite": f"sqlite:{tmp / 'sessions.db'}",
            "redis": stack.enter_context(redis_server()),
        }
        bases = {"direct": upstream}
        for name, spec in specs.items():
            bases[name] = stack.enter_context(proxy_process(upstream, spec))
        names = list(bases)
        total: dict[str, list[float]] = {name: [] for name in names}
        overhead: dict[str, list[float]] = {name: [] for name in STORES}
        injected = 0
        with httpx.Client(timeout=30) as client:

            def send(name: str, session: str, body: bytes) -> httpx.Response:
                headers = {
                    "content-type": "application/json",
                    "authorization": "Bearer sk-bench",
                    "x-session-id": session,
                }
                return client.post(f"{bases[name]}/chat/completions", content=body, headers=headers)

            for session, body in session_requests(40, 2):  # warm up every path
                for name in names:
                    send(name, f"warm-{session}", body)
            for n, (session, body) in enumerate(plan):
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    start = time.perf_counter()
                    response = send(name, session, body)
                    total[name].append(time.perf_counter() - start)
                    assert response.status_code == 200, response.text
                    if name in overhead:
                        overhead[name].append(
                            float(response.headers["x-recovery-proxy-overhead-ms"]) / 1000
                        )
                        injected += int(response.headers.get("x-recovery-proxy-injected", "0"))
    sizes = [len(body) for _, body in plan]
    print(
        f"{len(plan)} requests per path in {sessions} sessions of {len(plan) // sessions} turns, "
        f"bodies {min(sizes) // 1024}-{max(sizes) // 1024} KiB, every 3rd tool result a failure, "
        f"{injected // len(STORES)} block splices per store (re-applied ones included)"
    )
    direct = percentiles(total["direct"])
    base = percentiles(overhead["memory"])
    print(
        f"{'':8} {'overhead p50':>12} {'p99':>8} {'x memory':>9}   "
        f"{'end-to-end p50':>14} {'p99':>8} {'added p50':>9} {'p99':>8}"
    )
    for name in ("direct", *STORES):
        e2e = percentiles(total[name])
        line = f"{name:8} "
        if name in overhead:
            o = percentiles(overhead[name])
            line += f"{o['p50']:12.3f} {o['p99']:8.3f} {o['p50'] / base['p50']:8.2f}x   "
        else:
            line += f"{'':12} {'':8} {'':9}   "
        line += f"{e2e['p50']:14.3f} {e2e['p99']:8.3f}"
        if name != "direct":
            line += f" {e2e['p50'] - direct['p50']:9.3f} {e2e['p99'] - direct['p99']:8.3f}"
        print(line)
    print("(milliseconds; overhead = the proxy's own time before forwarding, store included)")


def rss_mb() -> float:
    """Resident set size of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # peak, not current


async def template_state(records: int) -> bytes:
    """The JSON state the real pipeline keeps for a session with `records` failures (and
    twice as many successful tool results)."""
    from recovery_proxy.config import Settings
    from recovery_proxy.metrics import Metrics
    from recovery_proxy.pipeline import open_pipeline
    from recovery_proxy.rewrite import ChatRequest

    settings = Settings(upstream="http://127.0.0.1:9/v1", hot_reload=False, store="memory")
    async with AsyncExitStack() as stack:
        rewriter = await open_pipeline(settings, Metrics(), stack)
        headers = {"authorization": "Bearer sk-bench", "x-session-id": "template"}
        for i in range(1, 3 * records + 1):  # one request per turn, as an agent sends them
            body = orjson.dumps({"model": "gpt-4o-mini", "messages": conversation(2 + 2 * i, 3)})
            await rewriter(ChatRequest(body, orjson.loads(body), headers))
        (key,) = rewriter.store.sessions  # type: ignore[attr-defined]
        state = await rewriter.store.get(key)  # type: ignore[attr-defined]
        assert state is not None and len(state.records) == records
        return state.model_dump_json().encode()


async def memory_footprint(sessions: int, records: int) -> None:
    from recovery_proxy.core.state import SessionState
    from recovery_proxy.store import MemoryStore

    template = await template_state(records)
    gc.collect()
    before = rss_mb()
    store = MemoryStore(max_sessions=sessions, ttl_seconds=24 * 3600)
    started = time.perf_counter()
    for n in range(sessions):
        # Distinct call ids per session; parsing makes every string a fresh object anyway.
        clone = SessionState.model_validate_json(template.replace(b'"call_0', b'"s%05d_call_0' % n))

        def adopt(state: SessionState, clone: SessionState = clone) -> None:
            for field in SessionState.model_fields:
                setattr(state, field, getattr(clone, field))

        await store.update(f"5f1c0e2a9b7d3c41:h:session-{n:05d}", adopt)
    elapsed = time.perf_counter() - started
    del clone
    gc.collect()
    after = rss_mb()
    sample = await store.get(next(iter(store.sessions)))
    assert sample is not None
    print(
        f"MemoryStore: {len(store.sessions)} sessions x {len(sample.records)} records "
        f"({len(sample.annotations)} blocks, {len(sample.seen)} seen ids, {len(template)} bytes "
        f"of JSON each), filled in {elapsed:.1f} s"
    )
    growth = after - before
    print(
        f"RSS {before:.0f} MB -> {after:.0f} MB: +{growth:.0f} MB "
        f"({growth * 1024 / sessions:.1f} KiB per session; target < 150 MB: "
        f"{'ok' if growth < 150 else 'OVER'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=600, help="per store")
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--memory-sessions", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=10)
    args = parser.parse_args()
    latency(args.requests, args.sessions)
    print()
    asyncio.run(memory_footprint(args.memory_sessions, args.records))


if __name__ == "__main__":
    main()
