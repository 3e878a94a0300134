"""Loop detection from the wire: repeated steps, cycles, a repeated message, compaction loops.

A *step* is one tool call with its outcome: `signature=failed` for a failure (the same call
failing again is a loop whatever the error text says), `signature=<digest of the result>` for
a success (scrolling a page returns new text each time: not a loop). Counting restarts when a
person types a new message. Each finding names its rule id so an operator can tune it in YAML:

- `same-call`: the same step N times in a row (Cline/Roo: 3; Gemini CLI: 5)
- `call-cycle`: steps A,B,...A,B,... of period 2..5 repeated (Gemini CLI, OpenHands)
- `same-call-window`: the same step N times among the last W steps, not in a row (Roo Code)
- `repeated-message`: the same assistant text N times with no tool result between (OpenHands)
- `compaction-loop`: N compactions with no tool result between them (OpenHands)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from recovery_proxy.core.conversation import Conversation, digest
from recovery_proxy.core.state import Compaction, LoopState
from recovery_proxy.rules.model import Rules, Thresholds


@dataclass
class Findings:
    """What loop detection found: notices for the model, escalation reasons."""

    notices: list[str] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    same_call: bool = False  # the newest call repeated in a row: a notice or an escalation


def step(signature: str, failed: bool, text: str, call_id: str = "") -> str:
    """One call and its outcome, as loop detection compares them. The call id is left out of
    the result (smolagents echoes it: `Call id: call_3\nObservation:\n...`)."""
    if failed:
        return f"{signature}=failed"
    return f"{signature}={digest(text.replace(call_id, '') if call_id else text)}"


def shown(entry: str) -> str:
    """The operation as the model reads it: `read_file("a.py")`."""
    return entry.rsplit("=", 1)[0].rsplit("#", 1)[0]


def restart_on_human(loop: LoopState, conv: Conversation, rules: Rules, now: float) -> bool:
    """A new message typed by a person restarts loop counting. A compaction summary (a
    known marker) is not a person; neither is tool output sent as user text."""
    text = conv.last_human
    if not text or rules.marked(text):
        return False
    said = digest(text)
    if said == loop.human:
        return False
    first = not loop.human
    loop.human = said
    if first:
        return False
    loop.steps.clear()
    loop.pending.clear()
    loop.reported = ""
    loop.since = now
    return True


def tool_loops(loop: LoopState, rules: Rules) -> Findings:
    """Findings on the newest step (call it after appending it to `loop.steps`)."""
    th, t = rules.thresholds, rules.templates
    steps, found = loop.steps, Findings()
    run = 1
    while run < len(steps) and steps[-1 - run] == steps[-1]:
        run += 1
    call = shown(steps[-1])
    found.same_call = run >= th.same_call_notice
    if run >= th.same_call_escalate:
        found.escalations.append(
            f"{call} has been called {run} times in a row with the same arguments and result"
            " (loop rule same-call)"
        )
        return found
    if run >= th.same_call_notice:
        found.notices.append(t.same_call.format(call=call, count=run, rule="same-call"))
        return found
    if _cycle(steps, th, t, found):
        return found
    recent = steps[-th.loop_window :]
    count = recent.count(steps[-1])
    if count >= th.window_escalate:
        found.escalations.append(
            f"{call} has been called {count} times in the last {len(recent)} calls with the same"
            " arguments and result (loop rule same-call-window)"
        )
    elif count == th.window_notice:
        found.notices.append(
            t.call_window.format(
                call=call, count=count, window=len(recent), rule="same-call-window"
            )
        )
    return found


def _cycle(steps: list[str], th: Thresholds, t: dict[str, str], found: Findings) -> bool:
    for length in range(th.cycle_min_length, th.cycle_max_length + 1):
        span = _periodic_span(steps, length)
        if len(set(steps[-length:])) < 2 or span < length * th.cycle_repeats:
            continue
        names = " -> ".join(shown(s) for s in steps[-length:])
        if span >= length * (th.cycle_repeats + 1):
            found.escalations.append(
                f"the call cycle {names} has repeated {span // length} times (loop rule call-cycle)"
            )
            return True
        if span == length * th.cycle_repeats:
            text = t.cycle.format(
                total=span, calls=names, repeats=th.cycle_repeats, rule="call-cycle"
            )
            found.notices.append(text)
            return True
    return False


def _periodic_span(steps: list[str], length: int) -> int:
    """How many trailing steps follow a period of `length`."""
    if len(steps) < length:
        return 0
    span = length
    while span < len(steps) and steps[-1 - span] == steps[-1 - span + length]:
        span += 1
    return span


def repeated_message(loop: LoopState, conv: Conversation, rules: Rules) -> Findings:
    """The model sending the same text again and again, with no tool result in between and no
    user message other than one repeated reply (OpenHands headless answers "continue")."""
    th, found = rules.thresholds, Findings()
    texts = conv.assistant_texts
    if len(texts) < th.message_repeats:
        return found
    last = texts[-1]
    if last[1] != conv.last_human:
        return found  # a person has spoken since
    said = digest(last[2])
    run = 1
    while run < len(texts):
        earlier, after = texts[-1 - run], texts[-run]
        # Same text, no tool result since, and only the same user reply in between.
        if (earlier[0], earlier[2]) != (last[0], last[2]) or after[1] != last[1]:
            break
        run += 1
    key = f"{said}:{run}"
    if run < th.message_repeats or key == loop.reported:
        return found
    loop.reported = key
    if run >= th.message_escalate:
        found.escalations.append(
            f"the assistant has sent the same message {run} times with no tool call between"
            " (loop rule repeated-message)"
        )
    else:
        found.notices.append(t_format(rules, "repeated_message", count=run))
    return found


def compaction_loop(loop: LoopState, compactions: list[Compaction], rules: Rules) -> Findings:
    """Call right after recording a compaction: how many compactions in a row came with no
    new tool result between them (since counting last restarted)."""
    th, found = rules.thresholds, Findings()
    latest = compactions[-1]
    run = 0
    for compaction in reversed(compactions):
        if compaction.turn != latest.turn or compaction.time < loop.since:
            break
        run += 1
    if run >= th.compaction_escalate:
        found.escalations.append(
            f"the conversation was compacted {run} times with no tool call between"
            " (loop rule compaction-loop)"
        )
    elif run >= th.compaction_repeats:
        found.notices.append(t_format(rules, "compaction_loop", count=run))
    return found


def t_format(rules: Rules, name: str, **fields: object) -> str:
    """Render a loop template; its rule id is the template name with dashes."""
    return getattr(rules.templates, name).format(rule=name.replace("_", "-"), **fields)
