"""Anthropic Messages (`POST /v1/messages`, also `?beta=true`): parse into a Conversation;
splice a plan back in. Positions are `(message index, block index)` of a `tool_result`.

Calls are assistant `tool_use` blocks (`id`, `name`, `input`); results are user `tool_result`
blocks (`tool_use_id`, `content` a string or blocks, `is_error`). An explicit `is_error`
decides (`true` unless a `not_error` rule reads the exit as an answer, `false` unless the
output is an error `reply`). `system` is a string or text blocks whose `cache_control`
breakpoints are never added, moved or dropped. Claude Code's `system[0]` billing line changes
on every request: it is not system text (it would split every session's fingerprint).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, digest, text_of
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.reply import Reply, ReplyCall
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.base import (
    CallQueue,
    WireFormat,
    count,
    json_reply,
    listed,
    splice_parts,
    sse_data,
    text_tokens,
)

BILLING_LINE = "x-anthropic-billing-header:"
# context_management edits that compact and take `instructions` ("additional instructions
# for summarization", anthropic 2.13 BetaCompact20260112EditParam); other edit types, known
# (clear_tool_uses_*, clear_thinking_*) or future, are never touched.
COMPACT_EDITS = frozenset({"compact_20260112"})
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error"}
ERROR_TYPES |= {409: "invalid_request_error"}
ERROR_TYPES |= {413: "request_too_large", 502: "api_error", 504: "timeout_error"}


def _block_id(block: dict[str, Any]) -> str | None:
    """A tool_use block's id; None for other blocks (text, thinking)."""
    return str(block.get("id", "")) if block.get("type") == "tool_use" else None


def _tool_call(block: dict[str, Any]) -> ToolCall:
    """A ToolCall from a `tool_use` block (read on first use, not at parse)."""
    return ToolCall(str(block.get("id", "")), str(block.get("name", "")), block.get("input"))


def _system_text(system: Any) -> str:
    """The system prompt without Claude Code's per-request billing line."""
    if isinstance(system, str):
        return "" if system.startswith(BILLING_LINE) else system
    if isinstance(system, list):
        return "\n".join(
            block["text"]
            for block in system
            if isinstance(block, dict)
            and isinstance(block.get("text"), str)
            and not block["text"].startswith(BILLING_LINE)
        )
    return ""


CLEAR_KEEP = 3  # tool uses `clear_tool_uses_20250919` keeps when `keep` is not given


def _clearing_keep(payload: Mapping[str, Any]) -> int | None:
    """How many of the newest tool uses a `clear_tool_uses_*` edit keeps; None without one."""
    for edit in _edits(payload):
        if isinstance(edit, dict) and str(edit.get("type", "")).startswith("clear_tool_uses_"):
            keep = edit.get("keep")
            value = keep.get("value") if isinstance(keep, dict) else None
            return value if isinstance(value, int) and value >= 0 else CLEAR_KEEP
    return None


def _compaction_blocks(conv: Conversation, content: list[Any]) -> None:
    """Mark a `compaction` block (threshold `compact_20260112` or on-demand `summarize`) as a
    boundary: the API drops every message before it. A block with neither `content` nor
    `encrypted_content` is a failed compaction, which the API treats as a no-op."""
    for block in content:
        if isinstance(block, dict) and block.get("type") == "compaction":
            identity = block.get("signature") or block.get("encrypted_content")
            identity = identity or block.get("content")
            if isinstance(identity, str) and identity:
                conv.compacted_here(identity)


