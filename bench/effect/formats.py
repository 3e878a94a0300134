"""The three wire formats the runner speaks (Chat Completions, Anthropic Messages, OpenAI
Responses): the tools in each one's shape, a request built from the neutral history, and the
reply read back as text, tool calls and usage."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Format = Literal["chat", "messages", "responses"]
FORMATS: tuple[Format, ...] = ("chat", "messages", "responses")

TOOLS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("read_file", "Read a file of the repository.", {"path": {"type": "string"}}, ["path"]),
    ("list_dir", "List a directory of the repository.", {"path": {"type": "string"}}, ["path"]),
    (
        "write_file",
        "Write a whole file (created if missing).",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    (
        "edit_file",
        "Replace the exact text `old` with `new` in a file (one occurrence).",
        {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
        ["path", "old", "new"],
    ),
    (
        "run_shell",
        "Run a shell command in the repository.",
        {"command": {"type": "string"}},
        ["command"],
    ),
    (
        "http_request",
        "Send an HTTP request; `body` is a JSON object.",
        {
            "method": {"type": "string", "enum": ["GET", "POST", "PUT", "DELETE"]},
            "url": {"type": "string"},
            "body": {"type": "object"},
        },
        ["method", "url"],
    ),
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model made: its id, tool name and decoded arguments."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the harness sends back for a call."""

    call_id: str
    name: str
    text: str
    failed: bool


@dataclass(slots=True)
class Turn:
    """One history item: a user text, or an assistant turn and its results."""

    role: Literal["user", "assistant"]
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply: text, tool calls, prompt and completion tokens (0 when not reported)."""

    text: str
    calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


def tools(fmt: Format) -> list[dict[str, Any]]:
    """The six tools in `fmt`'s shape."""
    if fmt == "chat":
        return [
            {
                "type": "function",
                "function": {"name": n, "description": d, "parameters": _schema(p, r)},
            }
            for n, d, p, r in TOOLS
        ]
    if fmt == "messages":
        return [
            {"name": n, "description": d, "input_schema": _schema(p, r)} for n, d, p, r in TOOLS
        ]
    return [
        {"type": "function", "name": n, "description": d, "parameters": _schema(p, r)}
        for n, d, p, r in TOOLS
    ]


def path_of(fmt: Format) -> str:
    """The endpoint under the base URL (which ends in /v1)."""
    return {"chat": "/chat/completions", "messages": "/messages", "responses": "/responses"}[fmt]


def request(
    fmt: Format, model: str, system: str, history: list[Turn], options: dict[str, Any]
) -> dict[str, Any]:
    """The request body for the next model turn; `options` (temperature, seed, max_tokens)
    go in as each format names them."""
    max_tokens = options.get("max_tokens", 512)
    sampling = {k: options[k] for k in ("temperature", "seed") if k in options}
    if fmt == "chat":
        return {
            "model": model,
            "messages": [{"role": "system", "content": system}, *_chat(history)],
            "tools": tools(fmt),
            "max_tokens": max_tokens,
            **sampling,
        }
    if fmt == "messages":
        return {
            "model": model,
            "system": system,
            "messages": _messages(history),
            "tools": tools(fmt),
            "max_tokens": max_tokens,
            **{k: v for k, v in sampling.items() if k != "seed"},
        }
    return {
        "model": model,
        "instructions": system,
        "input": _responses(history),
        "tools": tools(fmt),
        "max_output_tokens": max_tokens,
        "store": False,
        **{k: v for k, v in sampling.items() if k != "seed"},
    }


def _chat(history: list[Turn]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in history:
        if turn.role == "user":
            out.append({"role": "user", "content": turn.text})
            continue
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args)},
                }
                for c in turn.calls
            ]
        out.append(message)
        out += [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.text} for r in turn.results
        ]
    return out


def _messages(history: list[Turn]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in history:
        if turn.role == "user":
            out.append({"role": "user", "content": turn.text})
            continue
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in turn.calls
        ]
        out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "."}]})
        if turn.results:
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": r.call_id,
                    "content": r.text,
                    "is_error": r.failed,
                }
                for r in turn.results
            ]
            out.append({"role": "user", "content": results})
    return out


def _responses(history: list[Turn]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in history:
        if turn.role == "user":
            out.append({"role": "user", "content": turn.text})
            continue
        if turn.text:
            out.append({"role": "assistant", "content": turn.text})
        out += [
            {
                "type": "function_call",
                "call_id": c.id,
                "name": c.name,
                "arguments": json.dumps(c.args),
            }
            for c in turn.calls
        ]
        out += [
            {"type": "function_call_output", "call_id": r.call_id, "output": r.text}
            for r in turn.results
        ]
    return out


def _args(raw: Any) -> dict[str, Any]:
    """Arguments as an object: JSON text decoded; anything else becomes {"_raw": text}."""
    if isinstance(raw, dict):
        return raw
    try:
        data = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"_raw": str(raw)}
    return data if isinstance(data, dict) else {"_raw": str(raw)}


def parse(fmt: Format, body: dict[str, Any]) -> Reply:
    """Text, calls and usage of a reply body in `fmt`."""
    usage = body.get("usage") or {}
    if fmt == "chat":
        message = (body.get("choices") or [{}])[0].get("message") or {}
        calls = [
            ToolCall(
                c.get("id") or f"call_{i}",
                c["function"]["name"],
                _args(c["function"].get("arguments")),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        ]
        prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        return Reply(message.get("content") or "", calls, prompt or 0, completion or 0)
    if fmt == "messages":
        content = body.get("content") or []
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        calls = [
            ToolCall(b["id"], b["name"], _args(b.get("input")))
            for b in content
            if b.get("type") == "tool_use"
        ]
        return Reply(
            text, calls, usage.get("input_tokens", 0) or 0, usage.get("output_tokens", 0) or 0
        )
    items = body.get("output") or []
    text = "".join(
        part.get("text", "")
        for item in items
        if item.get("type") == "message"
        for part in item.get("content") or []
    )
    calls = [
        ToolCall(
            item.get("call_id") or item.get("id") or "", item["name"], _args(item.get("arguments"))
        )
        for item in items
        if item.get("type") == "function_call"
    ]
    return Reply(text, calls, usage.get("input_tokens", 0) or 0, usage.get("output_tokens", 0) or 0)


FENCED = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>|```(?:json)?\s*(\{.*?\})\s*```", re.S)


def text_calls(reply: Reply) -> Reply:
    """`reply` with the tool calls a model wrote as text, for models that do not use the
    wire's tool calls (small local ones write `{"name": ..., "arguments": {...}}` in a
    ```json fence or <tool_call> tags): calls to offered tools become the reply's calls, and
    its text is dropped, as a harness that parses text calls would keep its history."""
    if reply.calls:
        return reply
    offered = {name for name, *_ in TOOLS}
    calls = []
    for match in FENCED.finditer(reply.text):
        try:
            call = json.loads(match.group(1) or match.group(2))
        except ValueError:
            continue
        args = call.get("arguments", call.get("parameters")) if isinstance(call, dict) else None
        if isinstance(args, dict) and call.get("name") in offered:
            calls.append(ToolCall(f"text_{len(calls)}", call["name"], args))
    if not calls:
        return reply
    return Reply("", calls, reply.prompt_tokens, reply.completion_tokens)
