"""Compaction on neutral conversations: signals, the frozen summary, partial histories."""

from __future__ import annotations

from recovery_proxy.rules.model import Rules
from tests.core.transcript import ENOENT, Transcript

BUILD = "error[E0308]: mismatched types\n --> src/main.rs:4:18"
CLAUDE_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nThe user wants the webhook test fixed."
)


def failing_history(t: Transcript) -> None:
    t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    t.call("list_dir", {"path": "src/webhooks"}, "paypal.ts\nindex.ts")
    t.call("bash", {"command": "cargo build"}, BUILD)
    t.call("read_file", {"path": "src/webhooks/index.ts"}, "export * from './paypal';")


def test_growing_history_is_not_compaction(rules: Rules) -> None:
    t = Transcript(rules)
    failing_history(t)
    plan = t.send()
    assert plan.compaction == [] and plan.summary == ""


def test_vanished_failures_and_a_marker_freeze_a_summary(rules: Rules) -> None:
    t = Transcript(rules)
    failing_history(t)
    t.items = [t.items[0], ("user", CLAUDE_SUMMARY)]  # history replaced by a summary
    plan = t.send()
    assert set(plan.compaction) >= {"vanished", "marker"}
    assert plan.summary.startswith("## Recent failures (from earlier in this session)")
    assert '- [not_found] read_file("src/webhooks/stripe.ts")' in plan.summary
    assert '- [build_failure] bash("cargo build")' in plan.summary
    t.call("read_file", {"path": "src/webhooks/index.ts"}, "export * from './paypal';")
    again = t.send()
    assert again.compaction == [] and again.summary == plan.summary  # frozen, byte for byte


def test_partial_history_is_never_read_as_compaction(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    t.partial = True  # previous_response_id: only the new items arrive
    t.items = []
    plan = t.call("bash", {"command": "cargo build"}, BUILD)
    assert plan.compaction == [] and plan.summary == ""
    assert "[Error Recovery Context]" in t.text_after_last(plan)
    t.items = []
    plan = t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    text = t.text_after_last(plan)
    assert '  1. read_file("src/webhooks/stripe.ts") -> not_found: the same error' in text
    assert plan.compaction == []


def test_a_marker_still_counts_in_a_partial_history(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    t.partial = True
    t.items = [("user", CLAUDE_SUMMARY)]
    plan = t.send()
    assert plan.compaction == ["marker"]
    assert '- [not_found] read_file("src/webhooks/stripe.ts")' in plan.summary


def test_an_edited_last_user_message_is_a_branch_not_compaction(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    t.say("Try the staging config instead.")
    t.send()
    t.items[-1] = ("user", "Try the production config instead.")
    plan = t.send()
    assert plan.compaction == []


def test_cleared_outputs_are_no_longer_visible(rules: Rules) -> None:
    t = Transcript(rules)
    failing_history(t)
    for kind, result in t.items:
        if kind == "result":
            result.content = "[Old tool result content cleared]"
            result._text = None
    plan = t.send()
    assert "vanished" in plan.compaction
    assert 'read_file("src/webhooks/stripe.ts")' in plan.summary
