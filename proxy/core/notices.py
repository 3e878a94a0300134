"""Notices and escalations: what the tracker says when a failure repeats or a loop is found
(proxy/core/loops.py), and what it does when they go on (annotate, block or webhook, per
`rules.escalation.action`). Each notice is counted in the session's stats and put on its
timeline as it is found, whether or not the budget later lets it out."""

from __future__ import annotations

from typing import Any

from recovery_proxy.core import loops, render
from recovery_proxy.core.conversation import Conversation, ToolResult
from recovery_proxy.core.plan import Plan
from recovery_proxy.core.state import FailureRecord, SessionState
from recovery_proxy.core.timeline import event
from recovery_proxy.rules.model import Rules


def same_failure(a: FailureRecord, b: FailureRecord) -> bool:
    """The same category of failure on the same target (or the same subject the error names:
    one missing module), whatever the tool (edit, then read, then edit of one missing file is
    one blind retry); without either, the same tool with the same identifying arguments (its
    `label`: `level="verbose"` twice is a repeat, `level="debug"` after it is another attempt,
    which the block lists under previous attempts: plan.earlier_attempts)."""
    if a.category != b.category or a.about != b.about:
        return False
    return bool(a.about) or (a.operation == b.operation and a.label == b.label)


def repeat_notices(record: FailureRecord, rules: Rules, count: int) -> list[str]:
    """The repeat notice for `record`, the `count`th failure like it among the records."""
    th, t = rules.thresholds, rules.templates
    if record.about:
        target = f'"{record.about}"'
    elif record.label:  # `set_log_level(service="api", level="verbose")`
        target = render.operation(record.operation, "", record.label)
    else:
        target = record.operation
    if count >= th.repeat_stop:
        template = t.repeat_stop
    elif count >= th.repeat_warn:
        template = t.repeat_warn
    else:
        return []
    return [template.format(count=count, category=record.category, target=target)]


def loop_notices(state: SessionState, rules: Rules) -> tuple[list[str], loops.Findings]:
    """Conversation-level notices waiting for a tool result to travel with (counted when they
    were found), and the loops on the newest step (proxy/core/loops.py), not yet counted."""
    pending, state.loop.pending = state.loop.pending, []
    return pending, loops.tool_loops(state.loop, rules)


def one_per_event(repeats: list[str], found: loops.Findings) -> list[str]:
    """The notices for one failure, one per event. The same call failing again in a row is
    one event for both the repeat counter and the same-call loop rule: the repeat notice
    speaks for it (it names the target and counts every attempt), unless the loop rule
    escalated, which says more."""
    if repeats and found.same_call:  # then the same-call finding is the only one
        return [] if found.escalations else repeats
    return repeats + found.notices


def conversation_loops(
    state: SessionState,
    conv: Conversation,
    found: loops.Findings,
    rules: Rules,
    plan: Plan,
    now: float,
) -> None:
    """Act on loops seen in the conversation as a whole (no tool result of their own): notices
    wait for the next new tool result; escalations act now (`block` answers this request
    and every re-send of it)."""
    loop = state.loop
    if loop.reject and conv.length != loop.reject_length:
        loop.reject = ""  # the conversation moved on
    loop.pending += found.notices
    noticed(state, found.notices, now)
    if not found.escalations:
        return
    reason = "; ".join(found.escalations)
    plan.escalations += 1
    state.stats.escalations += 1
    event(state, now, "escalation", text=reason)
    action = rules.escalation.action
    if action == "block":
        loop.reject, loop.reject_length = reason, conv.length
    elif action == "webhook":
        plan.events.append(webhook_event(state, now, reason))
    else:
        loop.pending.append(rules.templates.escalation.format(reason=reason))


def escalate(
    state: SessionState,
    result: ToolResult,
    reasons: list[str],
    rules: Rules,
    plan: Plan,
    now: float,
) -> None:
    """Act on escalations found at `result`: `block` rejects the request ending with it (and
    its re-sends), `webhook` queues an event; the text goes out in the result's annotation."""
    action = rules.escalation.action
    reason = "; ".join(reasons)
    plan.escalations += 1
    state.stats.escalations += 1
    event(state, now, "escalation", result.call_id, reason)
    if action == "block":
        state.blocked[result.key] = reason
    elif action == "webhook":
        plan.events.append(webhook_event(state, now, reason, result.tool, result.call_id))


def webhook_event(
    state: SessionState, now: float, reason: str, tool: str = "", call_id: str = ""
) -> dict[str, Any]:
    """The JSON the `webhook` action posts (proxy/webhooks.py); no tool for a loop found in
    the conversation as a whole."""
    return {
        "event": "recovery_escalation",
        "reason": reason,
        "tool": tool,
        "call_id": call_id,
        "time": now,
        "turn": state.turn,
    }


def noticed(state: SessionState, notices: list[str], now: float, call_id: str = "") -> None:
    """Count repeat and loop notices as they are found (whether or not the budget later lets
    them out: the same in both A/B arms) and put them on the timeline."""
    if notices:
        state.stats.loop_notices += len(notices)
        for text in notices:
            event(state, now, "notice", call_id, text)
