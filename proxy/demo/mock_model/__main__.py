"""`python -m recovery_proxy.demo.mock_model --port N`: the mock model as a server of its own,
so `recovery-proxy run --upstream http://127.0.0.1:N/v1 -- <agent>` can be tried offline.

It speaks Chat Completions, Responses, Anthropic Messages and Gemini, and answers every request
with one line saying what it received: how many items, how many recovery blocks the proxy
added, whether the failure summary is in the system prompt. No tool calls: the agent's turn
ends there.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from recovery_proxy.demo.mock_model import Turn, create_mock_app, system_of

BLOCK = "[Error Recovery Context]"
SUMMARY = "## Recent failures"


def report(payload: dict[str, Any]) -> Turn:
    """One line on what the model received."""
    items = payload.get("messages") or payload.get("input") or payload.get("contents") or []
    blocks = json.dumps(items).count(BLOCK)
    summary = "yes" if SUMMARY in system_of(payload) else "no"
    text = (
        f"mock model: received {len(items) if isinstance(items, list) else 1} items, "
        f"{blocks} recovery blocks, failure summary: {summary}."
    )
    return {"role": "assistant", "content": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recovery_proxy.demo.mock_model", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9100, help="listen port (default 9100)")
    args = parser.parse_args(argv)
    import uvicorn

    app = create_mock_app([], after=report)
    print(
        f"mock model on http://{args.host}:{args.port} (OpenAI base URL: "
        f"http://{args.host}:{args.port}/v1); Ctrl-C stops it",
        flush=True,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
