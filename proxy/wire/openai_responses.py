"""OpenAI Responses (`POST /v1/responses`): parse `input[]` items into a Conversation; splice
a plan back in. Positions are item indexes.

Tool outputs: `function_call_output` and `custom_tool_call_output` (`call_id`, `output` a
string or a list of `input_text`/`input_image`/`input_file` parts), `local_shell_call_output`
(identified by `id`; openai-agents sends `call_id`), `shell_call_output` (chunks with an
`outcome` flag) and `apply_patch_call_output` (`status` flag). `instructions` is the system
text. With `previous_response_id` (or `conversation`) the server holds the earlier turns:
the history is partial and absent items prove nothing.
"""

from __future__ import annotations

from typing import Any

import orjson

from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, digest, text_of
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.reply import Reply, ReplyCall
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.base import WireFormat, count, json_reply, listed, sse_data, text_tokens
from recovery_proxy.wire.openai_errors import error_body, responses_stream_error

CALLS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "shell_call", "apply_patch_call"}
)
OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
    }
)
SYSTEM_ROLES = ("system", "developer")
PATCH_FILE = ("*** Update File: ", "*** Add File: ", "*** Delete File: ")
SHELL_FLAGS = ("-c", "-lc", "/c", "-Command")


def _shell_command(argv: Any) -> str:
    """`["bash", "-lc", "npm test"]` -> `npm test`; other argv lists joined by spaces."""
    if not isinstance(argv, list):
        return ""
    words = [str(word) for word in argv]
    if len(words) >= 3 and words[-2] in SHELL_FLAGS:
        return words[-1]
    return " ".join(words)


def _patch_path(patch: str) -> str:
    """The first file a Codex `apply_patch` input touches (`*** Update File: src/app.py`)."""
    for line in patch[:4096].splitlines():
        if line.startswith(PATCH_FILE):
            return line.partition(": ")[2].strip()
    return ""


def _tool_call(item: dict[str, Any]) -> ToolCall:
    """A ToolCall from any call item (read on first use, not at parse)."""
    kind = item.get("type")
    call_id = str(item.get("call_id") or item.get("id") or "")
    name = str(item.get("name") or kind)
    if kind == "custom_tool_call":
        text = item.get("input") if isinstance(item.get("input"), str) else ""
        path = _patch_path(text)
        return ToolCall(call_id, name, {"path": path, "input": text} if path else {"input": text})
    if kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        arguments = {"command": _shell_command(action.get("command"))}
        if action.get("working_directory"):
            arguments["workdir"] = action["working_directory"]
        return ToolCall(call_id, "local_shell", arguments)
    if kind == "shell_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        commands = action.get("commands") if isinstance(action.get("commands"), list) else []
        return ToolCall(call_id, "shell", {"command": "\n".join(map(str, commands))})
    if kind == "apply_patch_call":
        op = item.get("operation") if isinstance(item.get("operation"), dict) else {}
        return ToolCall(
            call_id, "apply_patch", {"path": op.get("path"), "operation": op.get("type")}
        )
    return ToolCall(call_id, name, item.get("arguments"))


