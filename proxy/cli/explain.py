"""`recovery-proxy explain FILE|-`: a dry run over a saved request body, no network.

For each tool result: its call id, tool, target, whether it is a failure, the rule that
detected it and the category rule that named it (with the files they come from), the key
line, and the exact text the proxy would add on first sight (a fresh session: what a new
conversation gets), or, for a failure that gets nothing, the planner's reason.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson

from recovery_proxy import tokens
from recovery_proxy.config import Settings
from recovery_proxy.core.classify import Verdict, classify, target_of
from recovery_proxy.core.commands import command_line
from recovery_proxy.core.plan import Budget, Skip
from recovery_proxy.core.state import MAX_SEEN, SessionState
from recovery_proxy.core.tracker import MAX_JUDGED, observe
from recovery_proxy.pipeline import budget_numbers
from recovery_proxy.rules.load import load_rules, read_files
from recovery_proxy.rules.model import Rules, RulesError
from recovery_proxy.wire import FORMATS, WireFormat

# What a body of each format must have (the field its wire module's `parse` reads).
SHAPES = {
    "openai_chat": "a `messages` list",
    "openai_responses": "an `input` list or string",
    "anthropic_messages": "a `messages` list with a top-level `system` or tool_use/tool_result "
    "blocks",
    "gemini": "a `contents` list",
}
# Content blocks only Anthropic Messages has (Chat Completions parts are text/image/audio/file).
ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def detect_format(payload: dict[str, Any]) -> WireFormat | None:
    """The wire format a saved body speaks, from its shape; None for none of them."""
    by_name = {wire.name: wire for wire in FORMATS}
    if isinstance(payload.get("contents"), list):
        return by_name["gemini"]
    messages = payload.get("messages")
    if isinstance(messages, list):
        if "system" in payload or _has_anthropic_blocks(messages):
            return by_name["anthropic_messages"]
        return by_name["openai_chat"]
    if isinstance(payload.get("input"), list | str):
        return by_name["openai_responses"]
    return None


def _has_anthropic_blocks(messages: list[Any]) -> bool:
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in ANTHROPIC_BLOCKS:
                return True
    return False


def known_shapes() -> str:
    """Every format and what its body must have, on one line."""
    return ", ".join(f"{wire.name} ({SHAPES.get(wire.name, '?')})" for wire in FORMATS)


def reason_text(reason: Skip, rules: Rules) -> str:
    """Why a failure gets nothing, in words."""
    th = rules.thresholds
    return {
        "history": "seen as history: on first sight of a conversation only the newest tool "
        "batch (the results answering the latest assistant turn) gets blocks; older results "
        "are recorded but left byte for byte, so the provider's prompt cache still holds (a "
        "live session annotates each result when it arrives)",
        "unjudged": f"not judged: a request judges at most its {MAX_JUDGED:,} newest new "
        f"results, and a session remembers {MAX_SEEN:,}",
        "request_budget": f"over the request's budget: at most {th.request_tokens:,} new tokens "
        "per request (thresholds.request_tokens), already spent on the blocks before it",
        "window": "no room left in the model's context window",
        "near_window": f"the request is above {th.near_window:.0%} of the model's context window "
        "(thresholds.near_window): only escalations are added",
        "present": "the result already ends with exactly this block (a body the proxy rewrote)",
    }[reason]


def rule_files(rules: Rules, extra: Path | None) -> dict[str, str]:
    """Where each detection rule and category is defined (`error:ID`, `category:ID` -> a file
    name; an `--extra-rules` file by its path, also for a rule it replaced in place)."""
    where: dict[str, str] = {}
    for name, rule_file in rules.files.items():
        shown = name.partition("#")[0]
        if extra is not None and shown.startswith("extra/"):
            shown = str(extra / shown.removeprefix("extra/"))
        where.update({f"error:{r.id}": shown for r in rule_file.detection.error})
        where.update({f"category:{c.id}": shown for c in rule_file.categories})
    if extra is not None:
        for name, rule_file in read_files(extra).items():  # read at load: it parses
            where.update({f"error:{r.id}": str(extra / name) for r in rule_file.detection.error})
            where.update({f"category:{c.id}": str(extra / name) for c in rule_file.categories})
    return where


def explain(
    payload: dict[str, Any],
    rules: Rules,
    wire: WireFormat | None = None,
    extra: Path | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """`{"format", "summary", "results": [{"call_id", "tool", "target", "error", "category",
    "rule", "rule_file", "category_rule", "category_file", "key_line", "added", "reason",
    "reason_code"}, ...]}` for one request body, in `wire`'s format (default: detected). A
    body of no known format, or without what `wire` reads, is a ValueError."""
    wire = wire or detect_format(payload)
    if wire is None:
        raise ValueError(f"not a request body of a known format: {known_shapes()}")
    conv = wire.parse(payload)
    if conv is None:
        shape = SHAPES.get(wire.name, "?")
        raise ValueError(f"not a request in the {wire.name} format: it needs {shape}")
    size = len(orjson.dumps(payload))
    numbers = budget_numbers(size, payload, wire, conv.model, rules, settings)
    budget = Budget(tokens.count, rules.thresholds.block_tokens, *numbers)
    verdicts: dict[str, Verdict] = {}
    plan = observe(SessionState(), conv, rules, budget, time.time(), verdicts)
    where = rule_files(rules, extra)
    results = []
    for index, result in enumerate(conv.results):
        verdict = verdicts.get(result.key)
        if verdict is None:  # judged before the newest turn: judged here, as the tracker would
            command = command_line(result.call.arguments, rules.command_keys) if result.call else ""
            verdict = classify(rules, result.tool, result.text, result.is_error, command)
        added = plan.appends.get(result.position)
        reason: Skip | None = plan.skipped.get(result.position)
        if verdict.error and added is None and reason is None and index < plan.judged_from:
            reason = "unjudged"
        category = rules.category(verdict.category) if verdict.error else None
        fallback = category is not None and category.id == "unknown" and not category.matchers
        category_rule = category.id if category is not None and not fallback else None
        arguments = result.call.arguments if result.call else {}
        results.append(
            {
                "call_id": result.call_id,
                "tool": result.tool,
                "target": target_of(arguments, rules),
                "error": verdict.error,
                "category": verdict.category or None,
                "rule": verdict.rule or None,
                "rule_file": where.get(f"error:{verdict.rule}"),
                "category_rule": category_rule,
                "category_file": where.get(f"category:{category_rule}"),
                "key_line": verdict.key_line or None,
                "added": added,
                "reason": reason_text(reason, rules) if verdict.error and reason else None,
                "reason_code": reason if verdict.error else None,
            }
        )
    return {"format": wire.name, "summary": plan.summary or None, "results": results}


def _verdict(r: dict[str, Any]) -> str:
    """`FAILURE category (detected by ..., category from ...)` or `ok`."""
    if not r["error"]:
        return "ok"
    if r["rule"] == "wire-flag":
        detected = "detected by the wire format's error flag"
    else:
        detected = f"detected by rule {r['rule']}" + (
            f" in {r['rule_file']}" if r["rule_file"] else ""
        )
    if r["category_rule"] is None:
        named = "no category rule matched"
    else:
        named = f"category from rule {r['category_rule']}" + (
            f" in {r['category_file']}" if r["category_file"] else ""
        )
    return f"FAILURE {r['category']} ({detected}, {named})"


def render_text(report: dict[str, Any]) -> str:
    """The report for a terminal."""
    lines = [f"format: {report['format']}, {len(report['results'])} tool results"]
    for r in report["results"]:
        target = f' "{r["target"]}"' if r["target"] else ""
        lines.append(f"\n- {r['call_id'] or '(no id)'} {r['tool']}{target}: {_verdict(r)}")
        if r["key_line"]:
            lines.append(f"  key line: {r['key_line']}")
        if r["added"] and r["reason"]:
            lines.append(f"  no block: {r['reason']}")
        if r["added"]:
            lines.append("  would add:")
            lines += [f"    {line}" for line in r["added"].strip("\n").splitlines()]
        elif r["error"]:
            lines.append(f"  nothing added: {r['reason'] or 'no reason recorded'}")
    if report["summary"]:
        lines.append("\nsummary in the system text:")
        lines += [f"    {line}" for line in report["summary"].splitlines()]
    return "\n".join(lines)


def run_explain(
    source: str,
    as_json: bool,
    rules_dir: Path | None,
    extra: Path | None = None,
    format_name: str | None = None,
    settings: Settings | None = None,
) -> int:
    """The CLI command: 0 on success, 2 for a body it cannot read or explain."""
    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
        payload = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError) as exc:
        print(f"recovery-proxy explain: cannot read {source}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(payload, dict):
        print("recovery-proxy explain: the body must be a JSON object", file=sys.stderr)
        return 2
    try:
        rules = load_rules(rules_dir, extra)
    except RulesError as exc:
        print(f"recovery-proxy explain: rules invalid: {exc}", file=sys.stderr)
        return 2
    wire = next((w for w in FORMATS if w.name == format_name), None)
    if format_name is not None and wire is None:
        names = ", ".join(w.name for w in FORMATS)
        message = f"recovery-proxy explain: unknown --format {format_name!r} ({names})"
        print(message, file=sys.stderr)
        return 2
    try:
        report = explain(payload, rules, wire, extra, settings)
    except ValueError as exc:
        name = "the body" if source == "-" else source
        print(f"recovery-proxy explain: {name} is {exc}", file=sys.stderr)
        return 2
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render_text(report))
    return 0
