"""The agent command of tests/cli/test_run.py: run by `recovery-proxy run -- python run_child.py`.

It sends one Chat Completions request with a failed tool result through the openai SDK, which
finds the proxy in OPENAI_BASE_URL, and one Anthropic Messages request (plain httpx) to
ANTHROPIC_BASE_URL; it writes what it saw to a JSON report, then (by `mode`) exits with a given
code, or waits for a signal, trapping it or not.

    python run_child.py REPORT exit CODE
    python run_child.py REPORT trap CODE    # on SIGTERM/SIGINT: write REPORT.signal, exit CODE
    python run_child.py REPORT wait         # until a signal ends the process
    python run_child.py REPORT count CODE   # after the first SIGINT, wait 1 s counting
                                            # SIGINTs, write the count to REPORT.signal
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from openai import OpenAI

ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"


def chat() -> dict[str, Any]:
    client = OpenAI(max_retries=0)  # base URL and key from the environment
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are a coding agent working in /repo."},
            {"role": "user", "content": "Which port does the server use?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_Qx81fzR2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "src/config.ts"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_Qx81fzR2", "content": ENOENT},
        ],
    )
    completion = raw.parse()
    return {
        "reply": completion.choices[0].message.content,
        "session": raw.headers.get("x-recovery-proxy-session"),
        "injected": raw.headers.get("x-recovery-proxy-injected"),
    }


def messages() -> dict[str, Any]:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "Deploy the staging build."},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01Hk2",
                        "name": "Bash",
                        "input": {"command": "./deploy.sh"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01Hk2",
                        "content": "bash: ./deploy.sh: Permission denied",
                        "is_error": True,
                    }
                ],
            },
        ],
    }
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    url = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages"
    response = httpx.post(url, json=body, headers=headers, timeout=30, trust_env=False)
    response.raise_for_status()
    return {"reply": response.json()["content"][0]["text"]}


def main() -> int:
    report, mode = Path(sys.argv[1]), sys.argv[2]
    code = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    if mode == "trap":

        def trapped(signum: int, frame: Any) -> None:
            Path(f"{report}.signal").write_text(signal.Signals(signum).name)
            sys.exit(code)

        signal.signal(signal.SIGTERM, trapped)
        signal.signal(signal.SIGINT, trapped)
    got: list[int] = []
    if mode == "count":
        signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    seen = {
        "env": {
            name: os.environ.get(name)
            for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL")
        },
        "chat": chat(),
        "messages": messages(),
    }
    report.write_text(json.dumps(seen))
    if mode == "exit":
        return code
    if mode == "count":
        while not got:
            time.sleep(0.05)
        time.sleep(1.0)  # a second copy would come within this
        Path(f"{report}.signal").write_text(str(len(got)))
        return code
    while True:  # the report is the sign we are ready for the signal
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
