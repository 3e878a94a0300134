"""Rendering `rules/15-localised.yaml`: the detection rules per kind of message and the
patterns per category."""

from __future__ import annotations

import yaml

from scripts.localised.catalogs import ROOT, Catalog, History, translations
from scripts.localised.messages import MESSAGES
from scripts.localised.patterns import (
    SPACES,
    WILDCARD,
    add_category,
    alternation,
    drop_ambiguous,
    help_pattern,
    to_pattern,
    trim,
    usage_word,
)

# The kinds whose English msgid the rules take too: a severity (PostgreSQL's `ERROR:  `) and
# a category message as they are, a PostgreSQL client's `error: ` as it is (its programs'
# names anchor it), a line or tool message for its category words only (its
# English detection is 10-detection.yaml's and 12-ecosystems.yaml's: a loose `prog: ...: `
# prefix is safe for translations only, and every alternative in these unanchored rules makes
# the DFA dearer on texts it has not seen).
ENGLISH_KINDS = ("line", "tool", "severity", "client", "category", "answer")

# The exit-code headers of Claude Code, Codex, Gemini CLI and Roo Code, and OpenCode's
# `<stdout>` block, that an answer may follow (as in 12-ecosystems.yaml's
# query-answer-nonzero-exit); OpenHands puts its exit code last.
ANSWER_HEADER = (
    "(?:Exit code:? [1-3]\\nWall time: [^\\n]*\\n(?:Total output lines: \\d+\\n)?Output:\\n|"
    "Exit code [1-3]\\n|Command: [^\\n]*\\nDirectory: [^\\n]*\\n(?:Stdout|Output): |"
    "(?:\\[\\w+(?: for '[^\\n]*')?\\] Result:\\n)?Command executed in terminal [^\\n]*\\n"
    "Exit code: [1-3]\\nOutput:\\n|<stdout>\\n)?"
)

KINDS = (
    "line",
    "suffix",
    "infix",
    "tool",
    "severity",
    "prefix",
    "client",
    "help",
    "usage",
    "dots",
    "answer",
)

# The PostgreSQL client programs that print `prog: error: ` (src/common/logging.c).
PG_CLIENTS = (
    "(?:initdb|pg_\\w+|psql|createdb|createuser|dropdb|dropuser|clusterdb|reindexdb|vacuumdb)"
)


