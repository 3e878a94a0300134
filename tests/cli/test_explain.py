"""`recovery-proxy explain`: a dry run over saved bodies of every wire format, no network."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from recovery_proxy.cli.explain import explain, render_text
from recovery_proxy.cli.main import main
from recovery_proxy.rules.load import load_rules

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


GEMINI = {
    "systemInstruction": {"parts": [{"text": "You are an interactive CLI agent."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Fix the rounding bug in invoice totals."}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": "read-totals-1",
                        "name": "read_file",
                        "args": {"file_path": "src/totals.py"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "read-totals-1",
                        "name": "read_file",
                        "response": {"error": "File not found: src/totals.py"},
                    }
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
        (GEMINI, "gemini", "read-totals-1", "read_file", "not_found"),
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
        "call_id", "tool", "target", "error", "category", "rule", "rule_file", "category_rule",
        "category_file", "key_line", "added", "reason", "reason_code",
    }  # fmt: skip
    assert (failed["call_id"], failed["tool"], failed["error"]) == (call_id, tool, True)
    assert failed["category"] == failed["category_rule"] == category and failed["rule"]
    assert failed["category_file"] == "20-categories.yaml"
    assert failed["added"].lstrip().startswith("[Error Recovery Context]")
    assert failed["key_line"] not in failed["added"]  # it sits right under that line
    assert failed["reason"] is None and failed["reason_code"] is None


def test_explain_reads_stdin_and_prints_text() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "explain", "-"],
        input=orjson.dumps(CHAT),
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert out.startswith("format: openai_chat, 2 tool results")
    assert (
        '- call_a1 read_file "src/config.ts": FAILURE not_found (detected by rule error-prefix '
        "in 10-detection.yaml, category from rule not_found in 20-categories.yaml)"
    ) in out
    assert '- call_a2 list_dir "src": ok' in out
    assert "    [Error Recovery Context]" in out


def test_explain_refuses_what_it_cannot_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [')
    assert main(["explain", str(path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def explain_json(tmp_path: Path, body: dict, *flags: str) -> dict:
    """`explain --json` over `body` saved to a file, through the real CLI entry point."""
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(body))
    out = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "explain", str(path), "--json", *flags],
        capture_output=True,
        check=True,
    ).stdout
    return json.loads(out)


def tool_turn(call_id: str, name: str, arguments: str, output: str) -> list[dict]:
    """One assistant turn calling one tool, and the tool's answer (Chat Completions)."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


LONG_SESSION = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Change the port."},
        *tool_turn("call_h1", "read_file", '{"path": "src/config.ts"}', ENOENT),
        *tool_turn("call_h2", "bash", '{"command": "npm test"}', "npm error Missing script: test"),
        *tool_turn(
            "call_h3", "read_file", '{"path": "src/settings.ts"}', "export const port = 3000"
        ),
        *tool_turn("call_h4", "edit_file", '{"path": "src/config.ts"}', ENOENT),
    ],
}


def test_a_failure_in_history_says_why_it_gets_nothing(tmp_path: Path) -> None:
    """Only the newest turn's results get blocks on first sight: the older failures say so,
    in JSON and in text."""
    report = explain_json(tmp_path, LONG_SESSION)
    by_id = {r["call_id"]: r for r in report["results"]}
    for old in ("call_h1", "call_h2"):
        assert by_id[old]["error"] and by_id[old]["added"] is None
        assert by_id[old]["reason_code"] == "history"
        assert by_id[old]["reason"].startswith("seen as history: on first sight of a conversation")
    assert by_id["call_h3"]["error"] is False and by_id["call_h3"]["reason"] is None
    newest = by_id["call_h4"]
    assert newest["added"] and newest["reason"] is None
    assert '1. read_file("src/config.ts") -> not_found' in newest["added"]  # history counts
    text = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "explain", "-"],
        input=orjson.dumps(LONG_SESSION),
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert text.count("  nothing added: seen as history") == 2


def test_failures_over_the_request_budget_say_so(tmp_path: Path) -> None:
    """Sixteen parallel reads fail at once: blocks go out until the request's 1,000 new
    tokens are spent; the others name the budget (escalations still go out past it)."""
    calls = [
        {
            "id": f"call_p{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "src/mod{n}.ts"}}'},
        }
        for n in range(16)
    ]
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Read every module."},
            {"role": "assistant", "content": None, "tool_calls": calls},
            *(
                {
                    "role": "tool",
                    "tool_call_id": f"call_p{n}",
                    "content": ENOENT.replace("config", f"mod{n}"),
                }
                for n in range(16)
            ),
        ],
    }
    results = explain_json(tmp_path, body)["results"]
    blocks = [r for r in results if r["added"].startswith("[Error Recovery Context]")]
    over = results[len(blocks) :]
    assert 4 < len(blocks) < 16 and all(r["reason"] is None for r in blocks)
    assert {r["reason_code"] for r in over} == {"request_budget"}
    assert "at most 1,000 new tokens per request" in over[0]["reason"]
    assert all(r["added"].startswith("[Recovery Notice]\nESCALATION") for r in over)


