"""`recovery-proxy explain FILE|-`: a dry run over a saved request body, no network.

For each tool result: its call id, tool, target, whether it is a failure, the rule that
decided, the category, the key line, and the exact text the proxy would add on first sight
(a fresh session: what a new conversation gets).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson

from recovery_proxy import tokens
from recovery_proxy.core.classify import classify, target_of
from recovery_proxy.core.plan import Budget
from recovery_proxy.core.state import SessionState
from recovery_proxy.core.tracker import observe
from recovery_proxy.rules.load import load_rules
from recovery_proxy.rules.model import Rules, RulesError
from recovery_proxy.wire import FORMATS, WireFormat


def detect_format(payload: dict[str, Any]) -> WireFormat:
    """The wire format a saved body speaks, from its shape."""
    by_name = {wire.name: wire for wire in FORMATS}
    if "input" in payload and "messages" not in payload:
        return by_name["openai_responses"]
    if "contents" in payload and "gemini" in by_name:
        return by_name["gemini"]
    messages = payload.get("messages")
    if "system" in payload or _has_anthropic_blocks(messages):
        return by_name["anthropic_messages"]
    return by_name["openai_chat"]


def _has_anthropic_blocks(messages: Any) -> bool:
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result"):
                return True
    return False


def explain(payload: dict[str, Any], rules: Rules) -> dict[str, Any]:
    """`{"format", "results": [{"call_id", "tool", "target", "error", "category", "rule",
    "key_line", "added"}, ...]}` for one request body."""
    wire = detect_format(payload)
    conv = wire.parse(payload)
    if conv is None:
        return {"format": wire.name, "results": []}
    th = rules.thresholds
    budget = Budget(tokens.count, th.block_tokens, th.request_tokens, tokens.DEFAULT_WINDOW)
    plan = observe(SessionState(), conv, rules, budget, time.time())
    results = []
    for result in conv.results:
        verdict = classify(rules, result.tool, result.text, result.is_error)
        arguments = result.call.arguments if result.call else {}
        results.append(
            {
                "call_id": result.call_id,
                "tool": result.tool,
                "target": target_of(arguments, rules),
                "error": verdict.error,
                "category": verdict.category or None,
                "rule": verdict.rule or None,
                "key_line": verdict.key_line or None,
                "added": plan.appends.get(result.position),
            }
        )
    return {"format": wire.name, "summary": plan.summary or None, "results": results}


def render_text(report: dict[str, Any]) -> str:
    """The report for a terminal."""
    lines = [f"format: {report['format']}, {len(report['results'])} tool results"]
    for r in report["results"]:
        verdict = f"FAILURE {r['category']} (rule {r['rule']})" if r["error"] else "ok"
        if not r["error"] and r["rule"]:
            verdict += f" (rule {r['rule']})"
        target = f' "{r["target"]}"' if r["target"] else ""
        lines.append(f"\n- {r['call_id'] or '(no id)'} {r['tool']}{target}: {verdict}")
        if r["key_line"]:
            lines.append(f"  key line: {r['key_line']}")
        if r["added"]:
            lines.append("  would add:")
            lines += [f"    {line}" for line in r["added"].strip("\n").splitlines()]
    return "\n".join(lines)


def run_explain(
    source: str, as_json: bool, rules_dir: Path | None, extra: Path | None = None
) -> int:
    """The CLI command: 0 on success, 2 for a body it cannot read."""
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
    report = explain(payload, rules)
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render_text(report))
    return 0
