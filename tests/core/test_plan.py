"""The token budget: per-request cap, context headroom, escalations-only mode, block cap."""

from __future__ import annotations

import re

from recovery_proxy.core.tracker import MAX_JUDGED, observe
from recovery_proxy.rules.model import Rules
from tests.core.transcript import Transcript, approx_tokens, budget, with_rules


def missing(name: str) -> str:
    return f"Error: ENOENT: no such file or directory, open 'src/{name}.ts'"


def test_the_request_cap_lets_through_what_fits_and_keeps_the_rest(rules: Rules) -> None:
    t = Transcript(rules)
    for name in ("orders", "refunds", "invoices"):
        t.add("read_file", {"path": f"src/{name}.ts"}, missing(name))
    plan = t.send(budget(remaining=150))
    assert len(plan.appends) == 1  # one block fits in 150 tokens


def test_near_the_window_only_escalations_go_out(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2))
    t.add("read_file", {"path": "src/orders.ts"}, missing("orders"))
    assert t.send(budget(escalations_only=True)).appends == {}
    t.add("read_file", {"path": "src/refunds.ts"}, missing("refunds"))
    plan = t.send(budget(escalations_only=True))
    [text] = plan.appends.values()
    assert text.startswith("[Recovery Notice]\nESCALATION: 2 consecutive tool calls have failed")


def test_escalations_may_pass_the_request_cap_but_never_the_window(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2))
    t.call("read_file", {"path": "src/orders.ts"}, missing("orders"))
    last = t.add("read_file", {"path": "src/refunds.ts"}, missing("refunds"))
    plan = t.send(budget(remaining=0))
    assert plan.appends[last.position].startswith("[Recovery Notice]\nESCALATION: 2 consecutive")
    t2 = Transcript(with_rules(rules, consecutive_failures=2))
    t2.call("read_file", {"path": "src/orders.ts"}, missing("orders"))
    t2.add("read_file", {"path": "src/refunds.ts"}, missing("refunds"))
    plan = t2.send(budget(remaining=0, headroom=5))
    assert list(plan.appends) == ["item-1"]  # only the earlier block, stored before


def test_the_block_cap_drops_older_attempts_first(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(6):
        t.call("read_file", {"path": "src/orders.ts"}, missing("orders"))
        t.call("list_dir", {"path": "src"}, "orders.tsx\nrefunds.ts")
    t.call("read_file", {"path": "src/orders.ts"}, missing("orders"))
    capped = Transcript(with_rules(rules, block_tokens=90))
    for _ in range(6):
        capped.call("read_file", {"path": "src/orders.ts"}, missing("orders"))
        capped.call("list_dir", {"path": "src"}, "orders.tsx\nrefunds.ts")
    plan = capped.send()
    full = t.text_after_last(t.send())
    assert full.count('read_file("src/orders.ts") -> not_found') >= 3
    block = plan.appends[capped.items[-2][1].position]
    body = re.split(r"\n\n(?:STOP|ESCALATION|Loop notice)", block)[0]  # notices: own allowance
    assert approx_tokens(body) <= 90
    assert body.count('read_file("src/orders.ts") -> not_found') < 3
    assert "Recovery suggestions:\n  - Verify the path" in body


def test_error_label_is_not_doubled() -> None:
    from recovery_proxy.core.render import unlabelled

    template = "[Error Recovery Context]\nOperation: {operation}\nError: {error}\n"
    assert unlabelled(template, "Error: ENOENT: no such file") == "ENOENT: no such file"
    assert unlabelled(template, "error: pathspec 'x' did not match") == "pathspec 'x' did not match"
    assert unlabelled(template, "TypeError: x is undefined") == "TypeError: x is undefined"
    assert unlabelled(template, "Error:") == "Error:"  # nothing left: keep it whole
    assert unlabelled("Failure: {error}", "Error: boom") == "Error: boom"
    assert unlabelled("{operation} {error}", "Error: boom") == "Error: boom"


# ---- why a failure got nothing (`Plan.skipped`, what `recovery-proxy explain` reports) ------


def test_history_at_first_sight_is_skipped_as_history(rules: Rules) -> None:
    t = Transcript(rules)
    old = t.add("read_file", {"path": "src/orders.ts"}, missing("orders"))
    t.think("Let me try the refunds module instead.")
    newest = t.add("read_file", {"path": "src/refunds.ts"}, missing("refunds"))
    conv = t.conversation()
    conv.batch_start = 1  # the latest assistant turn asked for the second call only
    plan = observe(t.state, conv, rules, budget(), t.now)
    assert plan.skipped == {old.position: "history"}
    assert newest.position in plan.appends


def test_budget_skips_name_the_limit(rules: Rules) -> None:
    t = Transcript(rules)
    results = [
        t.add("read_file", {"path": f"src/{n}.ts"}, missing(n)) for n in ("orders", "refunds")
    ]
    plan = t.send(budget(remaining=150))  # one block fits in the request cap
    assert plan.skipped == {results[1].position: "request_budget"}
    t2 = Transcript(rules)
    only = t2.add("read_file", {"path": "src/orders.ts"}, missing("orders"))
    assert t2.send(budget(headroom=20)).skipped == {only.position: "window"}
    t3 = Transcript(rules)
    near = t3.add("read_file", {"path": "src/orders.ts"}, missing("orders"))
    assert t3.send(budget(escalations_only=True)).skipped == {near.position: "near_window"}


def test_a_result_already_carrying_its_block_is_skipped_as_present(rules: Rules) -> None:
    first = Transcript(rules)
    block = first.text_after_last(first.call("read_file", {"path": "a.ts"}, missing("a")))
    t = Transcript(rules)
    plan = t.call("read_file", {"path": "a.ts"}, missing("a") + "\n\n" + block)
    assert plan.skipped == {t.last.position: "present"}


def test_successes_and_annotated_failures_are_never_skipped(rules: Rules) -> None:
    t = Transcript(rules)
    t.add("list_dir", {"path": "src"}, "orders.ts\nrefunds.ts")
    t.add("read_file", {"path": "src/orders.ts"}, missing("orders"))
    plan = t.send()
    assert plan.skipped == {} and len(plan.appends) == 1


def test_results_past_what_one_request_judges_are_skipped_as_unjudged(rules: Rules) -> None:
    t = Transcript(rules)
    results = [
        t.add("run_worker", {"id": n}, f"Traceback (most recent call last):\nRuntimeError: {n}")
        for n in range(MAX_JUDGED + 3)
    ]
    plan = t.send()
    assert [plan.skipped[r.position] for r in results[:3]] == ["unjudged"] * 3
    assert plan.appends[results[3].position].startswith("[Error Recovery Context]")
