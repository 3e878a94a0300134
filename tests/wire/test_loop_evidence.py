"""What each wire format tells loop detection: the last human message, assistant texts."""

from __future__ import annotations

from recovery_proxy.wire import anthropic_messages, openai_chat, openai_responses

TASK = "Fix the failing invoice export."
SAID = "I will run the export again to check."


def test_chat_tool_output_as_user_text_is_not_a_human_message() -> None:
    conv = openai_chat.parse(
        {
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": TASK},
                {"role": "assistant", "content": SAID},
                {"role": "user", "content": "Call id: call_1\nObservation:\nexported 0 rows"},
                {"role": "assistant", "content": None, "tool_calls": []},
            ]
        }
    )
    assert conv is not None
    assert conv.last_human == TASK
    assert conv.assistant_texts == [(0, TASK, SAID)]  # the tool-call-only turn has no text


def test_anthropic_tool_results_are_not_human_messages() -> None:
    conv = anthropic_messages.parse(
        {
            "messages": [
                {"role": "user", "content": TASK},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": SAID},
                        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                        {"type": "text", "text": "<system-reminder>todo list</system-reminder>"},
                    ],
                },
                {"role": "assistant", "content": SAID},
                {"role": "user", "content": "Stop and summarise."},
            ]
        }
    )
    assert conv is not None
    assert conv.last_human == "Stop and summarise."
    assert conv.assistant_texts == [(1, TASK, SAID)]  # a turn with a tool call is progress


def test_responses_messages() -> None:
    conv = openai_responses.parse(
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": TASK}],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": SAID}],
                },
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ]
        }
    )
    assert conv is not None
    assert conv.last_human == TASK and conv.assistant_texts == [(0, TASK, SAID)]
