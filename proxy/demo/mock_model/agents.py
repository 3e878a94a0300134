"""A mock model for real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode): it answers each
request by what it is, never by how many came before, since agents send side requests of their
own (titles, Gemini CLI's routing classifier, Claude Code's `/compact` summary):

- no shell tool offered: a side request. A JSON schema asked for (Gemini's `responseJsonSchema`)
  gets an object of that schema, anything else a one-line title;
- a compaction request (it asks for a summary with tools forbidden): a summary;
- a conversation continued from a summary, or with `FAILURES` tool results already: "Done.";
- otherwise: one call of the agent's shell tool running `COMMAND`, which fails.

`agent_turn` is a script entry for `create_mock_app(after=agent_turn)`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from recovery_proxy.demo.mock_model.script import Turn

COMMAND = "cat missing.txt"
FAILURES = 2  # shell calls per conversation, each answered by a failed result
SHELL_TOOLS = ("Bash", "bash", "run_shell_command", "exec_command", "shell", "shell_command")
COMPACTION_ASKS = ("Respond with TEXT ONLY", "summary of the conversation so far")
CONTINUED = "continued from a previous conversation"
SUMMARY = "<summary>The user asked to read missing.txt; it does not exist.</summary>"


def _tool_names(payload: Mapping[str, Any]) -> Iterator[str]:
    """The tools a request offers, in any of the four formats (Gemini's declarations too)."""
    for tool in payload.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str):
            yield name
        for key in ("functionDeclarations", "function_declarations"):
            for declaration in tool.get(key) or []:
                if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
                    yield declaration["name"]


def _results(payload: Mapping[str, Any]) -> int:
    """Tool results in the request: Chat `tool` messages, Responses `*_output` items, Messages
    `tool_result` blocks, Gemini `functionResponse` parts."""
    count = 0
    for message in payload.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        count += message.get("role") == "tool"
        content = message.get("content")
        if isinstance(content, list):
            count += sum(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    for item in payload.get("input") or []:
        count += isinstance(item, Mapping) and str(item.get("type", "")).endswith("_call_output")
    for content in payload.get("contents") or []:
        parts = content.get("parts") if isinstance(content, Mapping) else None
        count += sum(isinstance(p, Mapping) and "functionResponse" in p for p in parts or [])
    return count


def _last_message_text(payload: Mapping[str, Any]) -> str:
    """The raw JSON of the request's last message, item or content (what it asks now)."""
    for key in ("messages", "input", "contents"):
        items = payload.get(key)
        if isinstance(items, list) and items:
            return orjson.dumps(items[-1]).decode()
    return ""


def _of_schema(schema: Any) -> Any:
    """A value of a JSON schema (Gemini's upper-case types too): first enum value, 10, false,
    [], a string, or an object of its properties."""
    if not isinstance(schema, Mapping):
        return "mock"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _of_schema(sub) for name, sub in properties.items()}
    return {"integer": 10, "number": 10, "boolean": False, "array": []}.get(kind, "mock")


def _call(shell: str) -> Turn:
    """One call of the agent's shell tool, with the arguments its schema names."""
    arguments: dict[str, Any] = {"cmd": COMMAND} if shell == "exec_command" else {}
    if not arguments:
        arguments = {"command": COMMAND}
        if shell in ("Bash", "run_shell_command"):
            arguments["description"] = "Read the file"
    call_id = f"call_{secrets.token_hex(10)}"  # random, as providers make them
    function = {"name": shell, "arguments": orjson.dumps(arguments).decode()}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "function": function}],
    }


def shell_of(payload: Mapping[str, Any]) -> str | None:
    """The agent's shell tool among those the request offers (None: a side request)."""
    return next((name for name in _tool_names(payload) if name in SHELL_TOOLS), None)


def agent_turn(payload: dict[str, Any]) -> Turn:
    """The answer to one agent request (see the module docstring)."""
    shell = shell_of(payload)
    config = payload.get("generationConfig")
    schema = config.get("responseJsonSchema") if isinstance(config, Mapping) else None
    if schema is not None:
        return {"role": "assistant", "content": orjson.dumps(_of_schema(schema)).decode()}
    if shell is None:
        return {"role": "assistant", "content": "Reading a missing file"}
    last = _last_message_text(payload)
    if any(ask in last for ask in COMPACTION_ASKS):
        return {"role": "assistant", "content": SUMMARY}
    history = payload.get("messages") or payload.get("input") or payload.get("contents")
    if CONTINUED in orjson.dumps(history).decode() or _results(payload) >= FAILURES:
        return {"role": "assistant", "content": "Done."}
    return _call(shell)
