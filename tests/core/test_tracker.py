"""The tracker on neutral conversations: blocks, repeats, escalation, loops, explicit flags."""

from __future__ import annotations

import pytest

from recovery_proxy.core.classify import Verdict
from recovery_proxy.core.conversation import ToolResult
from recovery_proxy.rules.model import Rules
from tests.core.transcript import ENOENT, REFUSED, Transcript, with_rules


def test_a_failure_gets_a_block_at_its_own_opaque_position(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    plan = t.send()
    assert list(plan.appends) == ["item-1"]
    block = plan.appends["item-1"]
    assert block.startswith("[Error Recovery Context]\n")
    assert 'Operation: read_file("src/webhooks/stripe.ts")' in block
    # right under the error line, the block does not quote it again, nor list no attempts
    assert "ENOENT" not in block and "Error:" not in block
    assert "Previous attempts" not in block
    assert "\n\nRecovery suggestions:\n  - Verify the path" in block
    assert plan.new_failures == []  # judged once, on the turn it arrived


def test_success_gets_nothing(rules: Rules) -> None:
    t = Transcript(rules)
    plan = t.call("read_file", {"path": "package.json"}, '{"name": "checkout-service"}')
    assert plan.appends == {} and plan.summary == "" and plan.reject is None


def test_second_failure_lists_the_first_and_the_first_block_is_reapplied(rules: Rules) -> None:
    t = Transcript(rules)
    first = t.text_after_last(t.call("edit_file", {"path": "src/webhooks/stripe.ts"}, ENOENT))
    plan = t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    assert '  1. edit_file("src/webhooks/stripe.ts") -> not_found: the same error' in (
        t.text_after_last(plan)
    )
    assert plan.appends["item-1"] == first  # byte for byte (prompt-cache safety)


def test_repeats_warn_then_stop(rules: Rules) -> None:
    t = Transcript(rules)
    target = {"path": "src/webhooks/stripe.ts"}
    t.call("read_file", target, ENOENT)
    t.call("list_dir", {"path": "src/webhooks"}, "paypal.ts\nindex.ts")
    warn = t.text_after_last(t.call("read_file", target, ENOENT))
    assert 'this not_found failure on "src/webhooks/stripe.ts" has happened 2 times' in warn
    t.call("list_dir", {"path": "src"}, "webhooks\nserver.ts")
    stop = t.text_after_last(t.call("read_file", target, ENOENT))
    assert "STOP: occurrence #3 of the same not_found failure" in stop


def test_consecutive_failures_escalate_in_the_text_with_annotate(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=3))
    t.call("bash", {"command": "npm test"}, "npm error code ELIFECYCLE\nnpm error errno 1")
    t.call("bash", {"command": "npm run build"}, "npm error code ELIFECYCLE")
    plan = t.call("read_file", {"path": "dist/index.js"}, ENOENT)
    assert "ESCALATION: 3 consecutive tool calls have failed" in t.text_after_last(plan)
    assert plan.escalations == 1 and plan.reject is None


def test_block_action_rejects_while_the_failure_is_the_last_item(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2, action="block"))
    assert t.call("bash", {"command": "make"}, "make: *** [all] Error 2").reject is None
    plan = t.call("bash", {"command": "make -j1"}, "make: *** [all] Error 2")
    assert plan.reject is not None and "2 consecutive tool calls have failed" in plan.reject
    assert t.send().reject == plan.reject  # the agent retries the same request: still blocked
    t.say("Only build the docs for now.")
    assert t.send().reject is None  # the conversation moved on


def test_webhook_action_emits_one_event(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2, action="webhook"))
    t.call("bash", {"command": "make"}, "make: *** [all] Error 2")
    plan = t.call("bash", {"command": "make all"}, "make: *** [all] Error 2")
    [event] = plan.events
    assert event["event"] == "recovery_escalation" and event["tool"] == "bash"
    assert event["call_id"] == t.last.call_id


