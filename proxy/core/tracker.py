"""The core: update a session's failure history from one request and plan what to splice in.

`observe()` is a pure function of (state, conversation, rules, budget, now): it mutates only
`state` and is safe to re-run on a fresh copy (the Redis store retries it on contention).
Every annotation is rendered once, when its tool result is first seen, stored in the state and
re-applied byte for byte afterwards (prompt-cache safety, DESIGN invariant 2).

It also keeps the session's running `Stats` and its `timeline` (proxy/core/state.py), for the
inspector and the A/B report (proxy/experiment/report.py); what repeats and loops say and do is in
proxy/core/notices.py, the timeline's events in proxy/core/timeline.py. Both change only when
something new happens (a new tool result, a compaction, a loop finding), so a re-sent or
steady-state request costs nothing extra. In a `control` session (the A/B control arm: the
pipeline forwards the request unchanged) everything is tracked the same way and the timeline
shows what *would* have been injected, but no tokens count as injected.
"""

from __future__ import annotations

import hashlib

import orjson

from recovery_proxy.core import known_fixes, loops, render, resolutions
from recovery_proxy.core.classify import Verdict, call_identity, classify
from recovery_proxy.core.commands import command_line
from recovery_proxy.core.compaction import (
    detect_compaction,
    first_visible,
    frozen_summary,
    has_marker,
    is_cleared,
    ledger,
    remember_thread,
    visible_failures,
)
from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, identify
from recovery_proxy.core.notices import (
    conversation_loops,
    escalate,
    loop_notices,
    noticed,
    one_per_event,
    repeat_notices,
    same_failure,
)
from recovery_proxy.core.plan import Budget, Plan, Skip, fit_block
from recovery_proxy.core.request_log import Carried, record_request
from recovery_proxy.core.resolution_state import KnownFix
from recovery_proxy.core.state import (
    MAX_CALLS,
    MAX_RECORDS,
    MAX_SEEN,
    Compaction,
    FailureRecord,
    SessionState,
)
from recovery_proxy.core.timeline import event, new_event, summarised
from recovery_proxy.rules.model import Rules

# Results judged per request: a proxy put in front of a long conversation sees all of it at
# once; only the newest are judged (records keep 50 anyway), the older ones are marked seen.
MAX_JUDGED = 1000


def call_signature(result: ToolResult, rules: Rules) -> str:
    """`operation#digest of canonical arguments`: equal for identical calls (the operation as
    blocks name it, for loop notices to show)."""
    if result.call is None:
        return f"{result.tool}()#{result.call_id}"
    canonical = orjson.dumps(result.call.arguments, option=orjson.OPT_SORT_KEYS)
    shown = render.operation(result.call.name, *call_identity(result.call.arguments, rules))
    return shown + "#" + hashlib.sha256(canonical).hexdigest()[:12]


