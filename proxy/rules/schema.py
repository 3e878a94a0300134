"""The schema of rule files (pydantic: unknown keys are errors) and the checks on templates
and thresholds that `build` applies once, at load."""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Examples(Strict):
    """Texts a rule must and must not match; `rules check` runs them."""

    match: list[str] = []
    no_match: list[str] = []


class PatternRule(Strict):
    """One named pattern (error detection, success override, key-line extraction)."""

    id: str
    pattern: str
    description: str = ""
    examples: Examples = Examples()


class ToolHints(Strict):
    tools: str = Field(description="RE2 pattern on the tool name")
    hints: list[str] = Field(min_length=1, max_length=6)


class ErrorHints(Strict):
    """Hints for the failures of a category whose key error line says something specific
    (`Is a directory`, a value that is not one of the allowed ones)."""

    pattern: str = Field(description="RE2 on the failure's key error line")
    hints: list[str] = Field(min_length=1, max_length=3)
    examples: Examples = Examples()  # key lines (or whole outputs) the pattern must match


class CategoryRule(Strict):
    """A failure category: patterns, hints, optional restriction to some tools."""

    id: str
    patterns: list[str] = []
    tools: str | None = Field(None, description="RE2 on the tool name: only these tools")
    hints: list[str] = Field(min_length=1, max_length=6)
    tool_hints: list[ToolHints] = []
    error_hints: list[ErrorHints] = Field(
        [], description="the first whose pattern matches the key error line replaces the hints"
    )
    systemic: bool = False
    subject: str | None = Field(
        None,
        description="RE2 whose first matching (group) is what the error names (a module, a "
        "command): repeats are counted on it instead of the call's target",
    )
    examples: Examples = Examples()


class Detection(Strict):
    """Is a result a failure: `unwrap` (wrapper prefixes), `not_error` (answers that win over
    errors), `exit_zero` (a wrapper reporting a successful exit: a success unless the output
    is an error `reply`), `error`, `reply` (outputs that are an error reply, an HTTP error
    body or page or a client's error: failures even when the exit status says success, by
    `is_error: false` or an `exit_zero` wrapper), `key_line`; and `answers`: patterns on
    `$ COMMAND` (the call's command line, from the first of `command_keys` in its arguments)
    then the output inside its wrappers (`unwrap` before, `trailer` after): a match is the
    command's answer (grep -c counting 0, systemctl is-active saying inactive), not a failure,
    whatever the exit status."""

    command_keys: list[str] = []
    unwrap: list[PatternRule] = []
    trailer: list[PatternRule] = []
    answers: list[PatternRule] = []
    not_error: list[PatternRule] = []
    exit_zero: list[PatternRule] = []
    error: list[PatternRule] = []
    reply: list[PatternRule] = []
    key_line: list[PatternRule] = []


class Scan(Strict):
    head_bytes: int = Field(8192, gt=0)
    tail_bytes: int = Field(4096, ge=0)


class Targets(Strict):
    keys: list[str] = []
    max_length: int = Field(200, gt=10)


class Placement(Strict):
    mode: Literal["append", "message"] = "append"
    message_role: Literal["user", "system"] = "user"


class Escalation(Strict):
    consecutive_failures: int = Field(5, ge=2)
    action: Literal["annotate", "block", "webhook"] = "annotate"
    webhook_url: str | None = None


class Thresholds(Strict):
    repeat_warn: int = Field(2, ge=2)
    repeat_stop: int = Field(3, ge=2)
    same_call_notice: int = Field(3, ge=2)
    same_call_escalate: int = Field(5, ge=2)
    cycle_min_length: int = Field(2, ge=2)
    cycle_max_length: int = Field(5, ge=2)
    cycle_repeats: int = Field(3, ge=2)
    loop_window: int = Field(10, ge=2, le=32, description="recent steps for same-call-window")
    window_notice: int = Field(3, ge=2)
    window_escalate: int = Field(6, ge=2)
    message_repeats: int = Field(3, ge=2, description="same assistant text: notice")
    message_escalate: int = Field(5, ge=2)
    compaction_repeats: int = Field(2, ge=2, description="compactions with no tool call between")
    compaction_escalate: int = Field(3, ge=2)
    systemic_operations: int = Field(3, ge=2)
    systemic_window: int = Field(10, ge=2, description="recent failure records considered")
    block_tokens: int = Field(200, ge=20)
    request_tokens: int = Field(1000, ge=0)
    near_window: float = Field(0.85, gt=0, le=1)
    summary_records: int = Field(10, ge=1)
    summary_tokens: int = Field(500, ge=50)


