"""`recovery-proxy demo` as a user runs it: a process, offline, quick, all four formats."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
KEY_LINES = [
    # the legend opens the output
    "legend: agent -> recovery-proxy -> mock model, all on loopback",
    "'as the model received it' is the agent's text plus what the proxy spliced in.",
    # Chat Completions: a block, the repeat, the loop, the summary after compaction
    "======== Chat Completions: POST /v1/chat/completions",
    "[Error Recovery Context]",
    '  1. read_file("src/config.ts") -> not_found: Error: ENOENT',
    'Note: this not_found failure on "src/config.ts" has happened 2 times in this session.',
    'STOP: occurrence #3 of the same not_found failure on "src/config.ts".',
    'Loop notice: read_file("src/config.ts") has been called 3 times in a row',
    "======== the agent compacts its history",
    "## Recent failures (from earlier in this session)",
    '- [not_found] read_file("src/config.ts") failed (turn 3): "Error: ENOENT',
    # ... and the scripted model acts on the summary (without it, it would edit config.ts)
    "model says: The recent-failures summary says src/config.ts does not exist; "
    "the port is in src/settings.ts.",
    'model calls edit_file({"path": "src/settings.ts", "old": "3000", "new": "8080"})',
    'without the proxy (no summary), the same script calls edit_file({"path": "src/config.ts"',
    "last: [tool] Edited src/settings.ts: 1 replacement (3000 -> 8080).",
    "[system] the summary re-applied byte for byte",
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
    # Gemini: Gemini CLI's functionResponse {"error": ...}, the system instruction untouched
    "======== Gemini: POST /v1beta/models/{model}:streamGenerateContent",
    "[functionResponse response.error] as the model received it:",
    'Operation: read_file("/repo/src/config.ts")',
    '  1. read_file("/repo/src/config.ts") -> not_found: File not found: /repo/src/config.ts',
    "systemInstruction: kept",
]


def test_demo_shows_recovery_on_all_four_formats_quickly() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "demo"],
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
    order = ["Chat Completions", "OpenAI Responses", "Anthropic Messages", "Gemini: POST"]
    assert [out.index(name) for name in order] == sorted(out.index(name) for name in order)
    # after compaction the model no longer repeats the failed file: one edit, and it succeeds
    compacted = out[out.index("the agent compacts its history") : out.index("OpenAI Responses")]
    assert compacted.count("model calls ") == 1, compacted
    assert "[Error Recovery Context]" not in compacted, compacted
    assert "status 200" in out and "status 5" not in out and "status 4" not in out
    assert out.count("model answers:") == 4, out
    assert elapsed < 5, f"the demo took {elapsed:.1f} s (budget 5 s)"


def test_output_cut_short_ends_quietly() -> None:
    """`recovery-proxy demo | head -2`: no BrokenPipeError traceback when the reader leaves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "recovery_proxy", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env | LOOPBACK,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"legend: ")
    proc.stdout.close()  # the reader goes away, as `head` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
