"""`recovery-proxy demo` as a user runs it: a process, offline, quick, all four formats."""

from __future__ import annotations

import json
import os
import re
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
    # Chat Completions: a block, the repeat, the escalation, the summary after compaction
    "======== Chat Completions: POST /v1/chat/completions",
    "[Error Recovery Context]",
    '  1. read_file("src/config.ts") -> not_found: the same error',
    'Note: this not_found failure on "src/config.ts" has happened 2 times in this session.',
    'STOP: occurrence #3 of the same not_found failure on "src/config.ts".',
    "======== the agent compacts its history",
    "## Recent failures (from earlier in this session)",
    '- [not_found] read_file("src/config.ts") failed (turn 3): "Error: ENOENT',
    # ... and the scripted model acts on the summary (without it, it would edit config.ts)
    "model says: The recent-failures summary says src/config.ts does not exist; "
    "the port is in src/settings.ts.",
    'model calls edit_file({"path": "src/settings.ts", "old": "3000", "new": "8080"})',
    'without the proxy, the same script: it calls edit_file({"path": "src/config.ts"',
    "last: [tool] Edited src/settings.ts: 1 replacement (3000 -> 8080).",
    "[system] the summary re-applied byte for byte",
    "model answers: The port lives in src/settings.ts; I changed it to 8080.",
    # OpenAI Responses: Codex's exec output; after the block the model looks, then edits
    "======== OpenAI Responses: POST /v1/responses",
    "[function_call_output] as the model received it:",
    'Operation: shell("cat src/config.ts")',
    "  - If a file is missing, list its directory (or search for the name)",
    'without the proxy, the same script: it calls shell({"command": "cat src/config.ts"})',
    'model calls shell({"command": "ls src"})',
    # Anthropic Messages: is_error results, the cache breakpoint untouched
    "======== Anthropic Messages: POST /v1/messages",
    "[tool_result is_error=true] as the model received it:",
    'Operation: Read("src/config.ts")',
    "system block with cache_control: kept",
    'model calls Glob({"pattern": "src/*"})',
    # Gemini: Gemini CLI's functionResponse {"error": ...}, the system instruction untouched
    "======== Gemini: POST /v1beta/models/{model}:streamGenerateContent",
    "[functionResponse response.error] as the model received it:",
    'Operation: read_file("/repo/src/config.ts")',
    "systemInstruction: kept",
    'model calls list_directory({"dir_path": "/repo/src"})',
    # the closing summary and what to try next
    "======== summary",
    '    then the model: calls shell({"command": "ls src"}) -> calls shell(',
    "next:",
    "python -m recovery_proxy.demo.mock_model --port 9100 &",
]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")} | LOOPBACK


def demo(*flags: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "demo", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_demo_shows_recovery_on_all_four_formats_quickly() -> None:
    started = time.monotonic()
    out = demo()
    elapsed = time.monotonic() - started
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


def test_each_block_says_each_thing_once() -> None:
    """No error line repeated right under itself, no "none", one escalation per event, and the
    tokens each request added on its proxy line."""
    out = demo()
    for section in out.split("as the model received it:")[1:]:
        received = re.split(r"\n  \S", section)[0]  # the indented text, to the next line
        lines = [line.strip() for line in received.splitlines() if line.strip()]
        error = lines[0] if not lines[0].startswith("Exit code") else lines[3]
        if "[Error Recovery Context]" in received:
            assert received.count(error) == 1, received  # quoted by the agent's text only
    assert "none" not in out and "Loop notice" not in out
    assert re.search(r"proxy: request 2, status 200, injected 1, added \d+ tokens", out)
    assert "(+" in out and "re-applied)" in out  # later requests carry the earlier text


def test_quiet_prints_the_summary_only() -> None:
    out = demo("--quiet")
    assert out.startswith("\n======== summary"), out[:300]
    assert "[Error Recovery Context]" not in out and "legend" not in out
    assert out.count("    then the model: ") == 4 and "next:" in out


def test_json_has_every_request_and_the_text_added() -> None:
    document = json.loads(demo("--json", "--format", "messages", "--format", "gemini"))
    plays = document["plays"]
    assert [p["format"] for p in plays] == ["messages", "gemini"]
    for play in plays:
        second = play["requests"][1]
        assert second["injected"] == 1 and second["tokens_added"] > 40
        assert second["added"][0].startswith("[Error Recovery Context]\nOperation: ")
        assert play["failures"] == 1 and len(play["requests"]) == 4
        assert play["outcome"].endswith(
            "answers: The port lives in src/settings.ts; I changed it to 8080."
        )
        assert "config.ts" in play["without"]
    totals = document["totals"]
    assert totals["texts_added"] == 2 and totals["tokens_added"] == sum(
        r["tokens_added"] for p in plays for r in p["requests"]
    )


def test_a_format_flag_plays_only_that_format() -> None:
    out = demo("--format", "responses")
    assert "OpenAI Responses" in out and "Chat Completions" not in out and "Gemini" not in out


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