def _exec_text(output: Any) -> str:
    """Codex's JSON exec output `{"output", "metadata": {"exit_code", "duration_seconds"}}`
    read as its text form `Exit code: N\\nWall time: X seconds\\nOutput:\\n...` (the form the
    rules know); anything else as plain text."""
    if isinstance(output, str) and output.startswith('{"output"'):
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output
        meta = data.get("metadata") if isinstance(data, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            seconds = meta.get("duration_seconds", 0)
            return f"Exit code: {meta['exit_code']}\nWall time: {seconds} seconds\nOutput:\n" + str(
                data.get("output", "")
            )
    return text_of(output)


def _shell_chunks(output: Any) -> tuple[str, bool | None]:
    """The text of `shell_call_output` chunks and their flag: a timeout or a non-zero exit
    in any chunk is a failure; exit 0 everywhere is a success."""
    texts: list[str] = []
    failed: bool | None = None
    for chunk in output if isinstance(output, list) else ():
        if not isinstance(chunk, dict):
            continue
        texts += [chunk[k] for k in ("stdout", "stderr") if isinstance(chunk.get(k), str)]
        outcome = chunk.get("outcome") if isinstance(chunk.get("outcome"), dict) else {}
        if outcome.get("type") == "timeout" or outcome.get("exit_code") not in (None, 0):
            failed = True
        elif outcome.get("type") == "exit" and failed is None:
            failed = False
    return "\n".join(t for t in texts if t), failed


def _result(item: dict[str, Any], index: int, calls: dict[str, Any]) -> ToolResult:
    kind = item.get("type")
    call_id = str(item.get("call_id") or item.get("id") or "")
    call = calls.get(call_id)
    if kind == "shell_call_output":
        text, failed = _shell_chunks(item.get("output"))
        return ToolResult(call_id, text, index, call, failed, _tool_call)
    if kind == "apply_patch_call_output":
        flag = {"failed": True, "completed": False}.get(str(item.get("status")))
        return ToolResult(call_id, item.get("output"), index, call, flag, _tool_call)
    return ToolResult(call_id, item.get("output"), index, call, None, _tool_call, _exec_text)


def parse(payload: dict[str, Any]) -> Conversation | None:
    """The neutral view of a Responses request; None when `input` is not a list of items."""
    items = payload.get("input")
    if not isinstance(items, list):
        return None
    model = payload.get("model") if isinstance(payload.get("model"), str) else ""
    instructions = payload.get("instructions")
    system = instructions if isinstance(instructions, str) else ""
    partial = bool(payload.get("previous_response_id") or payload.get("conversation"))
    conv = Conversation(model, system, "", length=len(items), partial=partial)
    if system:
        conv.texts.append(system)
    calls: dict[str, Any] = {}  # call id -> raw call item
    last_result_at = -1
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in CALLS:
            if conv.batch_start < len(conv.results):
                conv.batch_start = len(conv.results)  # the first call of a new turn
            for key in ("call_id", "id"):  # a local shell output may name either
                if item.get(key):
                    calls[str(item[key])] = item
        elif kind in OUTPUTS:
            conv.results.append(_result(item, index, calls))
            last_result_at = index
        elif kind == "compaction":  # the encrypted summary: items before it are dropped
            identity = item.get("encrypted_content") or item.get("id")
            if isinstance(identity, str) and identity:
                conv.compacted_here(identity)
        elif kind in (None, "message"):
            role = item.get("role")
            if role == "user":
                text = text_of(item.get("content"))
                conv.texts.append(text)
                conv.user_anchors.append((index, digest(text)))
                conv.first_user = conv.first_user or text
                conv.human_said(text)
            elif role == "assistant":
                if index < len(items) - 1:  # a trailing assistant text is a prefill
                    conv.batch_start = len(conv.results)
                conv.assistant_said(text_of(item.get("content")))
            elif role in SYSTEM_ROLES:
                text = text_of(item.get("content"))
                conv.system = conv.system or text
                conv.texts.append(text)
    last = items[-1] if items else None
    conv.ends_with_user = isinstance(last, dict) and last.get("role") == "user"
    conv.ends_with_result = bool(items) and last_result_at == len(items) - 1
    conv.fingerprint()
    return conv


def _append(item: dict[str, Any], text: str) -> dict[str, Any]:
    """A copy of an output item with `text` after its output."""
    output = item.get("output")
    if item.get("type") == "shell_call_output":
        if not isinstance(output, list) or not output or not isinstance(output[-1], dict):
            return item
        last = output[-1]
        stderr = last.get("stderr") if isinstance(last.get("stderr"), str) else ""
        chunk = {**last, "stderr": f"{stderr}\n\n{text}" if stderr else text}
        return {**item, "output": [*output[:-1], chunk]}
    if isinstance(output, list):
        return {**item, "output": [*output, {"type": "input_text", "text": "\n\n" + text}]}
    if isinstance(output, str) and output:
        return {**item, "output": output + "\n\n" + text}
    return {**item, "output": text}


def _insert_after_batches(items: list[Any], appends: dict[Any, str], role: str) -> list[Any]:
    """`message` placement: one message item after each batch of consecutive outputs."""
    out: list[Any] = []
    pending: list[str] = []
    for index, item in enumerate(items):
        out.append(item)
        if index in appends:
            pending.append(appends[index])
        following = items[index + 1] if index + 1 < len(items) else None
        if pending and not (isinstance(following, dict) and following.get("type") in OUTPUTS):
            text = "\n\n".join(pending)
            out.append({"type": "message", "role": role, "content": [_input_text(text)]})
            pending = []
    return out


def _input_text(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


def splice(payload: dict[str, Any], plan: Plan, placement: Placement) -> dict[str, Any]:
    """A copy of `payload` with the plan applied; items not touched are shared, not copied."""
    items: list[Any] = list(payload["input"])
    if placement.mode == "append":
        for index, text in plan.appends.items():
            items[index] = _append(items[index], text)
    elif plan.appends:
        items = _insert_after_batches(items, plan.appends, placement.message_role)
    out = {**payload, "input": items}
    for text in (plan.summary, plan.ledger):
        if text:
            instructions = out.get("instructions")
            if isinstance(instructions, str) and instructions:
                out["instructions"] = instructions + "\n\n" + text
            else:
                out["instructions"] = text
    return out


COMPACT_PATH = "/v1/responses/compact"


def compacting(payload: dict[str, Any], path: str, tokens: int) -> bool:
    """`POST /v1/responses/compact`, or a `context_management` compaction entry whose
    `compact_threshold` this request's estimated prompt reaches (the provider compacts in
    this response). The Responses API has no summarisation prompt of its own to extend:
    the ledger goes into `instructions`, which its compaction pass reads."""
    if path == COMPACT_PATH:
        return True
    entries = payload.get("context_management")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("type") == "compaction":
            threshold = entry.get("compact_threshold")
            if isinstance(threshold, int) and tokens >= threshold:
                return True
    return False


def count_tokens(payload: dict[str, Any], model: str) -> int:
    """Prompt tokens of the instructions and input items' text."""
    return text_tokens(payload, ("instructions", "input"), model)


def _response_reply(reply: Reply, response: Any) -> None:
    """Calls (every call item kind, read as the request side reads them), usage and status
    of a `response` object."""
    if not isinstance(response, dict):
        return
    for item in listed(response, "output"):
        if isinstance(item, dict) and item.get("type") in CALLS:
            call = _tool_call(item)
            arguments = call.raw_arguments
            if not isinstance(arguments, str):
                arguments = orjson.dumps(arguments).decode()
            reply.calls.append(ReplyCall(call.id, call.name, arguments))
    usage = response.get("usage")
    if isinstance(usage, dict):
        details = usage.get("input_tokens_details")
        reply.add_usage(
            count(usage, "input_tokens"),
            count(details, "cached_tokens"),
            count(usage, "output_tokens"),
        )
    reply.stop_reason = str(response.get("status") or "")
    reply.model = str(response.get("model") or "")


def read_reply(body: bytes, sse: bool) -> Reply | None:
    """A Responses response: the JSON object, or the stream's final `response.completed`
    (`.incomplete`, `.failed`) event, which carries the whole response."""
    reply = Reply()
    if not sse:
        _response_reply(reply, json_reply(body))
        return reply
    for name, event in sse_data(body):
        kind = name or (event.get("type") if isinstance(event, dict) else "")
        if kind in FINAL_EVENTS and isinstance(event, dict):
            _response_reply(reply, event.get("response"))
    return reply


FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


FORMAT = WireFormat(
    name="openai_responses",
    paths=("/v1/responses", COMPACT_PATH),
    upstream="upstream",
    upstream_prefix="/v1",
    parse=parse,
    splice=splice,
    error_body=error_body,
    stream_error=responses_stream_error,
    count_tokens=count_tokens,
    compacting=compacting,
    read_reply=read_reply,
)
