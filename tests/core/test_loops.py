"""Loop detection on neutral conversations, with scenarios replayed from the peers' tests
(Gemini CLI loopDetectionService, OpenHands StuckDetector, Roo Code ToolRepetitionDetector)."""

from __future__ import annotations

import pytest

from recovery_proxy.core import loops
from recovery_proxy.core.state import Compaction, LoopState
from recovery_proxy.rules.load import build
from recovery_proxy.rules.model import Rules, RulesError, Thresholds
from tests.core.transcript import ENOENT, Transcript, with_rules

PAGE = "Showing lines {0}-{1} of invoices.csv\n2024-03-{0:02d},ACME,1200.00"


def notices(plan, t: Transcript) -> str:
    return t.text_after_last(plan)


def test_identical_call_and_identical_result_is_a_loop_at_three(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(2):
        assert t.call("bash", {"command": "git status"}, "On branch main").appends == {}
    text = notices(t.call("bash", {"command": "git status"}, "On branch main"), t)
    assert "has been called 3 times in a row" in text and "(loop rule: same-call)" in text


def test_scrolling_returns_new_content_each_time_and_is_not_a_loop(rules: Rules) -> None:
    # Roo Code exempts browser scrolling; from the wire, the result text tells the same story.
    t = Transcript(rules)
    for page in range(8):
        plan = t.call("browser_action", {"action": "scroll_down"}, PAGE.format(page + 1, page + 2))
        assert plan.appends == {} and plan.escalations == 0


def test_the_same_failure_is_a_loop_even_when_its_text_differs(rules: Rules) -> None:
    t = Transcript(rules)
    said = []
    for attempt in range(5):
        plan = t.call(
            "bash",
            {"command": "curl -sf localhost:8080/health"},
            f"curl: (7) Failed to connect to localhost port 8080 after {attempt} ms",
        )
        said.append(notices(plan, t))
    # the third: one notice for one event (the repeat STOP says what the loop notice would)
    assert "STOP: occurrence #3" in said[2] and "Loop notice" not in said[2]
    assert 'bash("curl -sf localhost:8080/health") has been called 5 times in a row' in said[4]
    assert "STOP" not in said[4]  # the escalation supersedes it


def test_different_arguments_are_not_a_loop(rules: Rules) -> None:
    t = Transcript(rules)
    for path in ("src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts"):
        assert t.call("read_file", {"path": path}, "export {};").appends == {}


def test_repetition_within_a_window_not_in_a_row(rules: Rules) -> None:
    # A, x, x, A, x, A: x is the third identical step among the last five.
    t = Transcript(rules)
    a = ("read_file", {"path": "src/config.ts"}, "export const port = 8080;")
    x = ("bash", {"command": "npm run lint"}, "src/app.ts\n  3:1  warning  no-console")
    seen = []
    for tool, args, out in (a, x, x, a, x, a):
        seen.append(notices(t.call(tool, args, out), t))
    assert "Loop notice" not in "".join(seen[:4])
    assert 'bash("npm run lint") has been called 3 times in the last 5 calls' in seen[4]
    assert "(loop rule: same-call-window)" in seen[4]
    assert 'read_file("src/config.ts") has been called 3 times in the last 6 calls' in seen[5]


def test_interleaved_different_calls_are_not_a_window_loop(rules: Rules) -> None:
    t = Transcript(rules)
    for i in range(6):
        plan = t.call("read_file", {"path": f"src/mod{i}.ts"}, f"export const m{i} = {i};")
        assert plan.appends == {}


def test_window_escalates(rules: Rules) -> None:
    t = Transcript(with_rules(rules, window_escalate=4))
    a = ("bash", {"command": "pytest -q tests/test_api.py"}, "1 passed in 0.2s")
    for i in range(4):
        plan = t.call(*a)
        t.call("read_file", {"path": f"notes{i}.md"}, f"note {i}")
    plan = t.call(*a)
    assert "(loop rule same-call-window)" in notices(plan, t) and plan.escalations == 1


def test_cycles_need_identical_results(rules: Rules) -> None:
    t = Transcript(rules)
    for i in range(4):
        t.call("read_file", {"path": "src/a.ts"}, f"export const a = {i};")
        plan = t.call("read_file", {"path": "src/b.ts"}, f"export const b = {i};")
        assert plan.appends == {}


def test_a_human_message_restarts_loop_counting(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(2):
        t.call("bash", {"command": "git status"}, "On branch main")
    t.say("I pushed a fix upstream; check the status again.")
    assert t.call("bash", {"command": "git status"}, "On branch main").appends == {}
    t.call("bash", {"command": "git status"}, "On branch main")
    assert "3 times in a row" in notices(
        t.call("bash", {"command": "git status"}, "On branch main"), t
    )


def test_the_same_human_message_resent_does_not_restart(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("bash", {"command": "git status"}, "On branch main")
    t.send()  # the same request again (a retry): nothing new from a person
    t.call("bash", {"command": "git status"}, "On branch main")
    assert "3 times in a row" in notices(
        t.call("bash", {"command": "git status"}, "On branch main"), t
    )


def test_repeated_message_monologue(rules: Rules) -> None:
    # OpenHands test_is_stuck_monologue: the same agent message 3 times, no observation between.
    t = Transcript(with_rules(rules, action="block"))
    t.call("bash", {"command": "ls"}, "src\ntests")
    message = "I will now run the tests to verify the fix."
    for _ in range(2):
        t.think(message)
        assert t.send().escalations == 0
    t.think(message)
    t.send()
    assert t.state.loop.pending and "(loop rule: repeated-message)" in t.state.loop.pending[0]
    plan = t.call("bash", {"command": "pytest -q"}, "3 passed in 0.4s")
    assert "same message 3 times without calling a tool" in notices(plan, t)
    for _ in range(5):
        t.think("Done.")
    plan = t.send()
    assert plan.reject is not None and "(loop rule repeated-message)" in plan.reject
    assert t.send().reject == plan.reject  # re-sent unchanged: still blocked
    t.say("Stop and summarise.")
    assert t.send().reject is None


def test_a_message_repeated_with_tool_results_between_is_not_a_monologue(rules: Rules) -> None:
    # OpenHands: an observation between the repeated messages means it may recover.
    t = Transcript(rules)
    for i in range(4):
        t.think("Let me check the next file.")
        plan = t.call("read_file", {"path": f"src/mod{i}.ts"}, f"export const m{i} = {i};")
        assert plan.appends == {} and not t.state.loop.pending


def test_a_human_message_between_repeated_messages_restarts(rules: Rules) -> None:
    t = Transcript(rules)
    t.think("Waiting for your confirmation.")
    t.think("Waiting for your confirmation.")
    t.say("Go ahead.")
    t.think("Waiting for your confirmation.")
    t.send()
    assert not t.state.loop.pending


def test_compaction_loop(rules: Rules) -> None:
    loop = LoopState()
    th = rules
    at = [Compaction(time=100.0 + i, turn=7, signals=["marker"]) for i in range(3)]
    assert loops.compaction_loop(loop, at[:1], th).notices == []
    two = loops.compaction_loop(loop, at[:2], th)
    assert "compacted 2 times in a row" in two.notices[0] and "compaction-loop" in two.notices[0]
    three = loops.compaction_loop(loop, at, th)
    assert "(loop rule compaction-loop)" in three.escalations[0]


def test_compactions_with_tool_progress_between_are_not_a_loop(rules: Rules) -> None:
    loop = LoopState()
    at = [Compaction(time=100.0 + i, turn=i, signals=["marker"]) for i in range(3)]
    found = loops.compaction_loop(loop, at, rules)
    assert found.notices == [] and found.escalations == []
    loop.since = 102.0  # a person spoke: earlier compactions do not count
    same_turn = [Compaction(time=100.0 + i, turn=7, signals=["marker"]) for i in range(3)]
    assert loops.compaction_loop(loop, same_turn, rules).escalations == []


def test_failures_keep_todays_escalation_at_five(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(5):
        plan = t.call("read_file", {"path": "src/webhooks/stripe.ts"}, ENOENT)
    assert "(loop rule same-call)" in notices(plan, t) and plan.escalations >= 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"window_notice": 4, "window_escalate": 3}, "window_escalate must be >= window_notice"),
        (
            {"message_repeats": 4, "message_escalate": 2},
            "message_escalate must be >= message_repeats",
        ),
        ({"window_notice": 12, "window_escalate": 12}, "window_notice must be <= loop_window"),
    ],
)
def test_thresholds_are_validated_at_load(rules: Rules, change: dict, message: str) -> None:
    files = dict(rules.files)
    name = "30-recovery.yaml"
    thresholds = files[name].thresholds or Thresholds()
    files[name] = files[name].model_copy(
        update={"thresholds": thresholds.model_copy(update=change)}
    )
    with pytest.raises(RulesError, match=message):
        build(files)


def test_a_misspelled_template_field_is_an_error_at_load(rules: Rules) -> None:
    files = dict(rules.files)
    name = "30-recovery.yaml"
    templates = {**files[name].templates, "call_window": "Loop: {call} x{cuont}"}
    files[name] = files[name].model_copy(update={"templates": templates})
    with pytest.raises(RulesError, match=r"template 'call_window': unknown field\(s\) \['cuont'\]"):
        build(files)


def test_step_identity() -> None:
    assert loops.step("bash#1", True, "a") == loops.step("bash#1", True, "b")
    assert loops.step("bash#1", False, "a") != loops.step("bash#1", False, "b")
    assert loops.shown(loops.step('bash("ls")#abc', False, "x")) == 'bash("ls")'
