"""Loading rules: read and validate every `*.yaml` file of a rules directory (the bundled one
by default, optionally an extra directory on top: proxy/rules/overlay.py) and build them into
one compiled `Rules` (proxy/rules/model.py). Files are merged in name order (lists concatenate,
mappings merge key by key, later files win). Any problem is a `RulesError` naming the file,
the rule id and what is wrong; a bad file is never half-applied.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from recovery_proxy.rules.model import (
    Category,
    Matcher,
    Rules,
    RulesError,
    Templates,
    compile_pattern,
)
from recovery_proxy.rules.overlay import overlay
from recovery_proxy.rules.pattern_set import PatternSet
from recovery_proxy.rules.schema import (
    TEMPLATE_NAMES,
    ErrorHints,
    Escalation,
    PatternRule,
    Placement,
    RuleFile,
    Scan,
    Sessions,
    Targets,
    Thresholds,
    template_problem,
    threshold_problems,
)

# libyaml's safe loader when PyYAML has it: the same documents, a tenth of the time (the
# bundled rules: 66 -> 7 ms), paid at start-up, by `rules check` and on every hot reload.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_rules_dir() -> Path:
    """The rules bundled with the package (the repository's top-level `rules/`)."""
    spec = importlib.util.find_spec("recovery_proxy_rules")
    if spec is None or not spec.submodule_search_locations:
        raise RulesError("bundled rules (recovery_proxy_rules) are not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def yaml_problem(path: Path, exc: Exception) -> str:
    """A file that would not read as YAML, as one line: `/full/path:LINE:COLUMN: problem`
    (PyYAML's own message spans four lines and names the file `<unicode string>`)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or exc
    where = f"{path.resolve()}:{mark.line + 1}:{mark.column + 1}" if mark else path.resolve()
    return f"{where}: {' '.join(str(problem).split())}"


# Templates added after the first release: a rules directory copied before they existed takes
# the bundled wording for them instead of failing to load (`rules check` still lists none).
LATER_TEMPLATES = frozenset(
    {
        "same_error",
        "resolution_found",
        "resolution_after",
        "resolution_changed",
        "resolution_retried",
        "summary_resolution",
        "resolved_before",
        "resolution_event",
        "known_fix",
        "ledger",
    }
)


@functools.cache
def bundled_templates() -> dict[str, str]:
    """The `templates:` of the bundled rules, merged in file order."""
    merged: dict[str, str] = {}
    for rule_file in read_files(default_rules_dir()).values():
        merged.update(rule_file.templates)
    return merged


def read_files(directory: Path) -> dict[str, RuleFile]:
    """Parse and validate every `*.yaml` file of a rules directory."""
    if not directory.is_dir():
        raise RulesError(f"{directory}: rules directory does not exist")
    paths = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
    if not paths:
        raise RulesError(f"{directory}: no *.yaml rule files")
    files: dict[str, RuleFile] = {}
    for path in paths:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise RulesError(f"{path.name}: cannot read YAML: {yaml_problem(path, exc)}") from None
        if not isinstance(data, dict):
            raise RulesError(f"{path.name}: top level must be a mapping, got {type(data).__name__}")
        try:
            files[path.name] = RuleFile.model_validate(data)
        except ValidationError as exc:
            raise RulesError(f"{path.name}: {_describe(exc, data)}") from None
    return files


def _describe(exc: ValidationError, data: dict[str, Any]) -> str:
    """Name the rule id (when the error sits inside a list of rules) and the problem."""
    problems = []
    for error in exc.errors():
        loc = error["loc"]
        node: Any = data
        rule_id = None
        for part in loc:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                break
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                rule_id = node["id"]
        where = ".".join(str(p) for p in loc)
        prefix = f"rule {rule_id!r} ({where})" if rule_id else where
        problems.append(f"{prefix}: {error['msg']}")
    return "; ".join(problems)


def _merge_dicts(items: Iterable[BaseModel | None], model: type[BaseModel]) -> Any:
    merged: dict[str, Any] = {}
    for item in items:
        if item is not None:
            merged.update(item.model_dump(exclude_unset=True))
    return model.model_validate(merged)


def _matchers(rules: Iterable[PatternRule], where: str) -> tuple[Matcher, ...]:
    return tuple(Matcher(r.id, compile_pattern(r.pattern, f"{where} rule {r.id!r}")) for r in rules)


def _extend_categories(categories: list[Category], files: dict[str, RuleFile]) -> list[Category]:
    """Add each file's `category_patterns` to the category of that id as its `extra`
    patterns (its place and hints stay): how a generated file such as 15-localised.yaml
    extends hand-written categories."""
    by_id = {c.id: i for i, c in enumerate(categories)}
    for name, rule_file in files.items():
        for category_id, patterns in rule_file.category_patterns.items():
            if category_id not in by_id:
                raise RulesError(f"{name}: category_patterns: no category {category_id!r}")
            i = by_id[category_id]
            where = f"{name} category_patterns {category_id!r}"
            more = tuple(Matcher(category_id, compile_pattern(p, where)) for p in patterns)
            categories[i] = replace(categories[i], extra=categories[i].extra + more)
    return categories


def build(files: dict[str, RuleFile], source: str = "") -> Rules:
    """Merge parsed files into one compiled rule set, checking ids and templates."""
    seen: dict[str, str] = {}
    for name, rule_file in files.items():
        d = rule_file.detection
        ids = [r.id for r in (*d.not_error, *d.exit_zero, *d.error, *d.reply, *d.answers)]
        ids += [f"unwrap:{r.id}" for r in d.unwrap]
        ids += [f"trailer:{r.id}" for r in d.trailer]
        ids += [f"key_line:{r.id}" for r in d.key_line]
        ids += [f"marker:{r.id}" for r in rule_file.compaction.markers]
        ids += [f"category:{c.id}" for c in rule_file.categories]
        for rule_id in ids:
            if rule_id in seen:
                raise RulesError(f"{name}: rule {rule_id!r} is already defined in {seen[rule_id]}")
            seen[rule_id] = name

    def each(attr: str) -> list[tuple[str, Any]]:
        return [(name, getattr(f, attr)) for name, f in files.items()]

    unwrap: list[Matcher] = []
    trailer: list[Matcher] = []
    answers: list[Matcher] = []
    command_keys: list[str] = []
    not_error: list[Matcher] = []
    exit_zero: list[Matcher] = []
    error: list[Matcher] = []
    reply: list[Matcher] = []
    key_line: list[Matcher] = []
    markers: list[Matcher] = []
    categories: list[Category] = []
    cleared: list[str] = []
    steer_provider, provider_instructions = True, ""
    templates: dict[str, str] = {}
    for name, rule_file in files.items():
        d = rule_file.detection
        unwrap += _matchers(d.unwrap, name)
        trailer += _matchers(d.trailer, name)
        answers += _matchers(d.answers, name)
        command_keys += [k for k in d.command_keys if k not in command_keys]
        not_error += _matchers(d.not_error, name)
        exit_zero += _matchers(d.exit_zero, name)
        error += _matchers(d.error, name)
        reply += _matchers(d.reply, name)
        key_line += _matchers(d.key_line, name)
        markers += _matchers(rule_file.compaction.markers, name)
        cleared += rule_file.compaction.cleared
        if rule_file.compaction.steer_provider is not None:
            steer_provider = rule_file.compaction.steer_provider
        if rule_file.compaction.provider_instructions is not None:
            provider_instructions = rule_file.compaction.provider_instructions
        for key in rule_file.templates:
            if key not in TEMPLATE_NAMES:
                raise RulesError(
                    f"{name}: unknown template {key!r} (known: {sorted(TEMPLATE_NAMES)})"
                )
            problem = template_problem(key, rule_file.templates[key])
            if problem:
                raise RulesError(f"{name}: {problem}")
        templates.update(rule_file.templates)
        for c in rule_file.categories:
            where = f"{name} category {c.id!r}"
            categories.append(
                Category(
                    id=c.id,
                    matchers=tuple(Matcher(c.id, compile_pattern(p, where)) for p in c.patterns),
                    tools=compile_pattern(c.tools, where) if c.tools else None,
                    hints=tuple(c.hints),
                    tool_hints=tuple(
                        (compile_pattern(t.tools, where), tuple(t.hints)) for t in c.tool_hints
                    ),
                    systemic=c.systemic,
                    subject=_subject_pattern(c.subject, where) if c.subject else None,
                    error_hints=_error_hints(c.error_hints, where),
                )
            )
    categories = _extend_categories(categories, files)
    if not any(c.id == "unknown" for c in categories):
        raise RulesError("categories: a category 'unknown' (the fallback) is required")
    for name in (TEMPLATE_NAMES - templates.keys()) & LATER_TEMPLATES:
        templates[name] = bundled_templates()[name]  # a rules copy older than the template
    missing = TEMPLATE_NAMES - templates.keys()
    if missing:
        raise RulesError(f"templates missing: {sorted(missing)}")
    thresholds = _merge_dicts((f for _, f in each("thresholds")), Thresholds)
    problems = threshold_problems(thresholds)
    if problems:
        raise RulesError("; ".join(problems))
    escalation = _merge_dicts((f for _, f in each("escalation")), Escalation)
    if escalation.action == "webhook" and not escalation.webhook_url:
        raise RulesError("escalation: action 'webhook' needs webhook_url")
    digest = hashlib.sha256()
    for name, rule_file in files.items():
        digest.update(name.encode() + b"\0" + rule_file.model_dump_json().encode())
    return Rules(
        version=digest.hexdigest()[:12],
        source=source,
        scan=_merge_dicts((f for _, f in each("scan")), Scan),
        unwrap=tuple(unwrap),
        trailer=tuple(trailer),
        answers=tuple(answers),
        command_keys=tuple(command_keys),
        not_error=tuple(not_error),
        error=tuple(error),
        exit_zero=tuple(exit_zero),
        reply=tuple(reply),
        key_line=tuple(key_line),
        categories=tuple(categories),
        targets=_merge_dicts((f for _, f in each("targets")), Targets),
        templates=Templates(**templates),
        thresholds=thresholds,
        escalation=escalation,
        placement=_merge_dicts((f for _, f in each("placement")), Placement),
        markers=tuple(markers),
        cleared=tuple(cleared),
        sessions=_merge_dicts((f for _, f in each("sessions")), Sessions),
        steer_provider=steer_provider,
        provider_instructions=provider_instructions,
        files=files,
        detection_set=PatternSet(
            [m.regex.pattern for m in (*unwrap, *not_error, *exit_zero, *error, *reply)],
            "detection",
            parts=(len(unwrap), len(not_error), len(exit_zero), len(error), len(reply)),
        ),
        error_set=_pattern_set(error, "detection.error"),
        reply_set=_pattern_set(reply, "detection.reply"),
        answer_set=_pattern_set(answers, "detection.answers"),
        key_line_set=_pattern_set(key_line, "detection.key_line"),
        category_set=_pattern_set([m for c in categories for m in c.matchers], "categories"),
        category_owner=tuple(i for i, c in enumerate(categories) for _ in c.matchers),
        category_extra_set=_pattern_set([m for c in categories for m in c.extra], "categories"),
        category_extra_owner=tuple(i for i, c in enumerate(categories) for _ in c.extra),
        marker_set=_pattern_set(markers, "compaction.markers"),
    )


def _subject_pattern(pattern: str, where: str) -> Any:
    """A category's `subject` pattern: its (groups) capture what the error names (alternatives
    may each have one; the first that matched counts)."""
    regex = compile_pattern(pattern, f"{where} subject")
    if regex.groups < 1:
        raise RulesError(f"{where} subject: the pattern needs a (group) around what it names")
    return regex


def _error_hints(entries: list[ErrorHints], where: str) -> tuple[tuple[Any, tuple[str, ...]], ...]:
    """A category's `error_hints`, compiled: (RE2 on the key line, its hints)."""
    return tuple(
        (compile_pattern(e.pattern, f"{where} error_hints[{i}].pattern"), tuple(e.hints))
        for i, e in enumerate(entries)
    )


def _pattern_set(matchers: list[Matcher], where: str) -> PatternSet:
    return PatternSet([m.regex.pattern for m in matchers], where)


def load_rules(directory: Path | None = None, extra: Path | None = None) -> Rules:
    """Read, validate and compile a rules directory (default: the bundled rules), with an
    optional extra directory on top (`overlay`)."""
    directory = directory or default_rules_dir()
    files = read_files(directory)
    if extra is None:
        return build(files, str(directory))
    try:
        extra_files = read_files(extra)
    except RulesError as exc:
        raise RulesError(f"extra rules {exc}") from None
    return build(overlay(files, extra_files), f"{directory} + {extra}")
