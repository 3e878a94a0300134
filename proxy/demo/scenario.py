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


def _path(arguments: dict[str, Any]) -> str:
    raw = arguments.get("path") or arguments.get("file_path") or arguments.get("dir_path") or ""
    return str(raw).removeprefix("/repo/").rstrip("/*")


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """What the agent's tool returns: list_dir, read_file or edit_file on FILES (each agent's
    own spelling of them: Read/Glob/Edit, list_directory/replace)."""
    path = _path(arguments)
    if name in ("list_dir", "list_directory", "Glob"):
        return "\n".join(sorted(f.removeprefix(path + "/") for f in FILES if f.startswith(path)))
    if path not in FILES:
        return f"Error: ENOENT: no such file or directory, open '{path}'"
    if name in ("read_file", "Read"):
        return FILES[path]
    old = arguments.get("old", arguments.get("old_string", ""))
    new = arguments.get("new", arguments.get("new_string", ""))
    if old not in FILES[path]:
        return f"Error: old text not found in {path}"
    return f"Edited {path}: 1 replacement ({old} -> {new})."


def run_shell(command: str) -> str:
    """Codex's exec output for the three commands its scripted model runs."""
    if command.startswith("cat "):
        path = command.removeprefix("cat ")
        if path not in FILES:
            return CODEX_EXEC
        return f"Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{FILES[path]}"
    if command == "ls src":
        listing = run_tool("list_dir", {"path": "src"})
        return f"Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{listing}"
    return "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n"


def turn(calls: list[dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A scripted assistant turn calling `calls` (an answer when there are none)."""
    if not calls:
        return {"role": "assistant", "content": text or "Done."}
    return {"role": "assistant", "content": text, "tool_calls": calls}


def saw_block(payload: dict[str, Any]) -> bool:
    """True when the newest item of the request (any format) carries a recovery block."""
    items = payload.get("messages") or payload.get("input") or payload.get("contents") or [{}]
    return b"[Error Recovery Context]" in json.dumps(items[-1]).encode()


def after_failure(explore: dict[str, Any], retry: dict[str, Any]) -> Entry:
    """The model's turn after its first failure: with a recovery block it follows the first
    hint and looks around (`explore`); without one it tries the same thing again (`retry`)."""
    return lambda payload: explore if saw_block(payload) else retry


# The short runs: the first call fails; after the block the model lists the directory, edits
# the file it finds there and answers (without the block: the same call again).
CODEX_EXEC = "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: src/config.ts: No such file"
CLAUDE_READ = "File does not exist. Note: your current working directory is /repo."
FIXED = "The port lives in src/settings.ts; I changed it to 8080."
SED = "sed -i 's/3000/8080/' src/settings.ts"
RESPONSES_SCRIPT: list[Entry] = [
    turn([call("call_r1", "shell", command="cat src/config.ts")]),
    after_failure(
        turn([call("call_r2", "shell", command="ls src")]),
        turn([call("call_r2", "shell", command="cat src/config.ts")]),
    ),
    turn([call("call_r3", "shell", command=SED)]),
    turn([], FIXED),
]
EDIT = {"old_string": "port: 3000", "new_string": "port: 8080"}
MESSAGES_SCRIPT: list[Entry] = [
    turn([call("toolu_m1", "Read", file_path="src/config.ts")]),
    after_failure(
        turn([call("toolu_m2", "Glob", pattern="src/*")]),
        turn([call("toolu_m2", "Read", file_path="src/config.ts")]),
    ),
    turn([call("toolu_m3", "Edit", file_path="src/settings.ts", **EDIT)]),
    turn([], FIXED),
]
# Gemini: no call ids from the model (as the Gemini API answers); Gemini CLI sends its own.
GEMINI_MODEL = "gemini-2.5-pro"
GEMINI_READ = "File not found: /repo/src/config.ts"
GEMINI_SCRIPT: list[Entry] = [
    turn([call("", "read_file", file_path="/repo/src/config.ts")]),
    after_failure(
        turn([call("", "list_directory", dir_path="/repo/src")]),
        turn([call("", "read_file", file_path="/repo/src/config.ts")]),
    ),
    turn([call("", "replace", file_path="/repo/src/settings.ts", **EDIT)]),
    turn([], FIXED),
]
