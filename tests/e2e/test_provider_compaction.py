"""Provider-side compaction over real HTTP: a mock provider that behaves as documented (drops
everything before a compaction block or item), request shapes from the SDKs' own types
(anthropic 2.13 `BetaCompactionBlockParam`, `BetaCompact20260112EditParam`,
`BetaCompactionConfigParam`; openai 3.57 `ResponseCompactionItemParam`; google-genai 3.6
`FunctionResponse.will_continue`)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import httpx
import orjson

from tests.conftest import ANTHROPIC_UPSTREAM, UPSTREAM, local_rules, make_settings, proxy_client
from tests.upstream import upstream_mock

SUMMARY_HEAD = "## Recent failures (from earlier in this session)"
SYSTEM = "You are a coding agent working in /repo."
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
_ids = itertools.count(1)


def model_view(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the model reads of `messages`: Anthropic drops every message before the last
    message holding a compaction block (the block's summary stands in for them)."""
    start = 0
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "compaction" and b.get("content")
            for b in content
        ):
            start = i
    return messages[start:]


class Claude:
    """A Messages client with server-side compaction: it keeps resending every message and
    the compaction blocks it got back, as the API asks."""

    def __init__(self, client: httpx.AsyncClient, session: str = "compact-1") -> None:
        self.client = client
        self.headers = {
            "x-api-key": "sk-ant-tenant",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "compact-2026-01-12",
            "X-Session-Id": session,
        }
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the port."}]
        self.extra: dict[str, Any] = {
            "context_management": {
                "edits": [
                    {
                        "type": "compact_20260112",
                        "trigger": {"type": "input_tokens", "value": 50000},
                    }
                ]
            }
        }
        self.forwarded: list[dict[str, Any]] = []
        self.seen_by_model: list[list[dict[str, Any]]] = []

    def add_call(self, name: str, arguments: dict[str, Any], output: str, error: bool) -> None:
        tool_id = f"toolu_01{next(_ids):022d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": arguments}],
            }
        )
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        self.messages.append(
            {"role": "user", "content": [{**result, "is_error": True} if error else result]}
        )

    def compacted(self, summary: str) -> None:
        """The response's compaction block, appended as the API returned it."""
        block = {"type": "compaction", "content": summary, "signature": f"sig-{next(_ids)}"}
        self.messages.append({"role": "assistant", "content": [block]})
        self.messages.append({"role": "user", "content": "Continue."})

    async def send(self) -> httpx.Response:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": SYSTEM}
        body |= {"messages": self.messages, **self.extra}

        def answer(request: httpx.Request) -> httpx.Response:
            sent = orjson.loads(request.content)
            self.forwarded.append(sent)
            self.seen_by_model.append(model_view(sent["messages"]))
            return httpx.Response(200, json={"type": "message", "content": []})

        with upstream_mock() as mock:
            mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages").mock(side_effect=answer)
            return await self.client.post(
                "/v1/messages", content=orjson.dumps(body), headers=self.headers
            )

    def system(self) -> str:
        system = self.forwarded[-1]["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)

    def last_result(self) -> str:
        content = self.forwarded[-1]["messages"][-1]["content"]
        return content[-1]["content"]


async def test_anthropic_threshold_compaction_is_a_boundary(client) -> None:
    claude = Claude(client)
    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    await claude.send()
    assert "[Error Recovery Context]" in claude.last_result()
    claude.add_call("list_dir", {"path": "src"}, "index.ts\nsettings.ts", False)
    await claude.send()
    assert SUMMARY_HEAD not in claude.system()  # the failure is still in front of the model

    claude.compacted("The user wants the port changed; config.ts was looked for.")
    await claude.send()
    view = orjson.dumps(claude.seen_by_model[-1]).decode()
    assert "ENOENT" not in view  # the provider dropped the failure...
    assert SUMMARY_HEAD in claude.system()  # ...and the summary carries it
    assert 'read_file(\\"src/config.ts\\")' in orjson.dumps(claude.system()).decode()
    summary = claude.system()

    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    await claude.send()
    assert "has happened 2 times" in claude.last_result()  # repeats count across it
    assert claude.system() == summary  # frozen, byte for byte
    await claude.send()
    assert claude.system() == summary


async def test_anthropic_on_demand_compaction_block_first(client) -> None:
    """`compaction: {"type": "summarize"}` answers with one signed block, which later
    requests send first in `messages` instead of the messages it summarises."""
    claude = Claude(client, session="on-demand")
    claude.extra = {}
    claude.add_call("bash", {"command": "cargo build"}, "error[E0308]: mismatched types", True)
    await claude.send()
    claude.messages = [
        {
            "role": "assistant",
            "content": [{"type": "compaction", "content": "Summary.", "signature": "s1"}],
        },
        {"role": "user", "content": "Continue."},
    ]
    await claude.send()
    assert SUMMARY_HEAD in claude.system()
    assert "cargo build" in claude.system()


async def test_anthropic_failed_compaction_block_is_no_boundary(client) -> None:
    """A block with null content is a failed compaction: the API treats it as a no-op."""
    claude = Claude(client, session="failed-compaction")
    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    await claude.send()
    claude.messages.append(
        {"role": "assistant", "content": [{"type": "compaction", "content": None}]}
    )
    claude.messages.append({"role": "user", "content": "Continue."})
    await claude.send()
    assert SUMMARY_HEAD not in claude.system()


async def test_unknown_context_management_edits_pass_through_untouched(client) -> None:
    claude = Claude(client, session="future-edits")
    future = {"type": "forget_everything_20291231", "keep": {"type": "vibes", "value": 3}}
    claude.extra = {"context_management": {"edits": [future]}}
    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    response = await claude.send()
    assert response.headers["x-recovery-proxy-injected"] == "1"
    assert claude.forwarded[-1]["context_management"] == {"edits": [future]}


class Codex:
    """A Responses client that runs server-side compaction and then drops every item before
    the compaction item (as the docs allow)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.headers = {"Authorization": "Bearer sk-tenant", "session-id": "codex-compact"}
        self.input: list[dict[str, Any]] = [user("Fix the port.")]
        self.forwarded: list[dict[str, Any]] = []
        self.threshold = 200_000

    def add_call(self, name: str, arguments: dict[str, Any], output: str) -> None:
        call_id = f"call_{next(_ids):024d}"
        self.input.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": orjson.dumps(arguments).decode(),
            }
        )
        self.input.append({"type": "function_call_output", "call_id": call_id, "output": output})

    async def send(self) -> httpx.Response:
        body = {"model": "gpt-5.1-codex", "instructions": SYSTEM, "input": self.input}
        body["context_management"] = [{"type": "compaction", "compact_threshold": self.threshold}]
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM}/responses").respond(200, json={"output": []})
            response = await self.client.post(
                "/v1/responses", content=orjson.dumps(body), headers=self.headers
            )
        self.forwarded.append(orjson.loads(route.calls.last.request.content))
        return response


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


async def test_responses_compaction_item_is_a_boundary(client) -> None:
    codex = Codex(client)
    codex.add_call("shell", {"command": "npm test"}, "Error: Cannot find module 'jest'")
    await codex.send()
    assert "[Error Recovery Context]" in codex.forwarded[-1]["input"][-1]["output"]
    compaction = {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB..."}
    codex.input = [codex.input[0], compaction]  # every user message, then the item
    await codex.send()
    assert SUMMARY_HEAD in codex.forwarded[-1]["instructions"]
    assert "npm test" in codex.forwarded[-1]["instructions"]
    summary = codex.forwarded[-1]["instructions"]
    codex.add_call("shell", {"command": "ls"}, "package.json")
    await codex.send()
    assert codex.forwarded[-1]["instructions"] == summary


async def test_gemini_partial_function_responses_are_not_judged(client) -> None:
    """`willContinue: true` marks a NON_BLOCKING call's partial response; only the final one
    is a result, and its block goes into `response`, leaving `parts` as they were."""
    parts = [{"inlineData": {"mimeType": "text/plain", "data": "aGk="}}]
    partial = {
        "id": "fc-1",
        "name": "run",
        "response": {"output": "Error: still going"},
        "willContinue": True,
    }
    final = {
        "id": "fc-1",
        "name": "run",
        "response": {"error": "Error: ENOENT: no such file"},
        "parts": parts,
    }
    call = {
        "role": "model",
        "parts": [{"functionCall": {"id": "fc-1", "name": "run", "args": {"path": "a"}}}],
    }
    path = "/v1beta/models/gemini-2.5-pro:generateContent"
    headers = {"x-goog-api-key": "AIza-test", "X-Session-Id": "gem-partial"}

    async def send(*contents: dict[str, Any]) -> tuple[httpx.Response, dict[str, Any]]:
        body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}, call, *contents]}
        with upstream_mock() as mock:
            route = mock.post(f"{UPSTREAM.removesuffix('/v1')}{path}").respond(200, json={})
            response = await client.post(path, content=orjson.dumps(body), headers=headers)
        return response, orjson.loads(route.calls.last.request.content)

    response, sent = await send({"role": "user", "parts": [{"functionResponse": partial}]})
    assert response.headers["x-recovery-proxy-injected"] == "0"
    assert sent["contents"][-1]["parts"][0]["functionResponse"] == partial
    response, sent = await send(
        {"role": "user", "parts": [{"functionResponse": partial}]},
        {"role": "model", "parts": [{"text": "waiting"}]},
        {"role": "user", "parts": [{"functionResponse": final}]},
    )
    answered = sent["contents"][-1]["parts"][0]["functionResponse"]
    assert "[Error Recovery Context]" in answered["response"]["error"]
    assert answered["parts"] == parts


# Steering the provider's summariser: the ledger in the compaction instructions.

LEDGER_HEAD = "Keep these tool failures from this session in the summary"


async def failed_once(claude: Claude) -> None:
    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    await claude.send()


async def test_compact_edit_instructions_gain_the_ledger_after_the_clients(client) -> None:
    claude = Claude(client, session="steer-edit")
    clear = {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}
    compact = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 50000},
        "pause_after_compaction": True,
        "instructions": "Keep the file paths.",
    }
    claude.extra = {"context_management": {"edits": [clear, compact]}}
    await failed_once(claude)
    edits = claude.forwarded[-1]["context_management"]["edits"]
    assert edits[0] == clear  # other edits untouched
    steered = edits[1]
    assert {k: v for k, v in steered.items() if k != "instructions"} == {
        k: v for k, v in compact.items() if k != "instructions"
    }
    own, _, ledger = steered["instructions"].partition("\n\n")
    assert own == "Keep the file paths."
    assert ledger.startswith(LEDGER_HEAD)
    assert 'read_file(\\"src/config.ts\\")' in orjson.dumps(ledger).decode()
    assert "ENOENT" in ledger


async def test_compact_edit_without_instructions_keeps_the_providers_prompt(client) -> None:
    """compact_20260112 `instructions` are "additional instructions for summarization": the
    provider's own prompt stays; the ledger is all the proxy adds."""
    claude = Claude(client, session="steer-bare")
    await failed_once(claude)
    steered = claude.forwarded[-1]["context_management"]["edits"][0]
    assert steered["instructions"].startswith(LEDGER_HEAD)


async def test_on_demand_summarize_gets_default_prompt_then_ledger(client) -> None:
    """`compaction.instructions` replace the provider's prompt: without the client's own, the
    rules' `provider_instructions` stand in for it."""
    claude = Claude(client, session="steer-on-demand")
    claude.extra = {}
    await failed_once(claude)
    claude.extra = {"compaction": {"type": "summarize"}}
    await claude.send()
    instructions = claude.forwarded[-1]["compaction"]["instructions"]
    assert instructions.startswith("Write a summary of the conversation so far")
    assert LEDGER_HEAD in instructions and "ENOENT" in instructions
    claude.extra = {"compaction": {"type": "summarize", "instructions": "Be brief."}}
    await claude.send()
    assert claude.forwarded[-1]["compaction"]["instructions"].startswith(
        "Be brief.\n\n" + LEDGER_HEAD
    )


async def test_a_compaction_request_without_failures_goes_byte_for_byte(client) -> None:
    claude = Claude(client, session="steer-nothing")
    claude.add_call("list_dir", {"path": "src"}, "index.ts", False)
    claude.extra = {"compaction": {"type": "summarize"}}
    response = await claude.send()
    assert response.headers["x-recovery-proxy-injected"] == "0"
    assert claude.forwarded[-1]["compaction"] == {"type": "summarize"}


async def test_steering_is_a_rule_setting(tmp_path) -> None:
    rules = local_rules(tmp_path, {"steer_provider: true": "steer_provider: false"})
    async with proxy_client(make_settings(rules=str(rules))) as c:
        claude = Claude(c, session="steer-off")
        await failed_once(claude)
        assert "instructions" not in claude.forwarded[-1]["context_management"]["edits"][0]


async def test_responses_compact_endpoint_carries_the_ledger(client) -> None:
    headers = {"Authorization": "Bearer sk-tenant", "session-id": "codex-compact-endpoint"}
    codex = Codex(client)
    codex.headers = headers
    codex.add_call("shell", {"command": "npm test"}, "Error: Cannot find module 'jest'")
    await codex.send()
    body = {"model": "gpt-5.1-codex", "instructions": SYSTEM, "input": codex.input}
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/responses/compact").respond(
            200, json={"object": "response.compaction", "output": []}
        )
        await client.post("/v1/responses/compact", content=orjson.dumps(body), headers=headers)
    sent = orjson.loads(route.calls.last.request.content)
    assert sent["instructions"].startswith(SYSTEM + "\n\n" + LEDGER_HEAD)
    assert "npm test" in sent["instructions"]
    assert sent["input"] == orjson.loads(orjson.dumps(codex.forwarded[-1]["input"]))


