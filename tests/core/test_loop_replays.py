"""The peers' own loop scenarios, replayed through the core as the proxy sees them on the wire.

Gemini CLI (packages/core/src/services/loopDetectionService.test.ts): 5 identical calls in a
row are a loop. Roo Code (src/core/tools/__tests__/ToolRepetitionDetector.spec.ts): the 3rd
identical consecutive call is stopped; a different call resets the count. OpenHands
(tests/unit/test_is_stuck.py): 4 identical action/observation pairs, 3 identical actions that
fail, 3 identical agent messages, an A,B pattern over 6 steps. Where the proxy reacts earlier
than a peer, the test says so."""

from __future__ import annotations

from recovery_proxy.rules.model import Rules
from tests.core.transcript import Transcript

LS = ("bash", {"command": "ls -la src"}, "total 8\n-rw-r--r-- 1 dev dev 120 app.py")
CAT = ("bash", {"command": "cat src/app.py"}, "print('hello')")
PY_ERR = "Traceback (most recent call last):\n  File \"app.py\", line 1\nNameError: name 'x' is not defined"


def run(t: Transcript, steps: list[tuple]) -> list[str]:
    return [t.text_after_last(t.call(*s)) for s in steps]


def test_gemini_five_identical_calls_is_a_loop_proxy_notices_at_three(rules: Rules) -> None:
    texts = run(Transcript(rules), [LS] * 5)
    assert texts[:2] == ["", ""]
    assert "(loop rule: same-call)" in texts[2]  # earlier than Gemini CLI
    assert "ESCALATION" in texts[4] and "(loop rule same-call)" in texts[4]  # Gemini: halt


def test_gemini_different_arguments_are_not_a_loop(rules: Rules) -> None:
    steps = [("bash", {"command": f"ls -la src/pkg{i}"}, f"total {i}") for i in range(6)]
    assert run(Transcript(rules), steps) == [""] * 6


def test_roo_third_identical_consecutive_call(rules: Rules) -> None:
    texts = run(Transcript(rules), [CAT] * 3)
    assert texts[:2] == ["", ""] and "3 times in a row" in texts[2]


def test_roo_a_different_call_resets_the_run_but_the_window_still_counts(rules: Rules) -> None:
    # Roo: A, A, B, A is allowed. The proxy counts identical steps within a window (issue
    # 12, behaviour 2): the third identical A with the identical result gets a notice.
    texts = run(Transcript(rules), [CAT, CAT, LS, CAT])
    assert texts[:3] == ["", "", ""]
    assert "(loop rule: same-call-window)" in texts[3] and "in a row" not in texts[3]


def test_openhands_repeating_action_observation(rules: Rules) -> None:
    texts = run(Transcript(rules), [CAT] * 4)
    assert "has been called 3 times in a row" in texts[2]  # OpenHands: stuck at 4
    assert "has been called 4 times in a row" in texts[3]


def test_openhands_repeating_action_error(rules: Rules) -> None:
    fail = ("python", {"code": "print(x)"}, PY_ERR)
    texts = run(Transcript(rules), [fail] * 5)
    assert "STOP: occurrence #3" in texts[2] and "Loop notice" not in texts[2]  # one event
    assert "has been called 5 times in a row" in texts[4]


def test_openhands_alternating_pattern_over_six_steps(rules: Rules) -> None:
    texts = run(Transcript(rules), [LS, CAT] * 3)
    assert all("Loop notice" not in x for x in texts[:4])
    assert "(loop rule: same-call-window)" in texts[4]  # the third identical LS: earlier
    assert "(loop rule: call-cycle)" in texts[5]  # OpenHands: stuck here


def test_openhands_alternating_pattern_with_changing_observations_is_not_stuck(
    rules: Rules,
) -> None:
    log = [("bash", {"command": "tail -n 5 build.log"}, f"step {i} of 40") for i in range(3)]
    src = [("bash", {"command": "cat src/app.py"}, f"print({i})") for i in range(3)]
    steps = [s for pair in zip(log, src, strict=True) for s in pair]
    assert all("Loop notice" not in x for x in run(Transcript(rules), steps))


def test_openhands_monologue(rules: Rules) -> None:
    t = Transcript(rules)
    t.call(*LS)
    for _ in range(3):
        t.think("I have finished the analysis; now I will implement the fix.")
    t.send()
    assert "same message 3 times" in t.state.loop.pending[0]


def test_openhands_interactive_mode_counts_after_the_last_user_message(rules: Rules) -> None:
    t = Transcript(rules)
    run(t, [CAT, CAT])
    t.say("Please look at src/app.py once more, I changed it.")
    assert run(t, [CAT, CAT]) == ["", ""]
