"""The request log: per request the proxy rewrote or refused, what the model received on top
of what the agent sent (added texts, re-applied ones, the summary, new tokens), bounded."""

from __future__ import annotations

import orjson

from recovery_proxy.core.request_log import added_texts, summary_text
from recovery_proxy.core.state import MAX_LISTED, MAX_REQUESTS, SessionState
from recovery_proxy.rules.model import Rules
from tests.core.test_compaction_signals import CLAUDE_SUMMARY, failing_history
from tests.core.transcript import ENOENT, Transcript, with_rules

TARGET = {"path": "src/webhooks/stripe.ts"}
OK = "paypal.ts\nindex.ts"


def missing(name: str) -> str:
    return ENOENT.replace("src/webhooks/stripe.ts", name)


def test_each_request_that_adds_text_gets_a_row_with_that_exact_text(rules: Rules) -> None:
    t = Transcript(rules)
    assert t.call("list_dir", {"path": "src"}, OK).appends == {}
    assert t.state.requests == []  # nothing carried: nothing to log
    before = t.state.stats.tokens_injected
    plan = t.call("read_file", TARGET, ENOENT)
    first = t.last
    [row] = t.state.requests
    assert (row.time, row.turn, row.added, row.reapplied, row.summary) == (
        t.now, 2, [first.key], [], ""
    )  # fmt: skip
    assert row.tokens == t.state.stats.tokens_injected - before > 0
    assert added_texts(t.state, row) == [(first.key, plan.appends[first.position])]

    plan = t.call("edit_file", TARGET, ENOENT)
    second = t.state.requests[-1]
    assert second.added == [t.last.key] and second.reapplied == [first.key]
    assert added_texts(t.state, second) == [(t.last.key, plan.appends[t.last.position])]
    assert "has happened 2 times" in plan.appends[t.last.position]  # notices are in the text


def test_requests_carrying_the_same_are_counted_in_one_row(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", TARGET, ENOENT)
    t.call("list_dir", {"path": "src/webhooks"}, OK)  # re-applies the block, adds nothing
    t.call("list_dir", {"path": "src"}, OK)
    [row] = t.state.requests
    assert (row.repeats, row.last) == (2, t.now)
    before = t.state.model_dump_json()
    t.now -= 30
    t.send()  # a plain re-send: the session is not changed (so not written again)
    assert t.state.model_dump_json() == before


def test_a_compaction_row_carries_the_summary_in_full(rules: Rules) -> None:
    t = Transcript(rules)
    failing_history(t)
    t.items = [t.items[0], ("user", CLAUDE_SUMMARY)]
    plan = t.send()
    row = t.state.requests[-1]
    assert (row.summary, row.added, row.reapplied) == ("added", [], [])
    assert added_texts(t.state, row) == [("", plan.summary)]
    assert row.tokens > 0
    t.call("read_file", {"path": "src/webhooks/index.ts"}, "export * from './paypal';")
    assert t.state.requests[-1] is row and row.repeats == 1  # the summary re-applied
    assert summary_text(t.state, row) == plan.summary


def test_a_refused_request_is_logged_with_its_reason(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2, action="block"))
    t.call("bash", {"command": "make"}, "make: *** [all] Error 2")
    plan = t.call("bash", {"command": "make -j1"}, "make: *** [all] Error 2")
    assert plan.reject
    row = t.state.requests[-1]
    assert row.refused == plan.reject and row.added == [t.last.key]
    rows = len(t.state.requests)
    t.send()  # the agent retries the same request: still refused, nothing new to log
    assert len(t.state.requests) == rows


def test_the_control_arm_logs_no_request(rules: Rules) -> None:
    t = Transcript(rules)
    t.control = True
    t.call("read_file", TARGET, ENOENT)
    t.call("edit_file", TARGET, ENOENT)
    assert t.state.requests == [] and len(t.state.timeline) == 3


def test_the_log_and_each_row_are_bounded(rules: Rules) -> None:
    t = Transcript(rules)
    for n in range(MAX_REQUESTS + 10):
        t.call("read_file", {"path": f"f{n}.ts"}, missing(f"f{n}.ts"))
    assert len(t.state.requests) == MAX_REQUESTS
    row = t.state.requests[-1]
    keys = [result.key for kind, result in t.items if kind == "result"]
    assert row.added == keys[-1:]
    assert row.reapplied == keys[-1 - MAX_LISTED : -1]  # the newest re-applied, by name
    assert row.more == len(keys) - 1 - MAX_LISTED  # the rest, counted


def test_a_state_stored_before_the_log_existed_still_loads(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", TARGET, ENOENT)
    old = orjson.loads(t.state.model_dump_json())
    del old["requests"]
    state = SessionState.model_validate_json(orjson.dumps(old))
    assert state.requests == [] and state.records == t.state.records