def observe(
    state: SessionState,
    conv: Conversation,
    rules: Rules,
    budget: Budget,
    now: float,
    verdicts: dict[str, Verdict] | None = None,
    control: bool = False,
    known: list[KnownFix] | None = None,
) -> Plan:
    """Update `state` from `conv` and return the plan for this request. `control`: the
    caller will not inject the plan (A/B control arm); `stats.tokens_injected` stays put and
    the request log (proxy/core/request_log.py) gets no row. `known`: the tenant's known fixes
    that may be offered (proxy/core/known_fixes.py)."""
    plan = Plan()
    tokens_before = state.stats.tokens_injected
    thread = conv.thread
    identify(conv.results)
    learn_calls(state, conv)
    visible = visible_failures(state, conv, rules)
    marker = has_marker(conv, rules)
    signals = detect_compaction(state, conv, visible, marker)
    if "provider" in signals:
        state.provider.boundaries.append(conv.boundary)
    seen = state.seen
    # Only the newest MAX_SEEN results can be remembered as judged: older ones are left alone
    # (judging them would evict, and re-judge, newer ones on every request).
    start = plan.judged_from = max(0, len(conv.results) - MAX_SEEN)
    new = [(i, r) for i, r in enumerate(conv.results[start:], start) if r.key not in seen]
    for _, skipped in new[:-MAX_JUDGED]:
        seen[skipped.key] = True
        plan.skipped[skipped.position] = "unjudged"
    del new[:-MAX_JUDGED]
    # A result first seen in history (proxy put in mid-session, state lost or evicted) is
    # recorded, but only the newest tool batch (from `batch_start`) is annotated: history
    # stays byte-identical (rewriting it would bust the provider's prompt cache).
    if new:
        state.turn += 1
    loops.restart_on_human(state.loop, conv, rules, now)
    found = loops.repeated_message(state.loop, conv, rules)
    if signals:
        plan.compaction = signals
        state.compactions.append(Compaction(time=now, turn=state.turn, signals=signals))
        state.summary = frozen_summary(state, visible, rules, budget.count)
        event(state, now, "compaction", text=", ".join(signals))
        if state.summary:
            plan.fresh += 1
            event(state, now, "summary", text=summarised(state.summary, rules))
            if not control:
                state.stats.tokens_injected += budget.count(state.summary)
        more = loops.compaction_loop(state.loop, state.compactions, rules)
        found.notices += more.notices
        found.escalations += more.escalations
    conversation_loops(state, conv, found, rules, plan, now)
    cache = verdicts if verdicts is not None else {}
    stats = state.stats
    stats.results += len(new)
    shown_from = first_visible(state, conv)
    added: list[str] = []
    for index, result in new:
        state.seen[result.key] = True
        if result.key not in cache:
            command = command_line(result.call.arguments, rules.command_keys) if result.call else ""
            cache[result.key] = classify(rules, result.tool, result.text, result.is_error, command)
        verdict = cache[result.key]
        if verdict.error and not is_cleared(result, rules) and index >= shown_from:
            visible.add(result.key)
        quiet_one = index < conv.batch_start
        spent, mark = budget.spent, len(state.timeline)
        text = _annotate(
            state, result, verdict, rules, budget, now, thread, plan, quiet_one, known or []
        )
        if text and result.text.endswith(text):  # already carries exactly this block
            plan.skipped[result.position] = "present"
        elif text:
            state.annotations[result.key] = text
            added.append(result.key)
            plan.fresh += 1
            if not control:
                stats.tokens_injected += budget.spent - spent
            if verdict.error:  # the block goes before its notices (shifts only those)
                block = new_event(
                    state, now, "block", result.call_id, verdict.key_line, ref=result.key
                )
                state.timeline.insert(mark, block)
    carried: list[str] = []
    for result in conv.results:
        text = state.annotations.get(result.key)
        if text:
            plan.appends[result.position] = text
            carried.append(result.key)
    last = conv.results[-1] if conv.results else None
    if last and conv.ends_with_result and last.key in state.blocked:
        plan.reject = state.blocked[last.key]  # sticky until the conversation moves on
    if state.loop.reject and plan.reject is None:
        plan.reject = state.loop.reject
    plan.summary = state.summary
    plan.streak = state.consecutive_failures > 0
    if conv.compacting:
        plan.ledger = ledger(state, rules, budget.count)
        plan.ledger_default = rules.provider_instructions
    if not control:
        summary = ("added" if signals else "reapplied") if plan.summary else ""
        request = Carried(added, carried, summary, plan.reject or "")
        tokens = stats.tokens_injected - tokens_before
        record_request(state, request, tokens, now, bool(new or signals))
    remember_thread(state, conv, visible, marker)
    if new or signals or not state.updated:  # a first sight is dated too (it was 1970);
        state.updated = now  # an unchanged state is not written again (stores compare bytes)
    state.trim()
    return plan


def learn_calls(state: SessionState, conv: Conversation) -> None:
    """Give results whose call the request did not carry (a `previous_response_id` chain) the
    call a relayed response made, when the proxy saw it."""
    known = state.provider.calls
    if not known:
        return
    for result in conv.results:
        if not result.knows_call() and result.call_id in known:
            call = known[result.call_id]
            result.learn_call(ToolCall(result.call_id, call.name, call.arguments))


TAIL_LINES = 3  # an error among a result's last lines sits right above an appended block


def error_on_screen(text: str, error: str, rules: Rules) -> bool:
    """True when the block will go inside the result, right under its error line (among the
    last `TAIL_LINES` non-blank lines), so quoting the error again would only repeat it."""
    if rules.placement.mode != "append" or not error:
        return False
    header = rules.templates.block.partition("\n")[0]
    own = text.rfind("\n\n" + header) if header and "{" not in header else -1
    if own >= 0:  # a result that already carries a block: judge the text above it
        text = text[:own]
    wanted = error.removesuffix("...")
    tail = text[-4096:].splitlines()
    lines = [line for line in tail if line.strip()][-TAIL_LINES:]
    return any(wanted in line for line in lines)


