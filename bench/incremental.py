"""Added time of the recovery pipeline on a long conversation with one new turn.

    python -m bench.incremental [--messages 2000] [--rounds 300]

Each round sends the same 2,000-message conversation plus one new tool call and result
(every third new result a failure) through the real rewriter (parse, session, tracker,
splice) with the memory store. Reported: p50/p99 of the whole rewrite step, JSON parse
included, against the bare JSON parse the proxy would do anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from contextlib import AsyncExitStack

import orjson

from bench.common import conversation, percentiles
from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import open_pipeline
from recovery_proxy.rewrite import ChatRequest


async def run(messages: int, rounds: int) -> None:
    settings = Settings(upstream="http://127.0.0.1:9/v1", hot_reload=False)
    async with AsyncExitStack() as stack:
        rewriter = await open_pipeline(settings, Metrics(), stack)
        history = conversation(messages, failures_every=9)
        headers = {"authorization": "Bearer sk-bench", "x-session-id": "bench-incremental"}
        body = orjson.dumps({"model": "gpt-4.1", "messages": history})
        await rewriter(
            ChatRequest(body, orjson.loads(body), headers)
        )  # the session has seen it all
        parse_only: list[float] = []
        rewrite: list[float] = []
        injected = 0
        for i in range(rounds):
            call_id = f"call_new_{i:05d}"
            failing = i % 3 == 0
            turn = [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": "bash",
                                "arguments": f'{{"command": "make target{i}"}}',
                            },
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": f"make: *** [Makefile:{i}: target{i}] Error 2"
                    if failing
                    else "built ok",
                },
            ]
            history.extend(turn)
            body = orjson.dumps({"model": "gpt-4.1", "messages": history})
            start = time.perf_counter()
            orjson.loads(body)
            parse_only.append(time.perf_counter() - start)
            start = time.perf_counter()
            result = await rewriter(ChatRequest(body, orjson.loads(body), headers))
            rewrite.append(time.perf_counter() - start)
            injected = result.injected
            del history[-2:]  # keep the conversation at `messages` + one new turn
    p, r = percentiles(parse_only), percentiles(rewrite)
    print(
        f"{messages}-message conversation + 1 new turn, {len(body) // 1024} KiB, {rounds} rounds, "
        f"{injected} blocks re-applied on the last round"
    )
    print(f"{'':26} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'JSON parse alone':26} {p['p50']:8.3f} {p['p99']:8.3f}")
    print(f"{'parse + recovery rewrite':26} {r['p50']:8.3f} {r['p99']:8.3f}")
    print(f"{'added by recovery':26} {r['p50'] - p['p50']:8.3f} {r['p99'] - p['p99']:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.rounds))


if __name__ == "__main__":
    main()
