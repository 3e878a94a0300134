"""`recovery-proxy demo` as a user runs it: a process, offline, quick, all three formats."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
KEY_LINES = [
    # the legend opens the output
    "legend: agent -> recovery-proxy -> mock model, all on loopback",
    "'as the model received it' is the agent's text plus what the proxy spliced in.",
    # Chat Completions: a block, the repeat, the loop, the summary after compaction
    "======== Chat Completions: POST /v1/chat/completions",
    '  1. read_file("src/config.ts") -> not_found: Error: ENOENT',
    "======== the agent compacts its history",
    "## Recent failures (from earlier in this session)",
    'Operation: edit_file("src/config.ts")',
    "model answers: The port lives in src/settings.ts; I changed it to 8080.",
    # OpenAI Responses: Codex's exec output, the first attempt listed on the second
    "======== OpenAI Responses: POST /v1/responses",
    "[function_call_output] as the model received it:",
    'Operation: shell("cat src/config.ts")',
    '  1. shell("cat src/config.ts") -> not_found: cat: src/config.ts: No such file',
    # Anthropic Messages: is_error results, the cache breakpoint untouched
    "======== Anthropic Messages: POST /v1/messages",
    "[tool_result is_error=true] as the model received it:",
    'Operation: Read("src/config.ts")',
    '  1. Read("src/config.ts") -> not_found: File does not exist.',
    "system block with cache_control: kept",
]


def test_demo_shows_recovery_on_all_three_formats_quickly() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "proxy.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env | LOOPBACK,
        cwd=REPO,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("legend: "), out[:200]
    missing = [line for line in KEY_LINES if line not in out]
    assert not missing, f"demo output lacks {missing}:\n{out}"
    assert out.index("Chat Completions") < out.index("OpenAI Responses") < out.index("Anthropic")
    assert "status 200" in out and "status 5" not in out and "status 4" not in out
    assert out.count("model answers:") == 3, out
    assert elapsed < 5, f"the demo took {elapsed:.1f} s (budget 5 s)"