class Compaction(Strict):
    markers: list[PatternRule] = []
    cleared: list[str] = Field([], description="texts that replace a cleared tool output")
    steer_provider: bool | None = Field(
        None,
        description="add the session's failure ledger to the instructions of requests that "
        "ask the provider to compact (on unless a rule file says false)",
    )
    provider_instructions: str | None = Field(
        None,
        description="the summarisation prompt sent when a request's own instructions would "
        "replace the provider's default and it set none (Anthropic on-demand `summarize`)",
    )


class Sessions(Strict):
    headers: list[str] = []
    header_glob_suffix: str = "-session-id"
    body_fields: list[str] = []
    late_headers: list[str] = Field(
        [], description="headers read after the body fields (some clients vary them per request)"
    )


class RuleFile(Strict):
    """The schema of one YAML file. Every section is optional; unknown keys are errors."""

    scan: Scan | None = None
    detection: Detection = Detection()
    categories: list[CategoryRule] = []
    category_patterns: dict[str, list[str]] = Field(
        {}, description="more patterns for categories defined in any file (generated files)"
    )
    targets: Targets | None = None
    templates: dict[str, str] = {}
    thresholds: Thresholds | None = None
    escalation: Escalation | None = None
    placement: Placement | None = None
    compaction: Compaction = Compaction()
    sessions: Sessions | None = None


# Every template and the fields it may use (a misspelled field is an error at load time).
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(fields.split())
    for name, fields in {
        "block": "operation error previous hints resolved",
        "previous_attempt": "n operation category error",
        "no_previous_attempts": "",
        "same_error": "",
        "hint": "hint",
        "repeat_warn": "count category target",
        "repeat_stop": "count category target",
        "same_call": "call count rule",
        "cycle": "total calls repeats rule",
        "call_window": "call count window rule",
        "repeated_message": "count rule",
        "compaction_loop": "count rule",
        "escalation": "reason",
        "systemic": "operation error category operations names",
        "summary": "items",
        "summary_item": "category operation error turn",
        "ledger": "items",
        "blocked": "reason",
        "notice": "notices",
        "resolution_found": "steps",
        "resolution_after": "steps",
        "resolution_changed": "",
        "resolution_retried": "",
        "summary_resolution": "turn count worked how",
        "resolved_before": "failed category count worked how",
        "resolution_event": "failed category count worked how",
        "known_fix": "sessions failed category worked how",
    }.items()
}
TEMPLATE_NAMES = set(TEMPLATE_FIELDS)


def template_problem(name: str, text: str) -> str | None:
    """What is wrong with a template's `{fields}`, or None."""
    try:
        used = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
    except ValueError as exc:
        return f"template {name!r}: {exc}"
    unknown = sorted(used - TEMPLATE_FIELDS[name])
    if unknown:
        allowed = sorted(TEMPLATE_FIELDS[name])
        return f"template {name!r}: unknown field(s) {unknown} (allowed: {allowed})"
    return None


LOOP_PAIRS = (
    ("same_call_notice", "same_call_escalate"),
    ("cycle_min_length", "cycle_max_length"),
    ("window_notice", "window_escalate"),
    ("message_repeats", "message_escalate"),
    ("compaction_repeats", "compaction_escalate"),
    ("repeat_warn", "repeat_stop"),
)


def threshold_problems(thresholds: Thresholds) -> list[str]:
    """Pairs of thresholds in the wrong order, and a window too short for its count."""
    problems = [
        f"thresholds: {high} must be >= {low}"
        for low, high in LOOP_PAIRS
        if getattr(thresholds, high) < getattr(thresholds, low)
    ]
    if thresholds.window_notice > thresholds.loop_window:
        problems.append("thresholds: window_notice must be <= loop_window")
    return problems
