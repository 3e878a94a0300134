"""OpenAI Chat Completions: parse a request body into a Conversation; splice a plan back in.

Tool results are `role: "tool"` messages (`tool_call_id`), or, for frameworks like smolagents,
`role: "user"` text starting `Call id: ...`. Legacy `role: "function"` results are read too.
"""

from __future__ import annotations

import ast
from typing import Any

from recovery_proxy import tokens
from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, digest, text_of
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.reply import Reply, ReplyCall
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.base import CallQueue, WireFormat, count, json_reply, sse_data
from recovery_proxy.wire.openai_errors import chat_stream_error, error_body

SMOL_PREFIX = "Call id: "
SMOL_ERROR = "\nError:\n"
SMOL_OBSERVATION = "\nObservation:\n"
MAX_SEGMENTS = 200
SMOL_CALLS = "Calling tools:\n"
SYSTEM_ROLES = ("system", "developer")


def _smol_calls(text: str) -> list[ToolCall]:
    """smolagents writes its tool calls as assistant text: `Calling tools:\\n[{...}]`."""
    if not text.startswith(SMOL_CALLS) or len(text) > 65536:
        return []
    try:
        items = ast.literal_eval(text[len(SMOL_CALLS) :].strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    calls = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            calls.append(
                ToolCall(
                    str(item.get("id", "")),
                    str(item["function"].get("name", "")),
                    item["function"].get("arguments"),
                )
            )
    return calls


def _smol_result_id(text: str) -> str:
    """The call id of a smolagents result sent as user text: `Call id: ID\nError:\n...`."""
    if not text.startswith(SMOL_PREFIX):
        return ""
    first, _, rest = text[:512].partition("\n")
    if not rest.startswith(("Error:\n", "Observation:\n")):
        return ""
    return first[len(SMOL_PREFIX) :].strip()


def _smol_error_segments(text: str, index: int) -> list[ToolResult]:
    """smolagents >= 1.2x sends a failed step as `Error:\n...` user text, appended to the
    previous user message, with no assistant tool call. Each segment is one result, its id
    fixed by where it starts; its block goes right after it (offset), so the text the model
    saw last turn stays a prefix of what it sees now."""
    results: list[ToolResult] = []
    start = 0 if text.startswith(SMOL_ERROR[1:]) else text.find(SMOL_ERROR)
    observation = -2  # the next observation at or after the segment; -1: none (found once)
    while start != -1 and len(results) < MAX_SEGMENTS:
        body_start = text.index("Error:\n", start) + len("Error:\n")
        if observation != -1 and observation < body_start:  # each text scanned once, not
            observation = text.find(SMOL_OBSERVATION, body_start)  # once per segment
        following = (i for i in (text.find(SMOL_ERROR, body_start), observation) if i != -1)
        end = min(following, default=len(text))
        body = text[body_start:end].rstrip("\n")
        call = _smol_error_call(body, f"smol-{index}-{start}")
        results.append(ToolResult(call.id, body, (index, body_start + len(body)), call))
        start = text.find(SMOL_ERROR, end) if end < len(text) else -1
    return results


def _smol_error_call(body: str, call_id: str) -> ToolCall:
    """The call named in `Error executing tool 'NAME' with arguments {...}: ...`."""
    prefix = "Error executing tool '"
    if not body.startswith(prefix):
        return ToolCall(call_id, "unknown_tool_call", None)
    name, _, rest = body[len(prefix) :].partition("' with arguments ")
    arguments: Any = None
    if rest.startswith("{"):
        depth = 0
        for i, char in enumerate(rest[:4096]):
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0:
                try:
                    arguments = ast.literal_eval(rest[: i + 1])
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    arguments = None
                break
    return ToolCall(call_id, name, arguments)


def _call_id(raw: dict[str, Any]) -> str | None:
    return str(raw.get("id", ""))


def _tool_call(raw: Any) -> ToolCall:
    """A ToolCall from an OpenAI `tool_calls[]` entry (read on first use, not at parse)."""
    fn = raw.get("function")
    fn = fn if isinstance(fn, dict) else {}
    return ToolCall(str(raw.get("id", "")), str(fn.get("name", "")), fn.get("arguments"))


def parse(payload: dict[str, Any]) -> Conversation | None:
    """The neutral view of a chat request; None when it has no message list to work on."""
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    model = payload.get("model") if isinstance(payload.get("model"), str) else ""
    conv = Conversation(model=model, system="", first_user="", length=len(messages))
    calls: dict[str, Any] = {}  # call id -> raw OpenAI tool call (or a ToolCall); built lazily
    turn: CallQueue | None = None  # the latest turn's calls, when its ids repeat
    last_result_at = -1
    last_function_call: ToolCall | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            if index < len(messages) - 1:  # a trailing assistant text is a prefill
                conv.batch_start = len(conv.results)
            tool_calls = message.get("tool_calls") or ()
            for raw in tool_calls:
                if isinstance(raw, dict):
                    calls[str(raw.get("id", ""))] = raw
            turn = CallQueue.of(tool_calls, _call_id) if len(tool_calls) > 1 else None
            legacy = message.get("function_call")
            if isinstance(legacy, dict):
                last_function_call = ToolCall(
                    f"fn-{index}", str(legacy.get("name", "")), legacy.get("arguments")
                )
            content = message.get("content")
            if isinstance(content, str) and content.startswith(SMOL_CALLS):
                for call in _smol_calls(content):
                    calls[call.id] = call
            if content and not message.get("tool_calls"):  # a call brings a result: progress
                conv.assistant_said(text_of(content))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            conv.results.append(
                ToolResult(
                    call_id,
                    message.get("content"),
                    index,
                    (turn and turn.answer(call_id)) or calls.get(call_id),
                    None,
                    _tool_call,
                )
            )
            last_result_at = index
        elif role == "function" and last_function_call is not None:
            conv.results.append(
                ToolResult(
                    last_function_call.id,
                    text_of(message.get("content")),
                    index,
                    last_function_call,
                )
            )
            last_function_call = None
            last_result_at = index
        elif role in SYSTEM_ROLES:
            text = text_of(message.get("content"))
            conv.system = conv.system or text
            conv.texts.append(text)
        elif role == "user":
            text = text_of(message.get("content"))
            conv.texts.append(text)
            conv.user_anchors.append((index, digest(text)))
            conv.first_user = conv.first_user or text
            call_id = _smol_result_id(text)
            if call_id:
                raw_call = calls.get(call_id)
                conv.results.append(ToolResult(call_id, text, index, raw_call, None, _tool_call))
                last_result_at = index
            elif SMOL_ERROR in text or text.startswith(SMOL_ERROR[1:]):
                segments = _smol_error_segments(text, index)
                conv.results += segments
                last_result_at = index if segments else last_result_at
                if not segments:
                    conv.human_said(text)
            else:
                conv.human_said(text)
    last = messages[-1] if messages else None
    conv.ends_with_user = isinstance(last, dict) and last.get("role") == "user"
    conv.ends_with_result = bool(messages) and last_result_at == len(messages) - 1
    conv.fingerprint()
    return conv


def _append(message: dict[str, Any], text: str) -> None:
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = [*content, {"type": "text", "text": "\n\n" + text}]
    else:
        message["content"] = (content if isinstance(content, str) else "") + "\n\n" + text


def _insert(message: dict[str, Any], offset: int, text: str) -> None:
    """Insert a block inside a text content (a string, or a list holding one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = content[:offset] + "\n\n" + text + content[offset:]
        return
    parts = (
        [p for p in content if isinstance(p, dict) and "text" in p]
        if isinstance(content, list)
        else []
    )
    if len(parts) == 1:
        part = parts[0]
        new_part = {**part, "text": part["text"][:offset] + "\n\n" + text + part["text"][offset:]}
        message["content"] = [new_part if p is part else p for p in content]
    else:
        _append(message, text)


def splice(payload: dict[str, Any], plan: Plan, placement: Placement) -> dict[str, Any]:
    """A copy of `payload` with the plan applied; messages not touched are shared, not copied.
    Positions are message indexes, or (index, offset) inside a smolagents text."""
    messages: list[Any] = list(payload["messages"])
    inline = {key: text for key, text in plan.appends.items() if isinstance(key, tuple)}
    appends = {key: text for key, text in plan.appends.items() if not isinstance(key, tuple)}
    for (index, offset), text in sorted(inline.items(), reverse=True):
        messages[index] = dict(messages[index])
        _insert(messages[index], offset, text)
    if placement.mode == "append":
        for index, text in appends.items():
            messages[index] = dict(messages[index])
            _append(messages[index], text)
    else:
        messages = _insert_after_batches(messages, appends, placement.message_role)
    summary = plan.summary
    if summary:
        for i, message in enumerate(messages):
            if isinstance(message, dict) and message.get("role") in SYSTEM_ROLES:
                messages[i] = dict(message)
                _append(messages[i], summary)
                break
        else:
            messages.insert(0, {"role": "system", "content": summary})
    return {**payload, "messages": messages}


def _insert_after_batches(messages: list[Any], appends: dict[int, str], role: str) -> list[Any]:
    """`message` placement: one message after each batch of consecutive tool results."""
    out: list[Any] = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        out.append(message)
        if index in appends:
            pending.append(appends[index])
        following = messages[index + 1] if index + 1 < len(messages) else None
        batch_ends = not (isinstance(following, dict) and following.get("role") == "tool")
        if pending and batch_ends:
            out.append({"role": role, "content": "\n\n".join(pending)})
            pending = []
    return out


def count_tokens(payload: dict[str, Any], model: str) -> int:
    """Prompt tokens of the message list."""
    messages = payload.get("messages")
    return tokens.count_messages(messages if isinstance(messages, list) else [], model)


def _chat_usage(reply: Reply, usage: Any) -> None:
    if isinstance(usage, dict):
        details = usage.get("prompt_tokens_details")
        reply.input = count(usage, "prompt_tokens")
        reply.cached = count(details, "cached_tokens")
        reply.output = count(usage, "completion_tokens")
        reply.usage = True


def read_reply(body: bytes, sse: bool) -> Reply | None:
    """A chat completion (JSON), or its `chat.completion.chunk` stream: tool call deltas are
    joined by index; usage arrives in the last chunk when the client asked for it."""
    reply = Reply()
    chunks = sse_data(body) if sse else [("", json_reply(body))]
    parts: dict[int, dict[str, Any]] = {}
    for _, chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        reply.model = str(chunk.get("model") or reply.model)
        _chat_usage(reply, chunk.get("usage"))
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            continue
        reply.stop_reason = str(choice.get("finish_reason") or reply.stop_reason)
        message = choice.get("delta" if sse else "message")
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for n, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, dict):
                continue
            part = parts.setdefault(count(call, "index") if sse else n, {"arguments": []})
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            part["id"] = part.get("id") or call.get("id") or ""
            part["name"] = part.get("name") or function.get("name") or ""
            if isinstance(function.get("arguments"), str):
                part["arguments"].append(function["arguments"])
    for _, part in sorted(parts.items()):
        reply.calls.append(
            ReplyCall(str(part["id"]), str(part["name"]), "".join(part["arguments"]))
        )
    return reply


FORMAT = WireFormat(
    name="openai_chat",
    paths=("/v1/chat/completions",),
    upstream="upstream",
    upstream_prefix="/v1",
    parse=parse,
    splice=splice,
    error_body=error_body,
    stream_error=chat_stream_error,
    count_tokens=count_tokens,
    read_reply=read_reply,
)
