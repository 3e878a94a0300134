"""Session stats and timeline (issue 14): what the tracker counts, on neutral conversations."""

from __future__ import annotations

from recovery_proxy.core.plan import Budget
from recovery_proxy.core.state import MAX_TIMELINE, SessionState
from recovery_proxy.core.tracker import observe
from recovery_proxy.rules.model import Rules
from tests.core.test_compaction_signals import CLAUDE_SUMMARY, failing_history
from tests.core.transcript import ENOENT, REFUSED, Transcript, approx_tokens, budget, with_rules

TARGET = {"path": "src/webhooks/stripe.ts"}
OK = "paypal.ts\nindex.ts"


def kinds(t: Transcript) -> list[str]:
    return [e.kind for e in t.state.timeline]


def test_results_failures_and_a_streak_that_ends(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("list_dir", {"path": "src"}, OK)
    t.call("read_file", TARGET, ENOENT)
    t.call("bash", {"command": "psql"}, REFUSED)
    stats = t.state.stats
    assert (stats.results, stats.failures, stats.streaks, stats.streak_total) == (3, 2, 0, 0)
    assert (
        t.state.consecutive_failures == 2
    )  # open: the report counts it (proxy/experiment/report.py)
    t.call("list_dir", {"path": "src/webhooks"}, OK)
    assert (stats.results, stats.failures, stats.streaks, stats.streak_total) == (4, 2, 1, 2)
    t.call("list_dir", {"path": "lib"}, OK)  # a success after a success ends no streak
    assert (stats.streaks, stats.streak_total) == (1, 2)


def test_repeats_count_and_their_notices_go_on_the_timeline(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", TARGET, ENOENT)
    t.call("list_dir", {"path": "src/webhooks"}, OK)
    t.call("edit_file", TARGET, ENOENT)  # same target and category, another tool: a repeat
    t.call("read_file", {"path": "other.ts"}, ENOENT.replace("src/webhooks/stripe.ts", "o.ts"))
    stats = t.state.stats
    assert (stats.failures, stats.repeat_failures, stats.loop_notices) == (3, 1, 1)
    assert kinds(t) == ["block", "block", "notice", "block"]
    first, second, notice, _ = t.state.timeline
    assert (first.call_id, first.turn, first.text) == (t.items[1][1].call_id, 1, ENOENT)
    assert second.call_id == notice.call_id and second.turn == notice.turn == 3
    assert notice.text.startswith('Note: this not_found failure on "src/webhooks/stripe.ts"')


def test_a_resent_request_changes_nothing(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", TARGET, ENOENT)
    before = t.state.model_dump_json()
    t.now -= 30  # the same request at the same moment (a retry)
    t.send()
    assert t.state.model_dump_json() == before


def test_observe_reruns_on_a_fresh_copy_with_the_same_result(rules: Rules) -> None:
    """The Redis store retries `observe` on a fresh copy: stats must not double."""
    t = Transcript(with_rules(rules, consecutive_failures=2))
    t.call("read_file", TARGET, ENOENT)
    t.add("read_file", TARGET, ENOENT)
    conv = t.conversation()
    runs = []
    for _ in range(2):
        state = t.state.model_copy(deep=True)
        observe(state, conv, t.rules, budget(block=200), t.now + 30)
        runs.append(state.model_dump_json())
    assert runs[0] == runs[1]
    assert '"escalations":1' in runs[0] and '"repeat_failures":1' in runs[0]


def test_tokens_injected_are_the_new_texts_tokens(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("read_file", TARGET, ENOENT)
    t.call("read_file", TARGET, ENOENT)
    t.send()  # both re-applied: nothing new
    texts = t.state.annotations.values()
    assert len(texts) == 2
    assert t.state.stats.tokens_injected == sum(approx_tokens(text) for text in texts)


def test_escalations_count_and_carry_their_reason(rules: Rules) -> None:
    t = Transcript(with_rules(rules, consecutive_failures=2))
    t.call("bash", {"command": "npm test"}, "npm error code ELIFECYCLE")
    t.call("bash", {"command": "npm run build"}, "npm error code ELIFECYCLE")
    assert t.state.stats.escalations == 1
    escalation = t.state.timeline[-1]
    assert escalation.kind == "escalation"
    assert escalation.text == "2 consecutive tool calls have failed"
    assert escalation.call_id == t.last.call_id


def test_loop_notices_count_tool_loops(rules: Rules) -> None:
    t = Transcript(rules)
    for _ in range(3):
        t.call("list_dir", {"path": "src"}, OK)
    assert t.state.stats.loop_notices == 1 and t.state.stats.failures == 0
    notice = t.state.timeline[-1]
    assert notice.kind == "notice" and "(loop rule: same-call)" in notice.text


def test_compaction_and_summary_events(rules: Rules) -> None:
    t = Transcript(rules)
    failing_history(t)
    tokens_before = t.state.stats.tokens_injected
    t.items = [t.items[0], ("user", CLAUDE_SUMMARY)]
    plan = t.send()
    compaction, summary = t.state.timeline[-2:]
    assert compaction.kind == "compaction" and "marker" in compaction.text.split(", ")
    assert summary.kind == "summary" and summary.text == "2 failures"
    assert t.state.stats.tokens_injected == tokens_before + approx_tokens(plan.summary)


def test_control_tracks_the_same_but_injects_no_tokens(rules: Rules) -> None:
    treated, control = Transcript(rules), Transcript(rules)
    control.control = True
    for t in (treated, control):
        t.call("read_file", TARGET, ENOENT)
        t.call("list_dir", {"path": "src"}, OK)
        t.call("edit_file", TARGET, ENOENT)
    assert treated.state.stats.tokens_injected > 0
    assert control.state.stats.tokens_injected == 0
    assert control.state.stats.model_dump(exclude={"tokens_injected"}) == (
        treated.state.stats.model_dump(exclude={"tokens_injected"})
    )
    same = {"time", "turn", "kind", "text"}  # call ids differ: each transcript has its own
    assert [e.model_dump(include=same) for e in control.state.timeline] == [
        e.model_dump(include=same) for e in treated.state.timeline
    ]
    assert [e.kind for e in control.state.timeline] == ["block", "block", "notice"]


def test_history_at_first_sight_counts_but_is_no_block(rules: Rules) -> None:
    t = Transcript(rules)
    t.add("read_file", TARGET, ENOENT)
    t.add("edit_file", TARGET, ENOENT)
    t.add("list_dir", {"path": "src"}, OK)
    conv = t.conversation()
    conv.batch_start = 2  # the proxy was put in mid-session: only the newest batch is new
    observe(t.state, conv, rules, budget(block=200), t.now)
    stats = t.state.stats
    assert (stats.results, stats.failures, stats.repeat_failures) == (3, 2, 1)
    assert (stats.streaks, stats.streak_total, stats.loop_notices) == (1, 2, 0)
    assert t.state.timeline == [] and stats.tokens_injected == 0


def test_the_timeline_is_bounded(rules: Rules) -> None:
    t = Transcript(rules)
    tight = Budget(approx_tokens, 200, 10**9, 10**9)
    for n in range(MAX_TIMELINE + 20):
        t.add("read_file", {"path": f"f{n}.ts"}, ENOENT.replace("src/webhooks/stripe.ts", f"f{n}"))
        t.send(tight)
    assert len(t.state.timeline) == MAX_TIMELINE
    assert t.state.timeline[-1].call_id == t.items[-1][1].call_id
    assert t.state.stats.failures == MAX_TIMELINE + 20


def test_an_empty_state_has_zero_stats() -> None:
    state = SessionState()
    assert state.stats.model_dump() == dict.fromkeys(state.stats.model_dump(), 0)