def parse(payload: dict[str, Any]) -> Conversation | None:
    """The neutral view of a Messages request; None when it has no message list."""
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    model = payload.get("model") if isinstance(payload.get("model"), str) else ""
    system = _system_text(payload.get("system"))
    conv = Conversation(model, system, "", length=len(messages))
    conv.clearing_keep = _clearing_keep(payload)
    if system:
        conv.texts.append(system)
    calls: dict[str, Any] = {}  # tool_use id -> raw tool_use block
    turn: CallQueue | None = None  # the latest turn's calls, when their ids repeat
    last_result_at = -1
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            if i < len(messages) - 1:  # a trailing assistant text is a prefill
                conv.batch_start = len(conv.results)
            turn = CallQueue.of(content, _block_id)
        if isinstance(content, list):
            _compaction_blocks(conv, content)
        if role == "assistant" and isinstance(content, list):
            before = len(calls)
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id", ""))] = block
            if len(calls) == before:  # no tool call (a call brings a result: progress)
                conv.assistant_said(text_of(content))
        elif role == "assistant" and isinstance(content, str):
            conv.assistant_said(content)
        elif role == "user":
            if isinstance(content, str):
                texts = [content]
            else:
                texts = []
                for j, block in enumerate(content if isinstance(content, list) else ()):
                    if not isinstance(block, dict):
                        continue
                    kind = block.get("type")
                    if kind == "tool_result":
                        call_id = str(block.get("tool_use_id", ""))
                        flag = block.get("is_error")
                        conv.results.append(
                            ToolResult(
                                call_id,
                                block.get("content"),
                                (i, j),
                                (turn and turn.answer(call_id)) or calls.get(call_id),
                                flag if isinstance(flag, bool) else None,
                                _tool_call,
                            )
                        )
                        last_result_at = i
                    elif kind == "text" and isinstance(block.get("text"), str):
                        texts.append(block["text"])
            if texts:
                text = "\n".join(texts)
                conv.texts.append(text)
                if last_result_at != i:  # a turn the user typed, not a batch of tool results
                    conv.user_anchors.append((i, digest(text)))
                    conv.first_user = conv.first_user or text
                    conv.human_said(text)
    last = messages[-1] if messages else None
    conv.ends_with_result = bool(messages) and last_result_at == len(messages) - 1
    conv.ends_with_user = isinstance(last, dict) and last.get("role") == "user"
    conv.ends_with_user = conv.ends_with_user and not conv.ends_with_result
    conv.fingerprint()
    return conv


def _with_text(block: dict[str, Any], text: str) -> dict[str, Any]:
    """A copy of a `tool_result` block with `text` after its content (cache_control kept)."""
    content = block.get("content")
    if isinstance(content, list):
        return {**block, "content": [*content, {"type": "text", "text": text}]}
    if isinstance(content, str) and content:
        return {**block, "content": content + "\n\n" + text}
    return {**block, "content": text}


def splice(payload: dict[str, Any], plan: Plan, placement: Placement) -> dict[str, Any]:
    """A copy of `payload` with the plan applied; messages not touched are shared. Blocks go
    inside their tool_result (`append`) or as one text block closing the user message
    (`message`): tool_result blocks stay first in their message either way."""
    messages = splice_parts(
        payload["messages"],
        "content",
        plan.appends,
        placement.mode,
        _with_text,
        lambda text: {"type": "text", "text": text},
    )
    out = {**payload, "messages": messages}
    if plan.summary:
        out["system"] = _with_summary(payload.get("system"), plan.summary)
    if plan.ledger:
        _steer(out, plan.ledger, plan.ledger_default)
    return out


def _edits(payload: Mapping[str, Any]) -> list[Any]:
    management = payload.get("context_management")
    edits = management.get("edits") if isinstance(management, dict) else None
    return edits if isinstance(edits, list) else []


def _on_demand(payload: Mapping[str, Any]) -> bool:
    compaction = payload.get("compaction")
    return isinstance(compaction, dict) and compaction.get("type") == "summarize"


def compacting(payload: dict[str, Any], path: str, tokens: int) -> bool:
    """An on-demand compaction (`compaction: {"type": "summarize"}`, beta compact-2026-09-04)
    or a compaction edit the provider runs when its trigger is reached (compact_20260112)."""
    edits = _edits(payload)
    return _on_demand(payload) or any(
        isinstance(e, dict) and e.get("type") in COMPACT_EDITS for e in edits
    )


def _joined(instructions: Any, ledger: str) -> str:
    if isinstance(instructions, str) and instructions.strip():
        return instructions + "\n\n" + ledger
    return ledger


def _steer(out: dict[str, Any], ledger: str, default: str) -> None:
    """The ledger after the client's compaction instructions. On-demand `instructions`
    replace the provider's prompt, so without the client's own, `default` stands in."""
    if _on_demand(out):
        compaction = out["compaction"]
        own = compaction.get("instructions")
        base = own if isinstance(own, str) and own.strip() else default
        if base.strip():  # never the ledger alone in place of the provider's whole prompt
            out["compaction"] = {**compaction, "instructions": _joined(base, ledger)}
    edits = _edits(out)
    if any(isinstance(e, dict) and e.get("type") in COMPACT_EDITS for e in edits):
        steered = [
            {**e, "instructions": _joined(e.get("instructions"), ledger)}
            if isinstance(e, dict) and e.get("type") in COMPACT_EDITS
            else e
            for e in edits
        ]
        out["context_management"] = {**out["context_management"], "edits": steered}


def _with_summary(system: Any, summary: str) -> Any:
    """The system prompt with the summary last: a text block after the client's blocks (their
    cache_control untouched), or appended to a string."""
    if isinstance(system, list):
        return [*system, {"type": "text", "text": summary}]
    if isinstance(system, str) and system:
        return system + "\n\n" + summary
    return summary