async def test_responses_threshold_compaction_gets_the_ledger_once_reached(client) -> None:
    codex = Codex(client)
    codex.headers = {"Authorization": "Bearer sk-tenant", "session-id": "codex-threshold"}
    codex.add_call("shell", {"command": "npm test"}, "Error: Cannot find module 'jest'")
    await codex.send()  # threshold 200,000: far away
    assert LEDGER_HEAD not in codex.forwarded[-1]["instructions"]
    codex.add_call("shell", {"command": "cat big.log"}, "x" * 40_000)  # ~10,000 tokens
    codex.threshold = 5_000
    await codex.send()
    assert LEDGER_HEAD in codex.forwarded[-1]["instructions"]


# Context editing: the provider clears old tool results (and the blocks inside them).


class ClearingClaude(Claude):
    """The mock clears every tool result but the newest `keep` once there are more than
    `keep` (a trigger reached), and reports it in `context_management.applied_edits`."""

    keep = 2

    async def send(self) -> httpx.Response:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": SYSTEM}
        body |= {"messages": self.messages, **self.extra}

        def answer(request: httpx.Request) -> httpx.Response:
            self.forwarded.append(orjson.loads(request.content))
            sent = orjson.loads(request.content)  # the model's view, cleared below
            results = [
                b
                for m in sent["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_result"
            ]
            cleared = results[: -self.keep] if len(results) > self.keep else []
            for block in cleared:  # what the model reads instead
                block["content"] = "[cleared]"
            self.seen_by_model.append(sent["messages"])
            message: dict[str, Any] = {"type": "message", "model": "claude-sonnet-4-5"}
            message |= {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
            message["usage"] = {"input_tokens": 100, "output_tokens": 5}
            if cleared:
                edit = {"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(cleared)}
                message["context_management"] = {
                    "applied_edits": [edit | {"cleared_input_tokens": 50}]
                }
            return httpx.Response(200, json=message)

        with upstream_mock() as mock:
            mock.post(f"{ANTHROPIC_UPSTREAM}/v1/messages").mock(side_effect=answer)
            response = await self.client.post(
                "/v1/messages", content=orjson.dumps(body), headers=self.headers
            )
        for _ in range(20):  # the reply is stored after the response went out
            await asyncio.sleep(0.01)
            if not self.client.app.rewriter.learning:  # type: ignore[attr-defined]
                break
        return response


async def test_cleared_failures_are_kept_in_system(client) -> None:
    claude = ClearingClaude(client, session="clearing")
    clear = {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 2}}
    claude.extra = {"context_management": {"edits": [clear]}}
    claude.add_call("read_file", {"path": "src/config.ts"}, ENOENT, True)
    await claude.send()
    block = claude.last_result()
    assert "[Error Recovery Context]" in block and SUMMARY_HEAD not in claude.system()
    claude.add_call("list_dir", {"path": "src"}, "index.ts\nsettings.ts", False)
    await claude.send()
    assert SUMMARY_HEAD not in claude.system()  # nothing cleared yet: the block is in view
    claude.add_call("read_file", {"path": "src/settings.ts"}, "export const port = 3000;", False)
    await claude.send()  # the provider clears the failure (and its block) now, and says so
    assert "ENOENT" not in orjson.dumps(claude.seen_by_model[-1]).decode()
    await claude.send()
    assert SUMMARY_HEAD in claude.system() and "ENOENT" in claude.system()
    first = claude.forwarded[-1]["messages"][2]["content"][0]["content"]
    assert first == block  # the per-result block is still re-applied byte for byte
    summary = claude.system()
    claude.add_call("list_dir", {"path": "."}, "src", False)
    await claude.send()
    await claude.send()
    assert claude.system() == summary
    metrics = (await client.get("/metrics")).text
    assert "recovery_proxy_compactions_total 1.0" in metrics  # once, not on every clear


async def test_without_a_stand_in_prompt_on_demand_compaction_is_left_alone(tmp_path) -> None:
    """A rules copy without `provider_instructions`: the ledger alone would replace the
    provider's whole summarisation prompt, so the request keeps its own."""
    rules = local_rules(tmp_path, {"  provider_instructions: |-": "  old_instructions: |-"})
    text = (rules / "30-recovery.yaml").read_text()
    (rules / "30-recovery.yaml").write_text(
        text.replace("  old_instructions: |-\n    Write a summary", "  # Write a summary")
    )
    async with proxy_client(make_settings(rules=str(rules))) as c:
        claude = Claude(c, session="no-stand-in")
        claude.extra = {}
        await failed_once(claude)
        claude.extra = {"compaction": {"type": "summarize"}}
        await claude.send()
        assert claude.forwarded[-1]["compaction"] == {"type": "summarize"}
