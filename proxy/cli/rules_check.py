"""`recovery-proxy rules check [DIR]`: validate rule files and run their embedded examples."""

from __future__ import annotations

import sys
from pathlib import Path

from recovery_proxy.core.classify import categorise, key_line
from recovery_proxy.rules.load import load_rules
from recovery_proxy.rules.model import Matcher, Rules, RulesError
from recovery_proxy.rules.schema import CategoryRule, PatternRule


def example_failures(rules: Rules) -> tuple[int, list[str]]:
    """Run every rule's `examples`; returns (examples run, descriptions of failures)."""
    compiled: dict[tuple[str, str], Matcher] = {
        **{
            ("detection", m.id): m
            for part in (rules.not_error, rules.exit_zero, rules.error, rules.reply, rules.answers)
            for m in part
        },
        **{("unwrap", m.id): m for m in rules.unwrap},
        **{("trailer", m.id): m for m in rules.trailer},
        **{("marker", m.id): m for m in rules.markers},
    }
    ran = 0
    failures: list[str] = []
    for name, rule_file in rules.files.items():
        pattern_rules: list[tuple[str, PatternRule]] = [
            *(("unwrap", r) for r in rule_file.detection.unwrap),
            *(("trailer", r) for r in rule_file.detection.trailer),
            *(("detection", r) for r in rule_file.detection.answers),
            *(("detection", r) for r in rule_file.detection.not_error),
            *(("detection", r) for r in rule_file.detection.exit_zero),
            *(("detection", r) for r in rule_file.detection.error),
            *(("detection", r) for r in rule_file.detection.reply),
            *(("marker", r) for r in rule_file.compaction.markers),
        ]
        for section, rule in pattern_rules:
            matcher = compiled[(section, rule.id)]
            for text in rule.examples.match:
                ran += 1
                if not matcher.search(text):
                    failures.append(f"{name}: rule {rule.id!r} should match {text!r}")
            for text in rule.examples.no_match:
                ran += 1
                if matcher.search(text):
                    failures.append(f"{name}: rule {rule.id!r} should not match {text!r}")
        for category in rule_file.categories:
            for text, wanted in [(t, True) for t in category.examples.match] + [
                (t, False) for t in category.examples.no_match
            ]:
                ran += 1
                data = text.encode()
                got = categorise("", key_line(data, rules).encode(), data, rules)
                if (got == category.id) != wanted:
                    verb = "should" if wanted else "should not"
                    failures.append(
                        f"{name}: category {category.id!r} {verb} claim {text!r} (got {got!r})"
                    )
            ran += _error_hint_failures(name, category, rules, failures)
    return ran, failures


def _error_hint_failures(
    name: str, category: CategoryRule, rules: Rules, failures: list[str]
) -> int:
    """Run a category's `error_hints` examples: a `match` text's key line must get the hints
    of its entry (no earlier entry shadows it), a `no_match` one must not."""
    compiled = rules.category(category.id)
    ran = 0
    for i, entry in enumerate(category.error_hints):
        for text, wanted in [(t, True) for t in entry.examples.match] + [
            (t, False) for t in entry.examples.no_match
        ]:
            ran += 1
            line = key_line(text.encode(), rules)
            chosen = compiled is not None and compiled.hints_for("", line) == tuple(entry.hints)
            if chosen != wanted:
                verb = "should" if wanted else "should not"
                failures.append(
                    f"{name}: category {category.id!r} error_hints[{i}] {verb} give its hints"
                    f" for {text!r} (key line {line!r})"
                )
    return ran


def check_rules(directory: Path | None, extra: Path | None = None) -> int:
    """Print what is wrong, if anything; exit status 0 only when everything passes."""
    try:
        rules = load_rules(directory, extra)
    except RulesError as exc:
        print(f"rules invalid: {exc}", file=sys.stderr)
        return 1
    ran, failures = example_failures(rules)
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    count = len(rules.not_error) + len(rules.exit_zero) + len(rules.error) + len(rules.reply)
    count += len(rules.categories) + len(rules.markers)
    status = "FAILED" if failures else "ok"
    print(
        f"rules {status}: {rules.source} version {rules.version}, {count} rules, "
        f"{ran} examples, {len(failures)} failures"
    )
    return 1 if failures else 0