def test_same_call_in_a_row_gets_a_loop_notice_even_on_success(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(2):
        assert t.call("bash", {"command": "git status"}, "On branch main").appends == {}
    plan = t.call("bash", {"command": "git status"}, "On branch main")
    text = t.text_after_last(plan)
    assert text.startswith("[Recovery Notice]\n")
    assert 'bash("git status") has been called 3 times in a row' in text


def test_cycles_are_detected(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(3):
        t.call("read_file", {"path": "src/a.ts"}, "export const a = 1;")
        plan = t.call("read_file", {"path": "src/b.ts"}, "export const b = 2;")
    assert 'repeat the cycle read_file("src/a.ts") -> read_file("src/b.ts") 3 times' in (
        t.text_after_last(plan)
    )


def test_systemic_failures_collapse_into_one_notice(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("query_db", {"query": "select 1"}, REFUSED)
    t.call("migrate", {"command": "alembic upgrade head"}, REFUSED)
    text = t.text_after_last(t.call("seed", {"command": "python seed.py"}, REFUSED))
    assert "connection_error failures across 3 different operations" in text
    assert "Recovery suggestions" not in text


def test_explicit_flag_decides_both_ways(rules: Rules) -> None:
    t = Transcript(rules)
    quiet = t.call("grep", {"pattern": "Error"}, ENOENT, is_error=False)
    assert quiet.appends == {}  # error words, but the wire says success
    plan = t.call("deploy", {"name": "staging"}, "Deployment paused by policy.", is_error=True)
    text = t.text_after_last(plan)
    assert text.startswith('[Error Recovery Context]\nOperation: deploy("staging")')
    assert "Deployment paused by policy." not in text  # it is the line right above


def test_an_error_far_above_the_block_is_quoted_once(rules: Rules) -> None:
    """The error line is quoted when the block does not sit right under it (a long output),
    with the label not doubled; an earlier attempt with another error is quoted in full."""
    t = Transcript(rules)
    t.call("read_file", {"path": "src/a.ts"}, "Error: EACCES: permission denied, open 'src/a.ts'")
    output = ENOENT + "\n" + "\n".join(f"    at frame{i} (loader.js:{i}:1)" for i in range(8))
    text = t.text_after_last(t.call("read_file", {"path": "src/a.ts"}, output))
    assert f"\nError: {ENOENT.removeprefix('Error: ')}\n" in text and "Error: Error:" not in text
    assert '1. read_file("src/a.ts") -> permission_denied: Error: EACCES' in text


def test_results_already_carrying_their_exact_block_are_not_annotated_again(rules: Rules) -> None:
    first = Transcript(rules)
    block = first.text_after_last(first.call("read_file", {"path": "a.ts"}, ENOENT))
    t = Transcript(rules)
    plan = t.call("read_file", {"path": "a.ts"}, ENOENT + "\n\n" + block)
    assert plan.appends == {}
    assert len(t.state.records) == 1  # still tracked
    quoted = Transcript(rules)
    plan = quoted.call(
        "read_file", {"path": "a.ts"}, ENOENT + "\n\n[Error Recovery Context]\nOp: x"
    )
    assert quoted.text_after_last(plan).startswith("[Error Recovery Context]\nOperation: read_file")


def test_a_result_without_its_call_is_still_tracked(rules: Rules) -> None:
    t = Transcript(rules)
    orphan = ToolResult("call_0", ENOENT, ("input", 0))  # its call is not in the request
    t.items.append(("result", orphan))
    plan = t.send()
    assert "Operation: unknown_tool_call()" in plan.appends[("input", 0)]


def test_a_huge_first_sight_judges_a_bounded_number_and_then_only_the_new(
    rules: Rules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5,000 failing results seen at once: at most MAX_JUDGED are judged; each later request
    judges only what is new, even past the MAX_SEEN results a session can remember."""
    from recovery_proxy.core import tracker
    from recovery_proxy.core.state import MAX_SEEN

    judged: list[str] = []
    real = tracker.classify

    def counting(rules_: Rules, tool: str, text: str, is_error: bool | None = None) -> Verdict:
        judged.append(text)
        return real(rules_, tool, text, is_error)

    monkeypatch.setattr(tracker, "classify", counting)
    t = Transcript(rules)
    for n in range(5_000):
        t.add("run_worker", {}, f"Traceback (most recent call last):\nRuntimeError: crash {n}")
    t.send()
    assert len(judged) == tracker.MAX_JUDGED
    assert judged[-1].endswith("crash 4999")  # the newest are the ones judged
    assert len(t.state.seen) == MAX_SEEN and t.state.records
    for n in range(3):
        judged.clear()
        plan = t.call(
            "run_worker", {}, f"Traceback (most recent call last):\nRuntimeError: new {n}"
        )
        assert len(judged) == 1 and t.last.position in plan.appends


def test_a_session_is_dated_from_its_first_request_even_without_tool_results(
    rules: Rules,
) -> None:
    """An agent's first turn (no tool result yet) made a session listed as 1970-01-01."""
    t = Transcript(rules)
    t.send()
    assert t.state.updated == t.now


def test_a_missing_module_is_counted_on_the_module_whatever_the_command(rules: Rules) -> None:
    """The same missing module behind two different commands is one repeated failure: the
    note names the module, not the (existing) test file the command ran."""
    t = Transcript(rules)
    error = (
        "_____ ERROR collecting tests/test_api.py _____\n"
        "E   ModuleNotFoundError: No module named 'httpx'\n1 error in 0.12s"
    )
    t.call("bash", {"command": "pytest tests/test_api.py"}, error)
    text = t.text_after_last(t.call("bash", {"command": "python -m pytest -q"}, error))
    assert 'Operation: bash("python -m pytest -q")' in text
    assert '1. bash("pytest tests/test_api.py") -> missing_dependency' in text
    assert 'this missing_dependency failure on "httpx" has happened 2 times' in text
    assert "not installed where this runs" in text
    assert t.state.records[-1].subject == "httpx"
