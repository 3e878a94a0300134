"""The demo's scenario: what the scripted agent is asked, the file tree its tools see, and what
the mock model answers, request by request, in each wire format. Data and the agent's fake
tool only: no HTTP and no printing (the plays play it, the demo command runs them).
"""

from __future__ import annotations

import json
from typing import Any

from recovery_proxy.demo.mock_model import Entry, Turn, system_of

SYSTEM = "You are a coding agent. Use the tools to change the repository."
TASK = "Change the dev server port to 8080 in src/config.ts."
COMPACTED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "Summary: the user wants the dev server port changed to 8080; the config lives under src/."
)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """A Chat Completions tool call (the mock renders it in every format)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def summary_says_config_missing(payload: dict[str, Any]) -> bool:
    """True when the system prompt holds the proxy's failure summary listing
    `read_file("src/config.ts")` as not_found."""
    return any(
        line.startswith("- [not_found]") and 'read_file("src/config.ts")' in line
        for line in system_of(payload).splitlines()
    )


def after_compaction(payload: dict[str, Any]) -> Turn:
    """The first turn after the agent compacts: the model reads its system prompt. With the
    proxy's summary it knows src/config.ts is missing and edits the file it found; without it,
    it goes back to the file the task names."""
    if summary_says_config_missing(payload):
        return {
            "role": "assistant",
            "content": "The recent-failures summary says src/config.ts does not exist; "
            "the port is in src/settings.ts.",
            "tool_calls": [
                call("call_6", "edit_file", path="src/settings.ts", old="3000", new="8080")
            ],
        }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_6", "edit_file", path="src/config.ts", old="3000", new="8080")],
    }


# What the mock model answers, request by request.
SCRIPT: list[Entry] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_1", "read_file", path="src/config.ts")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_2", "read_file", path="src/config.ts")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_3", "read_file", path="src/config.ts")],
    },
    {"role": "assistant", "content": None, "tool_calls": [call("call_4", "list_dir", path="src")]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_5", "read_file", path="src/settings.ts")],
    },
    after_compaction,
    {"role": "assistant", "content": "The port lives in src/settings.ts; I changed it to 8080."},
]

# The repository the agent's tools see (src/config.ts, named in the task, does not exist).
FILES = {
    "src/index.ts": "import { settings } from './settings';\n",
    "src/settings.ts": "export const settings = {\n  port: 3000,\n  host: 'localhost',\n};\n",
    "src/server.ts": "export function start(port: number) {}\n",
}
COMPACT_AFTER = "call_5"  # the agent compacts its history after this result


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """What the agent's tool returns: list_dir, read_file or edit_file on FILES."""
    path = str(arguments.get("path", ""))
    if name == "list_dir":
        return "\n".join(sorted(f.removeprefix(path + "/") for f in FILES if f.startswith(path)))
    if path not in FILES:
        return f"Error: ENOENT: no such file or directory, open '{path}'"
    if name == "read_file":
        return FILES[path]
    if arguments.get("old", "") not in FILES[path]:
        return f"Error: old text not found in {path}"
    return f"Edited {path}: 1 replacement ({arguments['old']} -> {arguments['new']})."


def turn(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A scripted assistant turn calling `calls` (an answer when there are none)."""
    if not calls:
        return {"role": "assistant", "content": "src/config.ts is missing; nothing to change."}
    return {"role": "assistant", "content": None, "tool_calls": calls}


# The short runs: the model tries the same missing file twice, then gives up.
CODEX_EXEC = "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: src/config.ts: No such file"
CLAUDE_READ = "File does not exist. Note: your current working directory is /repo."
RESPONSES_SCRIPT = [
    turn([call("call_r1", "shell", command="cat src/config.ts")]),
    turn([call("call_r2", "shell", command="cat src/config.ts")]),
    turn([]),
]
MESSAGES_SCRIPT = [
    turn([call("toolu_m1", "Read", file_path="src/config.ts")]),
    turn([call("toolu_m2", "Read", file_path="src/config.ts")]),
    turn([]),
]
# Gemini: no call ids from the model (as the Gemini API answers); Gemini CLI sends its own.
GEMINI_MODEL = "gemini-2.5-pro"
GEMINI_READ = "File not found: /repo/src/config.ts"
GEMINI_SCRIPT = [
    turn([call("", "read_file", file_path="/repo/src/config.ts")]),
    turn([call("", "read_file", file_path="/repo/src/config.ts")]),
    turn([]),
]
