"""The OpenAI chat wire adapter: parsing results of every shape, splicing without copies."""

from __future__ import annotations

from typing import Any

from recovery_proxy.core.plan import Plan
from recovery_proxy.rules.model import Placement
from recovery_proxy.wire import openai_chat
from recovery_proxy.wire.openai_chat import parse

APPEND = Placement(mode="append")


def splice(payload: dict[str, Any], appends: dict[Any, str], summary: str) -> dict[str, Any]:
    return openai_chat.splice(payload, Plan(appends=appends, summary=summary), APPEND)


SMOL_TASK = "New task:\nChange the port.\n"
SMOL_ERROR = (
    "Error:\nError executing tool 'read_file' with arguments {'path': 'src/config.ts'}: "
    "FileNotFoundError: No such file or directory: 'src/config.ts'\nPlease try again or use another tool\n"
    "Now let's retry: take care not to repeat previous errors! If you have retried several times, "
    "try a completely different approach.\n"
)


def test_tool_role_results_and_content_parts() -> None:
    conv = parse(
        {
            "model": "m",
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "Be careful."}]},
                {"role": "user", "content": "Go."},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "grep", "arguments": '{"pattern": "TODO"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [{"type": "text", "text": "a.py:1: TODO"}],
                },
            ],
        }
    )
    assert conv is not None and conv.system == "Be careful."
    [result] = conv.results
    assert (result.call_id, result.tool, result.text, result.position) == (
        "c1",
        "grep",
        "a.py:1: TODO",
        3,
    )
    assert result.call is not None and result.call.arguments == {"pattern": "TODO"}


def test_legacy_function_call_results() -> None:
    conv = parse(
        {
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                },
                {"role": "function", "name": "weather", "content": "HTTP 503 Service Unavailable"},
            ]
        }
    )
    assert conv is not None
    [result] = conv.results
    assert result.tool == "weather" and result.call and result.call.arguments == {"city": "Oslo"}


def test_smolagents_error_segments_in_user_text_get_inline_blocks() -> None:
    text = SMOL_TASK + SMOL_ERROR + SMOL_ERROR
    payload = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": text}]},
        ]
    }
    conv = parse(payload)
    assert conv is not None
    first, second = conv.results
    assert first.tool == second.tool == "read_file"
    assert first.call and first.call.arguments == {"path": "src/config.ts"}
    assert first.call_id != second.call_id
    assert first.position[0] == second.position[0] == 1  # (message, offset in its text)
    out = splice(payload, {first.position: "[B1]", second.position: "[B2]"}, "")
    spliced = out["messages"][1]["content"][0]["text"]
    assert spliced.count("[B1]") == 1 and spliced.index("[B1]") < spliced.index("[B2]")
    # Last turn's text (one error + its block) stays a prefix of this turn's.
    earlier = parse(
        {"messages": [payload["messages"][0], {"role": "user", "content": SMOL_TASK + SMOL_ERROR}]}
    )
    assert earlier is not None
    earlier_out = splice(
        {"messages": [payload["messages"][0], {"role": "user", "content": SMOL_TASK + SMOL_ERROR}]},
        {earlier.results[0].position: "[B1]"},
        "",
    )
    assert spliced.startswith(earlier_out["messages"][1]["content"])
    assert earlier.results[0].call_id == first.call_id


def test_splice_shares_untouched_messages_and_keeps_unknown_fields() -> None:
    payload = {
        "model": "m",
        "x_custom": {"keep": True},
        "messages": [
            {"role": "system", "content": "sys", "name": "root"},
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "c", "content": "Error: boom"},
        ],
    }
    out = splice(payload, {2: "[block]"}, "[summary]")
    assert out["x_custom"] == {"keep": True} and list(out) == list(payload)
    assert out["messages"][1] is payload["messages"][1]
    assert out["messages"][0] == {"role": "system", "content": "sys\n\n[summary]", "name": "root"}
    assert out["messages"][2]["content"] == "Error: boom\n\n[block]"
    assert payload["messages"][2]["content"] == "Error: boom"  # the original is not mutated


def test_requests_without_messages_are_not_parsed() -> None:
    assert parse({"model": "m", "prompt": "legacy"}) is None


def test_a_results_identity_does_not_change_once_its_call_has_been_read() -> None:
    """An optimistic store re-runs the tracker on the same parsed request; the first run reads
    each result's call. The second run must give every result the same key (it had given a
    new one, so 35 of 40 concurrent failures on Redis were judged again as new)."""
    from recovery_proxy.core.conversation import identify

    call = {"name": "read_file", "arguments": '{"path": "src/config.ts"}'}
    conv = parse(
        {
            "messages": [
                {"role": "user", "content": "Fix the build."},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "call_0", "type": "function", "function": call}],
                },
                {"role": "tool", "tool_call_id": "call_0", "content": "Error: ENOENT"},
            ]
        }
    )
    assert conv is not None
    identify(conv.results)
    before = [r.key for r in conv.results]
    assert all(r.call is not None for r in conv.results)  # the tracker reads the call
    identify(conv.results)
    assert [r.key for r in conv.results] == before
