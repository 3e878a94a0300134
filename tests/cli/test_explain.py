"""`recovery-proxy explain`: a dry run over saved bodies of every wire format, no network."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from recovery_proxy.cli.main import main

ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
CHAT = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Change the port."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "src/config.ts"}'},
                },
                {
                    "id": "call_a2",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": '{"path": "src"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a1", "content": ENOENT},
        {"role": "tool", "tool_call_id": "call_a2", "content": "index.ts\nsettings.ts"},
    ],
}
RESPONSES = {
    "model": "gpt-5-codex",
    "instructions": "You are Codex.",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Build"}]},
        {
            "type": "function_call",
            "call_id": "call_r1",
            "name": "shell",
            "arguments": '{"command": ["cargo", "build"]}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_r1",
            "output": "Exit code: 101\nWall time: 2.1 seconds\nOutput:\nerror[E0308]: mismatched types",
        },
    ],
}
ANTHROPIC = {
    "model": "claude-sonnet-4-5",
    "system": [
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
    ],
    "messages": [
        {"role": "user", "content": "Fix the config."},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Edit",
                    "input": {"file_path": "src/app.py"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": True,
                    "content": "<tool_use_error>String to replace not found in file.</tool_use_error>",
                }
            ],
        },
    ],
}


@pytest.mark.parametrize(
    ("body", "fmt", "call_id", "tool", "category"),
    [
        (CHAT, "openai_chat", "call_a1", "read_file", "not_found"),
        (RESPONSES, "openai_responses", "call_r1", "shell", "build_failure"),
        (ANTHROPIC, "anthropic_messages", "toolu_1", "Edit", "edit_mismatch"),
    ],
)
def test_explain_json_names_the_verdict_and_the_text_it_would_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body, fmt, call_id, tool, category
) -> None:
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(body))
    assert main(["explain", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == fmt
    failed = report["results"][0]
    assert set(failed) == {
        "call_id", "tool", "target", "error", "category", "rule", "key_line", "added"
    }  # fmt: skip
    assert (failed["call_id"], failed["tool"], failed["error"]) == (call_id, tool, True)
    assert failed["category"] == category and failed["rule"]
    assert failed["added"].lstrip().startswith("[Error Recovery Context]")
    assert failed["key_line"] not in failed["added"]  # it sits right under that line


def test_explain_reads_stdin_and_prints_text() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "explain", "-"],
        input=orjson.dumps(CHAT),
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert out.startswith("format: openai_chat, 2 tool results")
    assert '- call_a1 read_file "src/config.ts": FAILURE not_found (rule ' in out
    assert '- call_a2 list_dir "src": ok' in out
    assert "    [Error Recovery Context]" in out


def test_explain_refuses_what_it_cannot_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [')
    assert main(["explain", str(path)]) == 2
    assert "cannot read" in capsys.readouterr().err