def error_body(status: int, message: str, kind: str) -> bytes:
    """Anthropic's error shape: `{"type": "error", "error": {"type", "message"}}`."""
    type_ = ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return orjson.dumps({"type": "error", "error": {"type": type_, "message": message}})


def stream_error(message: str, kind: str) -> bytes:
    """The SSE `error` event Anthropic ends a failed stream with."""
    type_ = "timeout_error" if kind.endswith("timeout") else "api_error"
    event = {"type": "error", "error": {"type": type_, "message": message}}
    return b"event: error\ndata: " + orjson.dumps(event) + b"\n\n"


def session_hint(headers: Mapping[str, str], payload: dict[str, Any]) -> str | None:
    """Claude Code's session in `metadata.user_id`: `user_<sha>_account_<id>_session_<uuid>`,
    or (since 2.1.78) a JSON string with `session_id`."""
    metadata = payload.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str):
        return None
    if user_id.startswith("{"):
        try:
            data = orjson.loads(user_id)
        except orjson.JSONDecodeError:
            return None
        session = data.get("session_id") if isinstance(data, dict) else None
        return session if isinstance(session, str) and session else None
    _, found, session = user_id.rpartition("_session_")
    return session if found and session else None


def count_tokens(payload: dict[str, Any], model: str) -> int:
    """Prompt tokens of the system prompt and the messages' text."""
    return text_tokens(payload, ("system", "messages"), model)


def _message_reply(reply: Reply, message: Any) -> None:
    """Calls, usage, stop reason and cleared tool uses of a `message` object."""
    if not isinstance(message, dict):
        return
    for block in listed(message, "content"):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            arguments = orjson.dumps(block.get("input", {})).decode()
            reply.calls.append(
                ReplyCall(str(block.get("id", "")), str(block.get("name", "")), arguments)
            )
    _usage(reply, message.get("usage"))
    reply.stop_reason = str(message.get("stop_reason") or reply.stop_reason)
    reply.model = str(message.get("model") or reply.model)
    _cleared(reply, message.get("context_management"))


def _usage(reply: Reply, usage: Any) -> None:
    """Anthropic counts cache reads and writes apart from `input_tokens`: all are input.
    A stream's `message_delta` usage is cumulative: it replaces what `message_start` said."""
    if not isinstance(usage, dict):
        return
    parts = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    if any(key in usage for key in parts):
        reply.input = sum(count(usage, key) for key in parts)
        reply.cached = count(usage, "cache_read_input_tokens")
    if "output_tokens" in usage:
        reply.output = count(usage, "output_tokens")
    reply.usage = True


def _cleared(reply: Reply, management: Any) -> None:
    """`context_management.applied_edits`: tool uses the provider cleared for this turn."""
    edits = management.get("applied_edits") if isinstance(management, dict) else None
    for edit in edits if isinstance(edits, list) else ():
        reply.cleared += count(edit, "cleared_tool_uses")


def read_reply(body: bytes, sse: bool) -> Reply | None:
    """A Messages response (JSON, or the `message_start` ... `message_stop` stream)."""
    reply = Reply()
    if not sse:
        _message_reply(reply, json_reply(body))
        return reply
    inputs: dict[int, list[str]] = {}
    blocks: dict[int, dict[str, Any]] = {}
    for _, event in sse_data(body):
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "message_start":
            _message_reply(reply, event.get("message"))
        elif kind == "content_block_start":
            block = event.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                blocks[count(event, "index")] = block
        elif kind == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("partial_json"), str):
                inputs.setdefault(count(event, "index"), []).append(delta["partial_json"])
        elif kind == "message_delta":
            delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
            reply.stop_reason = str(delta.get("stop_reason") or reply.stop_reason)
            _usage(reply, event.get("usage"))
            _cleared(reply, event.get("context_management"))
    for index, block in sorted(blocks.items()):
        arguments = "".join(inputs.get(index, ())) or orjson.dumps(block.get("input", {})).decode()
        reply.calls.append(
            ReplyCall(str(block.get("id", "")), str(block.get("name", "")), arguments)
        )
    return reply


FORMAT = WireFormat(
    name="anthropic_messages",
    paths=("/v1/messages",),
    upstream="anthropic_upstream",
    upstream_prefix="",
    parse=parse,
    splice=splice,
    error_body=error_body,
    stream_error=stream_error,
    count_tokens=count_tokens,
    session_hint=session_hint,
    passthrough_prefixes=("/v1/messages/",),
    marker_headers=("anthropic-version",),
    compacting=compacting,
    read_reply=read_reply,
)
