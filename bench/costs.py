"""What hostile or huge requests cost the rewrite (issue 15), in-process, memory store.

    python -m bench.costs

Each case is a fresh session sent once (first sight: everything is new) through the real
rewriter (parse, session, tracker, splice, serialise), JSON parse included, median of a few
runs. The ratios say whether the work grows with the input (linear) or faster.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import orjson

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import open_pipeline
from recovery_proxy.rewrite import ChatRequest
from recovery_proxy.wire import DEFAULT

HEADERS = {"authorization": "Bearer sk-bench"}


def tool_turn(i: int, content: str, tool: str = "bash", args: str = "{}") -> list[dict[str, Any]]:
    call = {"id": f"call_{i}", "type": "function", "function": {"name": tool, "arguments": args}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{i}", "content": content},
    ]


def one_result(size: int) -> list[dict[str, Any]]:
    """A single failing tool result of about `size` bytes (build log, error at the end)."""
    log = "compiling module ok\n" * (size // 20)
    return tool_turn(
        0, log + "error[E0308]: mismatched types\n", "bash", '{"command": "cargo build"}'
    )


def failures(n: int) -> list[dict[str, Any]]:
    """`n` failing results with no target (the same command-less tool each time)."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += tool_turn(i, "Traceback (most recent call last):\nRuntimeError: worker crashed")
    return out


def smol_message(size: int) -> list[dict[str, Any]]:
    """One smolagents-style user message of about `size` bytes full of `Error:` segments."""
    segment = (
        "Call id: call_{i}\nError:\nCode execution failed: NameError: name 'x' is not defined\n"
    )
    count = size // len(segment)
    text = "".join(segment.format(i=i) for i in range(count))
    return [{"role": "user", "content": text}]


def smol_observation(size: int) -> list[dict[str, Any]]:
    """A benign smolagents observation of about `size` bytes."""
    return [{"role": "user", "content": "Observation:\n" + "stdout line ok\n" * (size // 15)}]


def smol_crafted(size: int) -> list[dict[str, Any]]:
    """The same size of `\nError:\n` segments and no observation at all: each segment once
    searched the rest of the text for one (issue 24: 18x the benign case)."""
    segment = "\nError:\nboom " + "y" * 20
    return [{"role": "user", "content": segment * (size // len(segment))}]


async def measure(build: Callable[[], list[dict[str, Any]]], runs: int) -> tuple[float, int]:
    settings = Settings(upstream="http://127.0.0.1:9/v1", hot_reload=False)
    base = [{"role": "system", "content": "You are a coding agent."}]
    body = orjson.dumps({"model": "gpt-4.1", "messages": base + build()})
    times = []
    async with AsyncExitStack() as stack:
        rewriter = await open_pipeline(settings, Metrics(), stack)
        for run in range(runs):
            headers = {**HEADERS, "x-session-id": f"cost-{time.monotonic_ns()}-{run}"}
            start = time.perf_counter()
            await rewriter(ChatRequest(body, orjson.loads(body), headers, DEFAULT))
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, len(body)


async def main() -> None:
    cases: list[tuple[str, Callable[[], list[dict[str, Any]]]]] = [
        ("10 KB failing tool result", lambda: one_result(10_000)),
        ("10 MB failing tool result", lambda: one_result(10_000_000)),
        ("50 failing results", lambda: failures(50)),
        ("5,000 failing results", lambda: failures(5_000)),
        ("10 KB smolagents message", lambda: smol_message(10_000)),
        ("10 MB smolagents message", lambda: smol_message(10_000_000)),
        ("10 MB smolagents observation", lambda: smol_observation(10_000_000)),
        ("10 MB crafted: segments, no obs.", lambda: smol_crafted(10_000_000)),
    ]
    print(f"{'case':32} {'body':>10} {'ms':>9}   ratio (time / size ratio)")
    for (small_name, small), (big_name, big) in zip(cases[::2], cases[1::2], strict=True):
        t_small, b_small = await measure(small, 5)
        t_big, b_big = await measure(big, 3)
        growth = (t_big / t_small) / (b_big / b_small)
        print(f"{small_name:32} {b_small:10,} {t_small:9.2f}")
        print(f"{big_name:32} {b_big:10,} {t_big:9.2f}   {t_big / t_small:,.0f}x ({growth:.2f})")


if __name__ == "__main__":
    asyncio.run(main())
