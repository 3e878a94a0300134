"""Gemini generateContent (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent?alt=sse`): parse into a Conversation; splice a plan back in. Positions
are `(content index, part index)` of a `functionResponse` part.

Calls are `model` parts `functionCall {id?, name, args}`; results are `user` parts
`functionResponse {id?, name, response}`. The API reads `response.output` as the output and
`response.error` as the error (google-genai `FunctionResponse`); Gemini CLI sends
`{"error": message}` for a failed tool and `{"output": text}` otherwise, so a non-empty `error`
is an explicit flag. A response with `willContinue: true` (a NON_BLOCKING call that will
answer again) is not a result: only the final one is judged. Without ids, a response answers
the oldest unanswered call of its name.
The REST API takes camelCase or snake_case keys: both are read, and splices keep the client's.
Text goes into `response` (never into `parts`, which hold media only), so `parts` stay valid.
`systemInstruction` is a Content; the summary is one more text part at its end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

import orjson

from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, digest
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.reply import Reply, ReplyCall
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire.base import (
    WireFormat,
    count,
    json_reply,
    splice_parts,
    sse_data,
    text_tokens,
)

API_KEY_HEADER = "x-goog-api-key"
PATH_PREFIXES = ("/v1beta/models/", "/v1/models/")
METHODS = (":generateContent", ":streamGenerateContent")
STATUS = {400: "INVALID_ARGUMENT", 409: "ABORTED", 413: "INVALID_ARGUMENT"}
STATUS |= {502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
TEXT_LIMIT = 65536  # a structured response is read as JSON text up to this many characters


def _get(node: Mapping[str, Any], camel: str, snake: str) -> tuple[str, Any]:
    """(key used, value) for a field the REST API accepts in either case (camelCase, as the
    SDKs send it, when neither is present)."""
    if snake in node and camel not in node:
        return snake, node[snake]
    return camel, node.get(camel)


def _function_call(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = _get(part, "functionCall", "function_call")[1]
    return value if isinstance(value, Mapping) else None


def _function_response(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = _get(part, "functionResponse", "function_response")[1]
    return value if isinstance(value, Mapping) else None


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    """A ToolCall from a `functionCall` (read on first use, not at parse)."""
    return ToolCall(str(call.get("id") or ""), str(call.get("name", "")), call.get("args"))


def _response_error(response: Any) -> bool | None:
    """True when `response.error` is set (Gemini CLI, google-genai); None: judge the text."""
    if isinstance(response, Mapping) and response.get("error") not in (None, "", {}, []):
        return True
    return None


def result_text(response: Any) -> str:
    """What the tool said: `error` (a string) over `output`, else the response as JSON."""
    if isinstance(response, Mapping):
        for key in ("error", "output", "result", "content"):
            value = response.get(key)
            if isinstance(value, str) and value:
                return value
    if isinstance(response, str):
        return response
    try:
        return orjson.dumps(response).decode()[:TEXT_LIMIT]
    except TypeError:
        return ""


def _texts(content: Mapping[str, Any]) -> str:
    parts = content.get("parts")
    return "\n".join(
        part["text"]
        for part in (parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


def _model_of(payload: Mapping[str, Any]) -> str:
    model = payload.get("model")
    return model.removeprefix("models/") if isinstance(model, str) else ""


def parse(payload: dict[str, Any]) -> Conversation | None:
    """The neutral view of a generateContent request; None without a `contents` list."""
    contents = payload.get("contents")
    if not isinstance(contents, list):
        return None
    instruction = _get(payload, "systemInstruction", "system_instruction")[1]
    system = _texts(instruction) if isinstance(instruction, Mapping) else ""
    system = instruction if isinstance(instruction, str) else system
    conv = Conversation(_model_of(payload), system, "", length=len(contents))
    if system:
        conv.texts.append(system)
    by_id: dict[str, Mapping[str, Any]] = {}
    by_name: dict[str, list[Mapping[str, Any]]] = {}  # unanswered calls without an id
    last_result_at = -1
    for i, content in enumerate(contents):
        if not isinstance(content, Mapping):
            continue
        parts = content.get("parts")
        parts = parts if isinstance(parts, list) else []
        if content.get("role") == "model":
            if i < len(contents) - 1:  # a trailing model text is a prefill
                conv.batch_start = len(conv.results)
            for part in parts:
                call = _function_call(part) if isinstance(part, Mapping) else None
                if call is None:
                    continue
                if call.get("id"):
                    by_id[str(call["id"])] = call
                else:
                    by_name.setdefault(str(call.get("name", "")), []).append(call)
            continue
        texts = []
        for j, part in enumerate(parts):
            if not isinstance(part, Mapping):
                continue
            answer = _function_response(part)
            if answer is None:
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                continue
            if _get(answer, "willContinue", "will_continue")[1] is True:
                continue  # a generator's partial response: only the final one is a result
            name = str(answer.get("name", ""))
            call_id = str(answer.get("id") or "")
            call = by_id.get(call_id) if call_id else None
            if call is None and by_name.get(name):
                call = by_name[name].pop(0)
            call_id = call_id or f"gemini-{i}-{j}"  # fixed by position: history only grows
            response = answer.get("response")
            conv.results.append(
                ToolResult(
                    call_id,
                    response,
                    (i, j),
                    call,
                    _response_error(response),
                    _tool_call,
                    result_text,
                )
            )
            last_result_at = i
        if texts:
            text = "\n".join(texts)
            conv.texts.append(text)
            if last_result_at != i:  # typed by the user, not a batch of function responses
                conv.user_anchors.append((i, digest(text)))
                conv.first_user = conv.first_user or text
    last = contents[-1] if contents else None
    conv.ends_with_result = bool(contents) and last_result_at == len(contents) - 1
    conv.ends_with_user = isinstance(last, Mapping) and last.get("role", "user") == "user"
    conv.ends_with_user = conv.ends_with_user and not conv.ends_with_result
    conv.fingerprint()
    return conv


def _with_text(part: dict[str, Any], text: str) -> dict[str, Any]:
    """A copy of a `functionResponse` part with `text` after the error or output it carries
    (a structured response gains a `recovery` field)."""
    key, answer = _get(part, "functionResponse", "function_response")
    response = answer.get("response")
    response = dict(response) if isinstance(response, Mapping) else {"output": response}
    field = next(
        (k for k in ("error", "output") if isinstance(response.get(k), str) and response[k]),
        None,
    )
    if field is None:
        response["recovery"] = text
    else:
        response[field] = response[field] + "\n\n" + text
    return {**part, key: {**answer, "response": response}}


def splice(payload: dict[str, Any], plan: Plan, placement: Placement) -> dict[str, Any]:
    """A copy of `payload` with the plan applied; contents not touched are shared. Blocks go
    inside their functionResponse (`append`) or as one text part closing the content
    (`message`): functionResponse parts stay first either way."""
    contents = splice_parts(
        payload["contents"],
        "parts",
        plan.appends,
        placement.mode,
        _with_text,
        lambda text: {"text": text},
    )
    out = {**payload, "contents": contents}
    if plan.summary:
        key, instruction = _get(payload, "systemInstruction", "system_instruction")
        out[key] = _with_summary(instruction, plan.summary)
    return out


def _with_summary(instruction: Any, summary: str) -> Any:
    """The system instruction with the summary as its last text part."""
    if isinstance(instruction, Mapping):
        parts = instruction.get("parts")
        return {
            **instruction,
            "parts": [*(parts if isinstance(parts, list) else ()), {"text": summary}],
        }
    if isinstance(instruction, str) and instruction:
        return instruction + "\n\n" + summary
    return {"parts": [{"text": summary}]}


def error_body(status: int, message: str, kind: str) -> bytes:
    """Google's error shape: `{"error": {"code", "message", "status"}}`."""
    code = STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return orjson.dumps({"error": {"code": status, "message": message, "status": code}})