def _annotate(
    state: SessionState,
    result: ToolResult,
    verdict: Verdict,
    rules: Rules,
    budget: Budget,
    now: float,
    thread: str,
    plan: Plan,
    quiet: bool = False,
    known: list[KnownFix] | None = None,
) -> str:
    """Record one newly seen result and render what goes after it ("" for nothing). A `quiet`
    result (history at first sight) is recorded, never annotated or escalated."""
    signature = call_signature(result, rules)
    state.calls.append(signature)
    state.loop.steps.append(loops.step(signature, verdict.error, result.text, result.call_id))
    del state.calls[:-MAX_CALLS]  # capped as they grow: a huge batch stays linear
    del state.loop.steps[:-MAX_CALLS]
    notices: list[str] = []
    escalations: list[str] = []
    record: FailureRecord | None = None
    offer = None
    stats = state.stats
    if verdict.error:
        state.consecutive_failures += 1
        stats.failures += 1
        arguments = result.call.arguments if result.call else {}
        target, label = call_identity(arguments, rules)
        record = FailureRecord(
            call_id=result.key,
            operation=result.tool,
            target=target,
            label=label,
            category=verdict.category,
            error=verdict.key_line,
            turn=state.turn,
            time=now,
            thread=thread,
            subject=verdict.subject,
        )
        state.records.append(record)
        del state.records[:-MAX_RECORDS]  # capped as it grows: a huge batch stays linear
        resolutions.failed(state, record, result, signature)
        target = resolutions.effective_target(record.target, result)
        plan.known += known_fixes.follow(state, result.tool, target, None)
        plan.new_failures.append(verdict.category)
        count = sum(1 for r in state.records if same_failure(r, record))
        if count > 1:
            stats.repeat_failures += 1
        if quiet:
            plan.skipped[result.position] = "history"
            return ""
        notices += repeat_notices(record, rules, count)
        if state.consecutive_failures >= rules.escalation.consecutive_failures:
            escalations.append(f"{state.consecutive_failures} consecutive tool calls have failed")
    else:
        arguments = result.call.arguments if result.call else {}
        target, label = call_identity(arguments, rules)
        worked = resolutions.succeeded(state, result, target, signature, now, label)
        if worked:
            event(state, now, "resolution", result.call_id, resolutions.event_text(worked, rules))
            plan.learned.append(worked)
        target = resolutions.effective_target(target, result)
        plan.known += known_fixes.follow(state, result.tool, target, worked)
        if state.consecutive_failures:  # a streak of failures ended
            stats.streak_total += state.consecutive_failures
            stats.streaks += 1
        state.consecutive_failures = 0
    if quiet:
        return ""
    pending, found = loop_notices(state, rules)
    escalations += found.escalations
    notices = one_per_event(notices, found)
    noticed(state, notices, now, result.call_id)
    notices = pending + notices
    escalation_texts = [rules.templates.escalation.format(reason=r) for r in escalations]
    if escalations:
        escalate(state, result, escalations, rules, plan, now)
    why: Skip | None = None  # why a failure's block was left out (`Plan.skipped`)
    if budget.escalations_only:
        text = render.notice(rules, escalation_texts) if escalation_texts else ""
        why = "near_window"
    elif record is not None and budget.remaining > 0:
        shown = error_on_screen(result.text, record.error, rules)
        hint = resolutions.similar(state, record, rules)
        if not hint and known:
            target = resolutions.effective_target(record.target, result)
            hint, offer = known_fixes.offer(state, record, target, known, rules)
        text = fit_block(state, record, rules, budget, notices + escalation_texts, shown, hint)
    elif notices or escalation_texts:
        text = render.notice(rules, notices + escalation_texts)
        why = "request_budget"
    else:
        text, why = "", "request_budget"
    if text and not budget.take(text):
        # Over the request cap or the window: only escalations may still go out.
        why = budget.refused
        text = render.notice(rules, escalation_texts) if escalation_texts else ""
        if text and not budget.take(text, escalation=True):
            text = ""
    if offer is not None and offer_said(text, hint):
        state.resolutions.offers.append(offer)
        plan.known.append((offer.id, "offered"))
    if why is not None and record is not None:
        plan.skipped[result.position] = why
    return text


def offer_said(text: str, hint: str) -> bool:
    """The block going out carries the known fix's line."""
    return bool(hint) and hint in text