def _quote(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def category_order() -> list[str]:
    """The categories in the order they are tried (rules/20-categories.yaml)."""
    text = (ROOT / "rules" / "20-categories.yaml").read_text(encoding="utf-8")
    return [c["id"] for c in yaml.safe_load(text)["categories"]]


def collect(data: Catalog, past: History) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The fragments of every message, by the kind of rule they go to and by category."""
    by_kind: dict[str, list[str]] = {k: [] for k in KINDS}
    by_category: dict[str, list[str]] = {}
    for domain, msgid, category, kind in MESSAGES:
        translated = [text for _lang, text in translations(data, past, domain, msgid)]
        if not translated:
            continue  # a domain this extract lacks: its English alone is no localised rule
        english = [msgid] if kind in ENGLISH_KINDS else []
        for msgstr in english + translated:
            fragment = to_pattern(msgstr)
            if msgstr is msgid and kind in ("line", "tool"):  # its category words only
                add_category(by_category, category, fragment)
                continue
            if kind == "tool" and fragment.startswith(WILDCARD) and domain != "make":
                # `%s is not a valid date` ends a `prog: ` line; `%2$s에 대해 ... %1$s` is in it
                kind_here = "infix" if fragment.endswith(WILDCARD) else "suffix"
            else:
                kind_here = kind
            if kind_here == "usage":  # English `Usage:` also opens a --help text
                if len(usage_word(msgstr)) >= 2 and usage_word(msgstr).lower() != "usage":
                    by_kind["usage"].append(usage_word(msgstr))
                continue  # a usage word alone says nothing about the category
            # A wildcard at either end would keep a thread alive along every line of every
            # result: the rules give the prefix (`make: *** `, one shared wildcard for the
            # suffixes) and need no tail.
            if kind_here == "answer":  # anchored at the output's start: its head stays
                # a file name where the catalog has one, not any words (`Only in-memory
                # stores are supported: ...` is an error, not diff's `Only in DIR: NAME`)
                name = f"{SPACES}*\\S+{SPACES}*"
                by_kind["answer"].append(trim(fragment, head=False).replace(WILDCARD, name))
                continue
            if kind_here != "category":
                by_kind[kind_here].append(fragment if kind_here == "line" else trim(fragment))
            add_category(by_category, category, fragment)
    drop_ambiguous(by_category, category_order())
    return by_kind, by_category


def _error_rules(by_kind: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    """(id, description, pattern) of the detection rules that flag an error."""
    sep = "(?::[ \\x{a0}\\x{202f}]?|[ \\x{a0}\\x{202f}]:[ \\x{a0}\\x{202f}]|：)"
    line = alternation(by_kind["line"])
    return [
        (
            "localised-system-errors",
            "a strerror or bash message in the user's language ending a `prog: ...: ` line "
            "in the first two lines, or wget's translated `... failed: <error>.` ending the output",
            f"(?m)\\A(?:[^\\n]*\\n)?[^\\n]*?{sep}(?:{line}|"
            f"[^\\n]*?{alternation(by_kind['suffix'])})[.。]?[ \\t]*$|"
            f"\\A(?:[^\\n]*\\n)?[^\\n]*?{sep}[^\\n]*?{alternation(by_kind['infix'])}|"
            f"(?:\\.\\.\\.|…) ?{alternation(by_kind['dots'])}[^\\n]*\\s*\\z",
        ),
        (
            "localised-tool-messages",
            "git, apt, dpkg, make, tar, find, coreutils, grep, wget and PostgreSQL failure "
            "messages in the user's language, at the start of a line or after one or two "
            "`prog: ` prefixes",
            f"(?m)^[ \\t]*(?:[\\w./-]+(?:\\[\\d+\\])?{sep}[ \\t]*){{0,2}}(?:[*]{{3}} +)?"
            f"{alternation(by_kind['tool'])}",
        ),
        (
            "localised-postgres-severity",
            "psql output opening with `psql: `, or an ERROR or FATAL severity (translated or "
            "not, after `psql:FILE:LINE: ` when psql runs a file) in its first five lines",
            f"\\A\\s*psql: \\S|\\A(?:[^\\n]*\\n){{0,4}}?(?:psql:[^\\n]*?: )?"
            f"{alternation(by_kind['severity'])}:  \\S",
        ),
        (
            "localised-error-prefix",
            "git's translated `fatal: ` or `error: ` opening one of the first four lines",
            f"\\A(?:[^\\n]*\\n){{0,3}}?{alternation(by_kind['prefix'])}[ \\x{{a0}}]?\\S",
        ),
        (
            "localised-postgres-client-error",
            "a PostgreSQL client program's `prog: error: `, translated or not (initdb, pg_dump, "
            "createdb, ...) opening one of the first twelve lines (initdb reports its settings "
            "first)",
            f"\\A(?:[^\\n]*\\n){{0,11}}?{PG_CLIENTS}: "
            f"{alternation(by_kind['client'])}[ \\x{{a0}}]?\\S",
        ),
        (
            "localised-usage-error",
            "a usage error in the user's language: getopt's `Try 'prog --help'` line after the "
            "message, or a `Usage:` line right after a `prog: ` message",
            f"\\A[^\\n]*\\n(?:[^\\n]*\\n){{0,2}}?[^\\n]*?{help_pattern(by_kind['help'])}|"
            f"\\A[\\w./+-]+(?:\\[\\d+\\])?{sep}[^\\n]+\\n[ \\t]*"
            f"{alternation(by_kind['usage'])}{sep}[ \\t]*[\\w./+-]",
        ),
    ]


def render(data: Catalog, past: History | None = None) -> str:
    """The rules file for an extract (and the past translations `history` found): detection
    rules per kind, patterns per category."""
    past = past or {}
    by_kind, by_category = collect(data, past)
    versions = sorted(
        f"{domain}: " + ", ".join(f"{lang} {v}" for lang, v in sorted(entry["versions"].items()))
        for domain, entry in data.items()
    )
    sources = sorted(f"{domain}: {entry['source']}" for domain, entry in past.items())
    lines = [
        "# GENERATED by `python -m scripts.localised render` from",
        "# scripts/localised_messages.json (the gettext catalogs below) and",
        "# scripts/localised_history.json (their past versions upstream); do not edit by hand:",
        "# change scripts/localised/ and regenerate. Errors the OS and tools print in",
        "# the user's language (issue 23).",
        "# Catalogs (domain: language version):",
        *(f"#   {line[:200]}" for line in versions),
        "# Past versions (domain: repository, files, versions read):",
        *(f"#   {line[:200]}" for line in sources),
        "",
        "detection:",
        "  not_error:",
        "    - id: localised-diff-answer",
        "      description: "
        + _quote(
            "diff's and cmp's report that the inputs differ (`Only in`, `Files ... differ`, "
            "`Binary files ... differ`, `a b differ: byte N, line N`), in any language, opening "
            "the output: its exit code 1 is the answer"
        ),
        f"      pattern: {_quote(chr(92) + 'A' + ANSWER_HEADER + alternation(by_kind['answer']))}",
        "  error:",
    ]
    for rule_id, description, pattern in _error_rules(by_kind):
        lines += [
            f"    - id: {rule_id}",
            f"      description: {_quote(description)}",
            f"      pattern: {_quote(pattern)}",
        ]
    lines += [
        "  reply:",
        "    - id: localised-psql-script-error",
        "      description: "
        + _quote(
            "a psql script's `psql:FILE:LINE: ERROR:  ...` line, its severity translated or not "
            "(psql -f goes on after an error and exits 0), at the start of any line or after "
            "Gemini CLI's `Stderr: `"
        ),
        "      pattern: "
        + _quote(
            "(?m)^(?:Stderr: )?psql:[^\\n]*:\\d+: " + alternation(by_kind["severity"]) + ":  \\S"
        ),
    ]
    lines += ["", "category_patterns:"]
    for category in sorted(by_category):
        lines += [f"  {category}:", f"    - {_quote(alternation(by_category[category]))}"]
    return "\n".join(lines) + "\n"