def stream_error(message: str, kind: str) -> bytes:
    """An SSE frame `data: {"error": ...}`: google-genai raises an APIError on it."""
    status = 504 if kind.endswith("timeout") else 502
    return b"data: " + error_body(status, message, kind) + b"\n\n"


def model_of_path(path: str) -> str:
    """`gemini-2.5-pro` from `/v1beta/models/gemini-2.5-pro:generateContent`: the request
    body names no model, and the model's window sets the token budget."""
    for prefix in PATH_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :].partition(":")[0]
    return ""


def count_tokens(payload: dict[str, Any], model: str) -> int:
    """Prompt tokens of the system instruction and the contents' text."""
    return text_tokens(payload, ("systemInstruction", "system_instruction", "contents"), model)


def matches(path: str) -> bool:
    """`/v1beta/models/{model}:generateContent` or `...:streamGenerateContent`."""
    for prefix in PATH_PREFIXES:
        if path.startswith(prefix):
            model = path[len(prefix) :]
            return "/" not in model and model.endswith(METHODS) and model[0] != ":"
    return False


def with_query_key(headers: dict[str, str], query: bytes) -> dict[str, str]:
    """The headers the session is scoped by: the `key` query parameter, when the client sends
    its API key that way, counts as `x-goog-api-key` (never forwarded, never logged)."""
    if headers.get(API_KEY_HEADER) or b"key=" not in query:
        return headers
    key = next((v for k, v in parse_qsl(query.decode("latin-1")) if k == "key" and v), None)
    return {**headers, API_KEY_HEADER: key} if key else headers