def test_a_body_near_the_context_window_says_only_escalations_go_out(tmp_path: Path) -> None:
    log = "\n".join(f"2026-11-22T11:{n % 60:02d}:00Z GET /api/orders/{n} 200" for n in range(900))
    body = {
        "model": "gpt-4",  # an 8,192-token window: the log fills 85% of it
        "messages": [
            {"role": "user", "content": "Why do the order requests fail?"},
            *tool_turn("call_log", "bash", '{"command": "cat access.log"}', log),
            *tool_turn("call_cfg", "read_file", '{"path": "src/config.ts"}', ENOENT),
        ],
    }
    last = explain_json(tmp_path, body)["results"][-1]
    assert last["error"] and last["added"] is None and last["reason_code"] == "near_window"
    assert "above 85% of the model's context window" in last["reason"]


def test_a_body_the_proxy_already_rewrote_says_the_block_is_there(tmp_path: Path) -> None:
    block = explain_json(tmp_path, CHAT)["results"][0]["added"]
    rewritten = orjson.loads(orjson.dumps(CHAT))
    rewritten["messages"][3]["content"] = ENOENT + "\n\n" + block  # as the proxy splices it
    first = explain_json(tmp_path, rewritten)["results"][0]
    assert first["added"] is None and first["reason_code"] == "present"


def test_the_users_category_rule_is_named_with_its_file(tmp_path: Path) -> None:
    """--extra-rules adds a `quota` category and replaces `not_found` in place: the report
    names the detection rule and, apart from it, the user's rule that set the category."""
    extra = tmp_path / "team-rules"
    extra.mkdir()
    (extra / "quota.yaml").write_text(
        "categories:\n"
        "  - id: quota\n"
        "    patterns: ['(?i)quota exceeded']\n"
        "    hints: ['Wait for the quota window to reset, then retry once']\n"
        "  - id: not_found\n"
        "    patterns: ['(?i)ENOENT|no such file']\n"
        "    hints: ['List the parent directory before guessing another path']\n"
    )
    quota = "Traceback (most recent call last):\nRuntimeError: quota exceeded for project acme"
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Deploy it."},
            *tool_turn("call_q1", "deploy", '{"name": "acme"}', quota),
        ],
    }
    [result] = explain_json(tmp_path, body, "--extra-rules", str(extra))["results"]
    assert (result["rule"], result["rule_file"]) == ("python-traceback", "10-detection.yaml")
    assert (result["category"], result["category_rule"]) == ("quota", "quota")
    assert result["category_file"] == str(extra / "quota.yaml")
    [replaced, _] = explain_json(tmp_path, CHAT, "--extra-rules", str(extra))["results"]
    assert replaced["category_rule"] == "not_found"
    assert replaced["category_file"] == str(extra / "quota.yaml")  # the user's, in place
    path = tmp_path / "deploy.json"
    path.write_bytes(orjson.dumps(body))
    text = subprocess.run(
        [sys.executable, "-m", "recovery_proxy", "explain", str(path), "--extra-rules", extra],
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert (
        '- call_q1 deploy "acme": FAILURE quota (detected by rule python-traceback in '
        f"10-detection.yaml, category from rule quota in {extra / 'quota.yaml'})"
    ) in text


def test_a_wire_flag_and_the_fallback_category_are_said_as_such(tmp_path: Path) -> None:
    body = orjson.loads(orjson.dumps(ANTHROPIC))
    body["messages"][2]["content"][0]["content"] = "the deploy hook returned nothing useful"
    [result] = explain_json(tmp_path, body)["results"]
    assert (result["rule"], result["category"], result["category_rule"]) == (
        "wire-flag", "unknown", None
    )  # fmt: skip
    text = render_text(explain(body, load_rules()))
    assert (
        "FAILURE unknown (detected by the wire format's error flag, no category rule matched)"
    ) in text


@pytest.mark.parametrize(
    "body",
    [
        {"model": "gpt-3.5-turbo-instruct", "prompt": "Say hello"},  # legacy Completions
        {"model": "text-embedding-3-small", "input": {"tokens": [1, 2]}},
        {"messages": "not a list"},
    ],
)
def test_a_body_of_no_known_format_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: dict
) -> None:
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(body))
    assert main(["explain", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"recovery-proxy explain: {path} is not a request body")
    for name in ("openai_chat", "openai_responses", "anthropic_messages", "gemini"):
        assert name in captured.err


def test_format_forces_a_format_and_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Chat body carrying a top-level `system` (some clients add one) reads as Anthropic's
    shape; `--format openai_chat` says what it is. A format the body lacks the field of, or
    an unknown name, is refused in one line."""
    body = {**CHAT, "system": "You are a coding agent."}
    assert explain_json(tmp_path, body)["format"] == "anthropic_messages"
    forced = explain_json(tmp_path, body, "--format", "openai_chat")
    assert forced["format"] == "openai_chat" and forced["results"][0]["added"]
    path = tmp_path / "request.json"
    assert main(["explain", str(path), "--format", "gemini"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"recovery-proxy explain: {path} is not a request in the gemini format: "
        "it needs a `contents` list\n"
    )
    assert main(["explain", str(path), "--format", "soap"]) == 2
    assert capsys.readouterr().err.startswith("recovery-proxy explain: unknown --format 'soap'")
