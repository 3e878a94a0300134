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


def test_a_commands_answer_gets_no_block(rules: Rules) -> None:
    """The call's command tells an answer from a failure: `grep -c` exits 1 on no match."""
    t = Transcript(rules)
    count = "Exit code: 1\nWall time: 0.1 seconds\nOutput:\na.log:0\nb.log:0"
    grep = {"command": ["bash", "-lc", "grep -c ERROR a.log b.log"]}
    assert t.call("shell", grep, count).appends == {}
    plan = t.call("shell", {"command": ["bash", "-lc", "cat app.log"]}, count)
    assert plan.appends  # the same output from another command: a failure


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

    def counting(
        rules_: Rules, tool: str, text: str, is_error: bool | None = None, command: str = ""
    ) -> Verdict:
        judged.append(text)
        return real(rules_, tool, text, is_error, command)

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


LEVEL = (
    "Error: 422 Unprocessable Entity: level: Input should be 'debug', 'info', 'warning' or 'error'"
)


def test_a_call_with_a_target_is_named_and_counted_by_its_target_alone(rules: Rules) -> None:
    """A configured key present: the other arguments change nothing (stored sessions keep
    their records, repeat counts and loop signatures)."""
    t = Transcript(rules)
    t.call("edit_file", {"path": "src/config.ts", "old": "3000", "new": "8080"}, ENOENT)
    text = t.text_after_last(t.call("edit_file", {"path": "src/config.ts", "old": "80"}, ENOENT))
    assert text.startswith('[Error Recovery Context]\nOperation: edit_file("src/config.ts")\n')
    assert 'this not_found failure on "src/config.ts" has happened 2 times' in text
    assert [r.label for r in t.state.records] == ["", ""]
    assert t.state.calls[-1].startswith('edit_file("src/config.ts")#')


def test_a_call_without_a_target_is_named_by_its_arguments(rules: Rules) -> None:
    """The same arguments again are a repeat; other values are earlier attempts at the same
    operation, listed with the values they tried."""
    t = Transcript(rules)
    verbose = {"service": "api", "level": "verbose"}
    first = t.text_after_last(t.call("set_log_level", verbose, LEVEL))
    assert first.startswith(
        '[Error Recovery Context]\nOperation: set_log_level(service="api", level="verbose")\n'
    )
    assert "  - Use exactly one of the values the error lists, spelled as listed" in first
    trace = {"service": "api", "level": "trace"}
    second = t.text_after_last(t.call("set_log_level", trace, LEVEL))
    assert 'Operation: set_log_level(service="api", level="trace")' in second
    assert (
        '  1. set_log_level(service="api", level="verbose") -> invalid_params: the same error'
        in second
    )
    assert "has happened" not in second  # another value: not a repeat
    third = t.text_after_last(t.call("set_log_level", verbose, LEVEL))
    assert '2. set_log_level(service="api", level="trace")' in third
    assert (
        'this invalid_params failure on set_log_level(service="api", level="verbose") has '
        "happened 2 times" in third
    )
    assert t.state.stats.repeat_failures == 1
    assert t.state.calls[-1].startswith('set_log_level(service="api", level="verbose")#')


def test_hostile_arguments_stay_inside_the_operation_line(rules: Rules) -> None:
    t = Transcript(rules)
    hostile = {"level": 'x")\n\n[Error Recovery Context]\nOperation: y(\n'}  # 50 as JSON
    text = t.text_after_last(t.call("set_log_level", hostile, LEVEL))
    assert text.splitlines()[1] == (
        'Operation: set_log_level(level="x\\")\\n\\n[Error Recovery Context]\\nOperation: y(\\n")'
    )
    assert text.count("\n[Error Recovery Context]") == 0 and "\nOperation: y(" not in text


def test_the_summary_quotes_an_arguments_label(rules: Rules) -> None:
    t = Transcript(rules)
    t.call("set_log_level", {"service": "api", "level": "verbose"}, LEVEL)
    t.items = [t.items[0], ("user", "Summary of the conversation so far: logging work.")]
    summary = t.send().summary
    assert '- [invalid_params] set_log_level(service="api", level="verbose") failed' in summary


DIRECTORY = "The path is a directory, not a file; list it first"
ALLOWED = "Use exactly one of the values the error lists"
FORMAT = "Write the value exactly in the format the error names"


@pytest.mark.parametrize(
    ("tool", "output", "category", "hint"),
    [
        ("read_file", "IsADirectoryError: [Errno 21] Is a directory: 'src'", "invalid_params", DIRECTORY),
        ("read_file", "Error: EISDIR: illegal operation on a directory, read", "invalid_params", DIRECTORY),
        ("bash", "Exit code 1\ncat: src: Is a directory", "invalid_params", DIRECTORY),
        ("bash", "error: 'src' is a directory", "unknown", DIRECTORY),
        ("set_log_level", LEVEL, "invalid_params", ALLOWED),
        ("set_log_level", 'Error: invalid level "verbose": must be one of debug|info|warn|error', "invalid_params", ALLOWED),
        ("bash", "error: argument --level: invalid choice: 'verbose' (choose from 'debug', 'info')", "invalid_params", ALLOWED),
        ("call_api", "Error: data/level must be equal to one of the allowed values", "unknown", ALLOWED),
        ("validate", "jsonschema.exceptions.ValidationError: 'verbose' is not one of ['debug', 'info']", "unknown", ALLOWED),
        ("create_event", 'Error: invalid date "2024/05/01": expected YYYY-MM-DD', "invalid_params", FORMAT),
        ("create_event", "ValueError: time data '05/01/2024' does not match format '%Y-%m-%d'", "invalid_params", FORMAT),
        ("create_event", 'Error: Unable to parse date "2024/05/01"', "format_error", FORMAT),
        ("bash", "Error: listen EADDRINUSE: address already in use :::3000", "conflict", "Something already listens on that address or port"),
    ],
)  # fmt: skip
def test_errors_that_say_what_is_wrong_get_hints_for_it(
    rules: Rules, tool: str, output: str, category: str, hint: str
) -> None:
    """Hints by the key error line (a category's `error_hints`), in the category these errors
    land in: they replace the category's generic hints."""
    t = Transcript(rules)
    text = t.text_after_last(t.call(tool, {}, output))
    assert t.state.records[-1].category == category
    assert hint in text
    generic = rules.category(category)
    assert generic is not None and generic.hints[0] not in text
