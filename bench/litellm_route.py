"""Overhead of the litellm route (`--models`) against the raw route, in one run.

    python -m bench.litellm_route [--requests 300] [--messages 50]

One proxy process, one mock upstream: `gpt-4o-mini` goes out on the raw route, `via-litellm`
(listed in a models file as `openai/gpt-4o-mini` at the mock) through `litellm.acompletion`.
Requests alternate direct / raw / litellm so all three see the same machine state.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench.common import conversation, mock_upstream, percentiles, proxy_process


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--messages", type=int, default=50)
    args = parser.parse_args()
    messages = conversation(args.messages)
    bodies = {
        "direct": orjson.dumps({"model": "gpt-4o-mini", "messages": messages}),
        "raw route": orjson.dumps({"model": "gpt-4o-mini", "messages": messages}),
        "litellm route": orjson.dumps({"model": "via-litellm", "messages": messages}),
    }
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    with tempfile.TemporaryDirectory() as folder, mock_upstream() as upstream:
        models = Path(folder) / "models.yaml"
        models.write_text(
            "model_list:\n  - model_name: via-litellm\n    litellm_params:\n"
            f"      model: openai/gpt-4o-mini\n      api_base: {upstream}\n"
            "      api_key: os.environ/BENCH_PROVIDER_KEY\n"
        )
        env = {"RECOVERY_PROXY_MODELS": str(models), "BENCH_PROVIDER_KEY": "sk-mock"}
        with proxy_process(upstream, "memory", env) as proxy:
            bases = {"direct": upstream, "raw route": proxy, "litellm route": proxy}
            timings: dict[str, list[float]] = {name: [] for name in bases}
            with httpx.Client(headers=headers, timeout=60) as client:
                for _ in range(20):  # warm up, litellm's import included
                    for name, base in bases.items():
                        client.post(f"{base}/chat/completions", content=bodies[name])
                for _ in range(args.requests):
                    for name, base in bases.items():
                        start = time.perf_counter()
                        response = client.post(f"{base}/chat/completions", content=bodies[name])
                        timings[name].append(time.perf_counter() - start)
                        assert response.status_code == 200, response.text
    direct = percentiles(timings["direct"])
    print(f"{args.messages} messages, {args.requests} requests each (ms)")
    for name, samples in timings.items():
        p = percentiles(samples)
        added = {k: p[k] - direct[k] for k in p}
        print(f"{name:>14}: " + "  ".join(f"{k} {v:.2f} (+{added[k]:.2f})" for k, v in p.items()))


if __name__ == "__main__":
    main()
