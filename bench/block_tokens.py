"""Tokens per recovery block, on the demo's failures: what the proxy adds to each failed result.

Plays short Chat Completions sessions (the demo's failures in each agent's own words: an
ENOENT read three times, Codex's exec output, Claude Code's `File does not exist.`, Gemini
CLI's `File not found:`, and a failing pytest run) through the real
app and the demo's mock model on loopback, and counts, with `recovery_proxy.tokens.count`, the
text the model received after each failed result beyond what the agent sent. Uses only APIs
that older trees have too, so one tree can be compared with another:

    python -m bench.block_tokens            # this tree
    PYTHONPATH=/path/to/links python -m bench.block_tokens   # another tree (bench.compare)
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

import httpx

from recovery_proxy import tokens
from recovery_proxy.config import Settings
from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer

PYTEST = """\
F.....                                                                   [100%]
=================================== FAILURES ===================================
__________________________________ test_login __________________________________
    def test_login():
>       assert login("demo", "pw").status == 200
E       assert 401 == 200
tests/test_api.py:12: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_login - assert 401 == 200
1 failed, 5 passed in 0.12s"""
SCENARIOS: dict[str, tuple[str, dict[str, Any], str, int]] = {
    "read ENOENT": (
        "read_file",
        {"path": "src/config.ts"},
        "Error: ENOENT: no such file or directory, open 'src/config.ts'",
        3,
    ),
    "Codex exec": (
        "shell",
        {"command": "cat src/config.ts"},
        "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: src/config.ts: No such file",
        2,
    ),
    "Claude Code Read": (
        "Read",
        {"file_path": "src/config.ts"},
        "File does not exist. Note: your current working directory is /repo.",
        2,
    ),
    "Gemini CLI read_file": (
        "read_file",
        {"file_path": "/repo/src/config.ts"},
        "File not found: /repo/src/config.ts",
        2,
    ),
    "pytest run": ("bash", {"command": "pytest -q"}, PYTEST, 2),
}


def play(
    proxy: str, model: Any, tool: str, args: dict[str, Any], output: str, times: int
) -> list[int]:
    """Tokens the model received after each of `times` identical failures."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Change the dev server port to 8080."},
    ]
    added = []
    headers = {"Authorization": "Bearer sk-bench", "X-Session-Id": f"bench-{tool}-{len(output)}"}
    with httpx.Client(base_url=proxy, headers=headers, timeout=30) as client:
        for n in range(times):
            call = {"id": f"call_{n}", "type": "function"}
            call["function"] = {"name": tool, "arguments": json.dumps(args)}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": output})
            body = {"model": "gpt-4o-mini", "messages": messages}
            client.post("/v1/chat/completions", json=body).raise_for_status()
            received = model.state.received[-1]["messages"][-1]["content"]
            added.append(tokens.count(received[len(output) :]))
    return added


def main() -> int:
    model = create_mock_app([])
    with BackgroundServer(model) as upstream:
        settings = Settings(upstream=f"{upstream.url}/v1", store="memory", hot_reload=False)
        with BackgroundServer(create_app(settings)) as proxy:
            every: list[int] = []
            print("| failure | tokens added per block (1st, 2nd, ...) |")
            print("|---|---|")
            for name, (tool, args, output, times) in SCENARIOS.items():
                added = play(proxy.url, model, tool, args, output, times)
                every += added
                print(f"| {name} | {', '.join(map(str, added))} |")
            print(
                f"\n{len(every)} blocks: {sum(every)} tokens in all, "
                f"mean {statistics.mean(every):.0f}, median {statistics.median(every):.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
