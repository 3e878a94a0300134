"""Templates -> text. All wording comes from the rules' templates."""

from __future__ import annotations

import string
from collections.abc import Iterable

import orjson

from recovery_proxy.core.state import FailureRecord
from recovery_proxy.rules.model import Rules

QUOTED_MAX = 200  # characters of one tool output a summary item quotes


def operation(tool: str, target: str, label: str = "", quote: bool = False) -> str:
    """`edit_file("src/config.ts")`; without a target, the call's arguments label, quoted
    already (`set_log_level(service="api", level="verbose")`: classify.arguments_label);
    `edit_file()` without either. `quote`: the target as a JSON string literal (`quoted`),
    as the summary in the system prompt shows it."""
    if target:
        return f"{tool}({quoted(target)})" if quote else f'{tool}("{target}")'
    return f"{tool}({label})"


def unlabelled(template: str, error: str) -> str:
    """`error` without a leading label the template already prints just before `{error}`:
    `Error: {error}` with the key line `Error: ENOENT ...` would read `Error: Error: ENOENT`.
    The tool result above the block keeps the error verbatim."""
    label = template.partition("{error}")[0].rpartition("\n")[2].strip()
    if label and "{" not in label and error[: len(label)].lower() == label.lower():
        return error[len(label) :].lstrip() or error
    return error


def fill(template: str, **fields: str) -> str:
    """`template.format(**fields)`, leaving out what would say nothing: a line whose fields are
    all empty, and a paragraph (lines between blank lines) whose every field line went. So
    `Error: {error}` goes when the error is already on screen, and `Previous attempts:` with
    its `{previous}` when there are none."""
    kept = []
    for paragraph in template.split("\n\n"):
        lines, field_lines = [], 0
        for line in paragraph.split("\n"):
            names = [name for _, name, _, _ in string.Formatter().parse(line) if name]
            if names and not any(fields[name] for name in names):
                continue
            field_lines += bool(names)
            lines.append(line.format(**fields))
        said = any(name for _, name, _, _ in string.Formatter().parse(paragraph) if name)
        if said and not field_lines:
            continue
        kept.append("\n".join(lines))
    return "\n\n".join(kept)


def previous_attempts(rules: Rules, earlier: list[FailureRecord], current: str) -> str:
    """One line per earlier attempt; an error identical to `current` (the one this block is
    about) is not quoted again."""
    t = rules.templates
    if not earlier:
        return t.no_previous_attempts
    return "\n".join(
        t.previous_attempt.format(
            n=n,
            operation=operation(r.operation, r.target, r.label),
            category=r.category,
            error=t.same_error if r.error == current and t.same_error else r.error,
        )
        for n, r in enumerate(earlier, 1)
    )


def block(
    rules: Rules,
    record: FailureRecord,
    earlier: list[FailureRecord],
    hints: Iterable[str],
    notices: Iterable[str] = (),
    error_shown: bool = False,
    resolved: str = "",
) -> str:
    """The recovery block for one failure (seed 000's shape), notices last. `error_shown`: the
    block goes right under the error line, so it is not quoted again; `resolved`: what worked
    for a similar failure earlier (proxy/core/resolutions.py)."""
    t = rules.templates
    text = fill(
        t.block,
        operation=operation(record.operation, record.target, record.label),
        error="" if error_shown else unlabelled(t.block, record.error),
        previous=previous_attempts(rules, earlier, record.error),
        hints="\n".join(t.hint.format(hint=h) for h in hints),
        resolved=resolved,
    )
    return "\n\n".join([text, *notices])


def notice(rules: Rules, notices: list[str]) -> str:
    """Notices attached to a result that is not itself a failure."""
    return rules.templates.notice.format(notices="\n".join(notices))


def quoted(text: str) -> str:
    """Tool output as a JSON string literal: one line, quotes and control characters escaped,
    at most `QUOTED_MAX` characters. The summary sits in the system prompt; what it quotes
    must not pass for the proxy's or the user's words (DESIGN invariant 8)."""
    if len(text) > QUOTED_MAX:
        text = text[:QUOTED_MAX] + "..."
    return orjson.dumps(text).decode()


def summary(
    rules: Rules,
    records: list[FailureRecord],
    notes: dict[str, str] | None = None,
    template: str | None = None,
) -> str:
    """The post-compaction summary (or another `template` with `{items}`, the ledger): every
    tool-supplied part quoted as data. `notes`: a line to put under a failure's item (by call
    id: what resolved it)."""
    t = rules.templates
    notes = notes or {}
    items = "\n".join(
        t.summary_item.format(
            category=r.category,
            operation=operation(r.operation, r.target, r.label, quote=True),
            error=quoted(r.error),
            turn=r.turn,
        )
        + ("\n" + notes[r.call_id] if r.call_id in notes else "")
        for r in records
    )
    return (template or t.summary).format(items=items)