def _chunk_reply(reply: Reply, chunk: Any) -> None:
    """Function calls, usage and finish reason of one GenerateContentResponse (a stream's
    chunks each carry their own calls; usage is cumulative: the last one counts)."""
    if not isinstance(chunk, Mapping):
        return
    candidates = chunk.get("candidates")
    for candidate in candidates[:1] if isinstance(candidates, list) else ():
        if not isinstance(candidate, Mapping):
            continue
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            call = _function_call(part) if isinstance(part, Mapping) else None
            if call is not None:
                arguments = orjson.dumps(call.get("args") or {}).decode()
                reply.calls.append(
                    ReplyCall(str(call.get("id") or ""), str(call.get("name", "")), arguments)
                )
        reason = _get(candidate, "finishReason", "finish_reason")[1]
        reply.stop_reason = str(reason or reply.stop_reason)
    usage = _get(chunk, "usageMetadata", "usage_metadata")[1]
    if isinstance(usage, Mapping):
        reply.input = count(usage, "promptTokenCount") or count(usage, "prompt_token_count")
        reply.cached = count(usage, "cachedContentTokenCount") or count(
            usage, "cached_content_token_count"
        )
        output = ("candidatesTokenCount", "thoughtsTokenCount")
        reply.output = sum(count(usage, key) for key in output)
        reply.usage = True
    version = _get(chunk, "modelVersion", "model_version")[1]
    reply.model = str(version or reply.model)


def read_reply(body: bytes, sse: bool) -> Reply | None:
    """A generateContent response, or a stream of them (`alt=sse`)."""
    reply = Reply()
    if sse:
        for _, chunk in sse_data(body):
            _chunk_reply(reply, chunk)
    else:
        data = json_reply(body)
        for chunk in data if isinstance(data, list) else [data]:  # a JSON-array stream
            _chunk_reply(reply, chunk)
    return reply


FORMAT = WireFormat(
    name="gemini",
    paths=(),
    upstream="gemini_upstream",
    upstream_prefix="",
    parse=parse,
    splice=splice,
    error_body=error_body,
    stream_error=stream_error,
    count_tokens=count_tokens,
    passthrough_prefixes=("/v1beta/",),
    marker_headers=(API_KEY_HEADER,),
    path_match=matches,
    scope_headers=with_query_key,
    path_model=model_of_path,
    read_reply=read_reply,
)
