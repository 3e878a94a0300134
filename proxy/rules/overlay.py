"""`--extra-rules DIR`: a team's rule files on top of the bundled (or `--rules`) ones."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from recovery_proxy.rules.model import RuleFile

# Lists of rules with ids, where an extra directory's rule replaces a base rule of equal id.
RULE_LISTS = (
    ("detection", "unwrap"),
    ("detection", "not_error"),
    ("detection", "exit_zero"),
    ("detection", "error"),
    ("detection", "reply"),
    ("detection", "key_line"),
    ("compaction", "markers"),
    (None, "categories"),
)


def _section(rule_file: RuleFile, section: str | None) -> BaseModel:
    return rule_file if section is None else getattr(rule_file, section)


def _with_list(rule_file: RuleFile, section: str | None, name: str, items: list[Any]) -> RuleFile:
    if section is None:
        return rule_file.model_copy(update={name: items})
    part = getattr(rule_file, section).model_copy(update={name: items})
    return rule_file.model_copy(update={section: part})


def overlay(base: dict[str, RuleFile], extra: dict[str, RuleFile]) -> dict[str, RuleFile]:
    """`extra`'s files on top of `base`'s. A rule or category whose id the extra files define
    replaces the base one in place (same position in the matching order); the extra files'
    other rules and categories match *before* the base ones (a team's specific category wins
    over a bundled general one); their templates, thresholds and settings win, as a later
    file's do."""
    replacing: dict[tuple[str | None, str, str], Any] = {}
    for rule_file in extra.values():
        for section, name in RULE_LISTS:
            for rule in getattr(_section(rule_file, section), name):
                replacing[(section, name, rule.id)] = rule
    used: set[tuple[str | None, str, str]] = set()
    replaced: dict[str, RuleFile] = {}
    for file_name, rule_file in base.items():
        for section, name in RULE_LISTS:
            items = []
            for rule in getattr(_section(rule_file, section), name):
                where = (section, name, rule.id)
                used.update([where] if where in replacing else [])
                items.append(replacing.get(where, rule))
            rule_file = _with_list(rule_file, section, name, items)
        replaced[file_name] = rule_file
    leading: dict[str, RuleFile] = {}
    trailing: dict[str, RuleFile] = {}
    for file_name, rule_file in extra.items():
        rules_only = RuleFile()
        settings_only = rule_file
        for section, name in RULE_LISTS:
            rest = [
                rule
                for rule in getattr(_section(rule_file, section), name)
                if (section, name, rule.id) not in used
            ]
            rules_only = _with_list(rules_only, section, name, rest)
            settings_only = _with_list(settings_only, section, name, [])
        leading[f"extra/{file_name}"] = rules_only
        trailing[f"extra/{file_name}#settings"] = settings_only
    return {**leading, **replaced, **trailing}
