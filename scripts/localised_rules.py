"""Localised error patterns from the operating system's own gettext catalogs (issue 23).

The proxy recognises `cat: x: No such file or directory`; a German system prints
`cat: x: Datei oder Verzeichnis nicht gefunden`. Rather than translating by hand, this script
reads the translations that libc, bash, coreutils, grep, git, make, apt and PostgreSQL ship
(`/usr/share/locale/<lang>/LC_MESSAGES/<domain>.mo`, Debian packages libc-l10n, bash,
coreutils, git, ...) and writes them as rules:

    python -m scripts.localised_rules extract   # .mo files -> scripts/localised_messages.json
    python -m scripts.localised_rules history DOMAIN UPSTREAM GIT_DIR [PO_DIR]
        # every past version of PO_DIR/<lang>.po in a clone (GIT_DIR) of an upstream
        # repository (glibc, bash, git) -> the translations it shipped that this system's
        # catalogs word otherwise (scripts/localised_history.json): a user's system may run
        # an older or newer release than this one
    python -m scripts.localised_rules render    # both JSON files -> rules/15-localised.yaml

`extract` needs the catalogs (on Debian: apt-get install libc-l10n locales-all, or the
packages above), `history` a clone of the upstream repository; `render` is pure, and
tests/scripts/test_localised_rules.py checks that it reproduces the committed rules file.
A new message or language is an edit to MESSAGES or LANGUAGES and a regenerate, never a hand
edit of the YAML.
"""

from __future__ import annotations

import gettext
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRACT = ROOT / "scripts" / "localised_messages.json"
HISTORY = ROOT / "scripts" / "localised_history.json"
RULES = ROOT / "rules" / "15-localised.yaml"
LOCALE_DIR = Path("/usr/share/locale")

# The languages libc-l10n translates (Debian 12); other domains cover a subset.
LANGUAGES = (
    "be",
    "bg",
    "ca",
    "cs",
    "da",
    "de",
    "el",
    "eo",
    "es",
    "fi",
    "fr",
    "gl",
    "hr",
    "hu",
    "id",
    "it",
    "ja",
    "ko",
    "lt",
    "nb",
    "nl",
    "pl",
    "pt",
    "pt_BR",
    "ro",
    "ru",
    "sk",
    "sl",
    "sr",
    "sv",
    "tr",
    "uk",
    "vi",
    "zh_CN",
    "zh_TW",
)

# (domain, msgid, category, kind). kind "line": a message that ends a line after a
# `prog: [context: ]` prefix (strerror texts, bash) in the first two lines; "tool": a tool's own
# message at the start of a line or after a `prefix: `; "severity": a PostgreSQL severity in
# the first lines; "prefix": a tool's `fatal: `/`error: ` marker opening one of the first
# lines; "help": getopt's `Try 'prog --help'` line after a usage error; "usage": the `Usage:`
# word of a usage line right after a `prog: ` message; "dots": wget's verdict after its
# `Connecting to host... ` ending the output; "category": words that only file a failure
# other rules detect (a signal's name in bash's job report, a PostgreSQL message after its
# severity); "answer": a report opening the output (after a harness's exit-code header) that
# makes its non-zero exit an answer, not a failure (diff's `Only in`, `Files ... differ`).
# Line and tool messages also give their English msgid's words to the category, severities
# and category messages their English msgid itself.
MESSAGES: tuple[tuple[str, str, str, str], ...] = (
    ("libc", "No such file or directory", "not_found", "line"),
    ("libc", "Permission denied", "permission_denied", "line"),
    ("libc", "Operation not permitted", "permission_denied", "line"),
    ("libc", "Read-only file system", "permission_denied", "line"),
    ("libc", "No space left on device", "disk_full", "line"),
    ("libc", "Disk quota exceeded", "disk_full", "line"),
    ("libc", "Cannot allocate memory", "out_of_memory", "line"),
    ("libc", "Connection refused", "connection_error", "line"),
    ("libc", "Connection reset by peer", "connection_error", "line"),
    ("libc", "Network is unreachable", "connection_error", "line"),
    ("libc", "No route to host", "connection_error", "line"),
    ("libc", "Name or service not known", "connection_error", "line"),
    ("libc", "Temporary failure in name resolution", "connection_error", "line"),
    ("libc", "Connection timed out", "timeout", "line"),
    ("libc", "File exists", "conflict", "line"),
    ("libc", "Is a directory", "invalid_params", "line"),
    ("libc", "Argument list too long", "size_limit", "line"),
    ("libc", "File too large", "size_limit", "line"),
    ("bash", "%s: command not found", "missing_dependency", "line"),
    ("coreutils", "invalid option -- '%c'", "invalid_params", "tool"),
    ("coreutils", "%s: unrecognized option '%s%s'\n", "invalid_params", "tool"),
    ("coreutils", "missing operand", "invalid_params", "line"),
    ("coreutils", "invalid date %s", "invalid_params", "tool"),
    ("coreutils", "invalid argument %s for %s", "invalid_params", "tool"),
    ("coreutils", "extra operand %s", "invalid_params", "tool"),
    ("coreutils", "Try '%s --help' for more information.\n", "invalid_params", "help"),
    ("coreutils", "Usage: %s [OPTION]... [FILE]...\n", "invalid_params", "usage"),
    ("grep", "%s: invalid option -- '%c'\n", "invalid_params", "tool"),
    ("grep", "Try '%s --help' for more information.\n", "invalid_params", "help"),
    ("grep", "Usage: %s [OPTION]... PATTERNS [FILE]...\n", "invalid_params", "usage"),
    ("tar", "Try '%s --help' or '%s --usage' for more information.\n", "invalid_params", "help"),
    ("diffutils", "Try '%s --help' for more information.", "invalid_params", "help"),
    ("libc", "Try `%s --help' or `%s --usage' for more information.\n", "invalid_params", "help"),
    ("wget", "%s: unable to resolve host address %s\n", "connection_error", "tool"),
    ("wget", "failed: %s.\n", "", "dots"),
    ("git", "pathspec '%s' did not match any file(s) known to git", "not_found", "tool"),
    ("git", "pathspec '%s' did not match any files", "not_found", "tool"),
    ("git", "not a git repository (or any of the parent directories): %s", "not_found", "tool"),
    ("git", "CONFLICT (%s): Merge conflict in %s", "conflict", "tool"),
    (
        "git",
        "Automatic merge failed; fix conflicts and then commit the result.\n",
        "conflict",
        "tool",
    ),
    ("git", "Authentication failed for '%s'", "auth_error", "tool"),
    ("make", "%sNo rule to make target '%s'%s", "not_found", "tool"),
    ("make", "%s[%s: %s] Error %d%s", "build_failure", "tool"),
    ("libapt-pkg6.0", "Unable to locate package %s", "not_found", "tool"),
    ("libapt-pkg6.0", "Could not get lock %s", "conflict", "tool"),
    ("apt", "Temporary failure resolving '%s'", "connection_error", "tool"),
    ("postgres-15", 'relation "%s" does not exist', "not_found", "tool"),
    ("postgres-15", 'column "%s" does not exist', "not_found", "tool"),
    ("postgres-15", "permission denied for table %s", "permission_denied", "tool"),
    ("postgres-15", 'password authentication failed for user "%s"', "auth_error", "tool"),
    ("postgres-15", 'duplicate key value violates unique constraint "%s"', "conflict", "tool"),
    ("postgres-15", "canceling statement due to statement timeout", "timeout", "tool"),
    ("postgres-15", "syntax error", "invalid_params", "category"),
    ("postgres-15", '%s at or near "%s"', "invalid_params", "category"),
    ("postgres-15", "ERROR", "", "severity"),
    ("postgres-15", "FATAL", "", "severity"),
    ("libc", "Text file busy", "conflict", "line"),
    ("libc", "Device or resource busy", "conflict", "line"),
    ("libc", "Directory not empty", "conflict", "line"),
    ("libc", "Address already in use", "conflict", "line"),
    ("libc", "No address associated with hostname", "connection_error", "line"),
    ("libc", "Network is down", "connection_error", "line"),
    ("libc", "Host is down", "connection_error", "line"),
    ("libc", "Software caused connection abort", "connection_error", "line"),
    ("libc", "File name too long", "size_limit", "line"),
    ("libc", "Invalid argument", "invalid_params", "line"),
    ("libc", "Exec format error", "", "line"),
    ("libc", "Killed", "out_of_memory", "category"),
    ("bash", "Killed", "out_of_memory", "category"),
    ("bash", "syntax error near unexpected token `%s'", "invalid_params", "line"),
    ("bash", "syntax error: unexpected end of file", "invalid_params", "line"),
    ("bash", "%s: bad substitution", "invalid_params", "line"),
    ("bash", "%s: ambiguous redirect", "invalid_params", "line"),
    ("bash", "%s: unbound variable", "", "line"),
    ("bash", "%s: numeric argument required", "invalid_params", "line"),
    ("bash", "%s: integer expression expected", "invalid_params", "line"),
    ("bash", "too many arguments", "invalid_params", "line"),
    ("coreutils", "missing destination file operand after %s", "invalid_params", "tool"),
    ("sed", "unknown option to `s'", "invalid_params", "line"),
    ("sed", "unterminated `s' command", "invalid_params", "line"),
    ("sed", "unknown command: `%c'", "invalid_params", "line"),
    ("sed", "extra characters after command", "invalid_params", "line"),
    ("findutils", "unknown predicate `%s'", "invalid_params", "tool"),
    ("findutils", "missing argument to `%s'", "invalid_params", "tool"),
    ("tar", "%s: Not found in archive", "not_found", "line"),
    ("tar", "Exiting with failure status due to previous errors", "", "tool"),
    ("tar", "This does not look like a tar archive", "format_error", "tool"),
    ("tar", "Unexpected EOF in archive", "format_error", "tool"),
    ("wget", "Username/Password Authentication Failed.\n", "auth_error", "tool"),
    ("make", "missing separator", "format_error", "tool"),
    ("make", "No targets specified and no makefile found", "not_found", "tool"),
    ("make", "unterminated variable reference", "format_error", "tool"),
    ("git", "fatal: ", "", "prefix"),
    ("git", "error: ", "", "prefix"),
    ("git", "failed to push some refs to '%s'", "conflict", "tool"),
    (
        "git",
        "Your local changes to the following files would be overwritten by %s:\n%%s",
        "conflict",
        "tool",
    ),
    ("git", "couldn't find remote ref %s", "not_found", "tool"),
    (
        "git",
        "destination path '%s' already exists and is not an empty directory.",
        "conflict",
        "tool",
    ),
    ("git", "Unable to create '%s.lock': %s", "conflict", "tool"),
    ("git", "invalid reference: %s", "not_found", "tool"),
    ("apt", "Package '%s' has no installation candidate", "not_found", "tool"),
    ("apt", "The following packages have unmet dependencies:", "conflict", "tool"),
    ("apt", "You don't have enough free space in %s.", "disk_full", "tool"),
    (
        "apt",
        "Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?",
        "connection_error",
        "tool",
    ),
    (
        "libapt-pkg6.0",
        "Unable to correct problems, you have held broken packages.",
        "conflict",
        "tool",
    ),
    ("libapt-pkg6.0", "Could not open lock file %s", "permission_denied", "tool"),
    (
        "libapt-pkg6.0",
        "Unable to acquire the dpkg frontend lock (%s), are you root?",
        "permission_denied",
        "tool",
    ),
    (
        "libapt-pkg6.0",
        "Unable to lock the administration directory (%s), are you root?",
        "permission_denied",
        "tool",
    ),
    ("libapt-pkg6.0", "Couldn't find any package by glob '%s'", "not_found", "tool"),
    ("libapt-pkg6.0", "Failed to fetch %s  %s", "connection_error", "category"),
    ("dpkg", "requested operation requires superuser privilege", "permission_denied", "tool"),
    ("dpkg", "dependency problems - leaving unconfigured", "conflict", "tool"),
    (
        "dpkg",
        "trying to overwrite '%.250s', which is also in package %.250s %.250s",
        "conflict",
        "tool",
    ),
    ("dpkg", "cannot access archive '%s'", "not_found", "tool"),
    ("postgres-15", 'syntax error at or near "%s"', "invalid_params", "category"),
    ("postgres-15", 'relation "%s" already exists', "conflict", "category"),
    (
        "postgres-15",
        'null value in column "%s" of relation "%s" violates not-null constraint',
        "invalid_params",
        "category",
    ),
    (
        "postgres-15",
        'insert or update on table "%s" violates foreign key constraint "%s"',
        "invalid_params",
        "category",
    ),
    ("postgres-15", 'database "%s" does not exist', "not_found", "category"),
    ("postgres-15", "function %s does not exist", "not_found", "category"),
    ("postgres-15", 'schema "%s" does not exist', "not_found", "category"),
    ("postgres-15", "permission denied for schema %s", "permission_denied", "category"),
    ("postgres-15", "must be owner of table %s", "permission_denied", "category"),
    ("postgres-15", 'invalid input syntax for type %s: "%s"', "invalid_params", "category"),
    ("postgres-15", "value too long for type character varying(%d)", "size_limit", "category"),
    ("postgres-15", "out of memory", "out_of_memory", "category"),
    ("postgres-15", 'could not extend file "%s": %m', "disk_full", "category"),
    ("psmisc", "%s: no process found\n", "not_found", "line"),
    ("man-db", "No manual entry for %s\n", "not_found", "tool"),
    ("man-db", "No manual entry for %s in section %s\n", "not_found", "tool"),
    ("coreutils", "invalid number of lines", "invalid_params", "tool"),
    ("coreutils", "invalid number of bytes", "invalid_params", "tool"),
    ("diffutils", "Only in %s: %s\n", "", "answer"),
    ("diffutils", "Files %s and %s differ\n", "", "answer"),
)

QUOTES = "\"'`«»„“”‘’‚‹›「」『』"
FORMAT = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?(?:l|ll|h|z|j|t)?[sdicuzmf]|%%")
WILDCARD = "[^\\n]*?"
META = set(r"\.^$|?*+()[]{}")
SPACES = "[ \\x{a0}\\x{202f}]"  # a no-break space in a catalog may print as a plain one


def extract(locale_dir: Path = LOCALE_DIR) -> dict[str, dict[str, dict[str, str]]]:
    """{domain: {"versions": {lang: Project-Id-Version}, msgid: {lang: msgstr}}} for every
    catalog present; untranslated messages are left out."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for domain in sorted({d for d, *_ in MESSAGES}):
        wanted = [m for d, m, *_ in MESSAGES if d == domain]
        entry: dict[str, dict[str, str]] = {"versions": {}}
        for lang in LANGUAGES:
            path = locale_dir / lang / "LC_MESSAGES" / f"{domain}.mo"
            if not path.is_file():
                continue
            try:
                with path.open("rb") as fh:
                    catalog = gettext.GNUTranslations(fh)
            except UnicodeDecodeError:  # a legacy 8-bit catalog (gl tar, sl wget): left out
                continue
            entry["versions"][lang] = catalog.info().get("project-id-version", "")
            for msgid in wanted:
                msgstr = catalog._catalog.get(msgid)  # the raw table: no fallback
                if isinstance(msgstr, str) and msgstr and msgstr != msgid:
                    entry.setdefault(msgid, {})[lang] = msgstr
        if entry["versions"]:
            out[domain] = entry
    return out


def to_pattern(text: str) -> str:
    """An RE2 fragment for one translated message: format directives (with the quotes around
    them) become a wildcard within the line, spaces stay as the catalog has them (programs
    print the catalog's text) except that a no-break space may also be a plain one, trailing
    punctuation is optional."""
    text = text.strip().split("\n")[0].rstrip(".。!！")  # programs print the first line
    text = re.sub(r"^%s\s*[:：]\s*", "", text)  # bash: "%s: command not found"
    q = re.escape(QUOTES)
    parts = re.split(rf"[{q}]?\s*(?:{FORMAT.pattern})\s*[{q}]?", text)
    pieces = []
    for part in parts:
        escaped = "".join("\\" + c if c in META else c for c in part)
        escaped = re.sub("[\u00a0\u202f]", SPACES.replace("\\", "\\\\"), escaped)
        pieces.append(escaped.replace("\n", "\\n").replace("\t", "\\t"))
    return WILDCARD.join(pieces).strip()


def _text_length(fragment: str) -> int:
    """How many characters of text a fragment stands for (a space class is one)."""
    return len(fragment.replace(SPACES, " ").replace("\\", ""))


def _trim(fragment: str) -> str:
    """A tool message without wildcards at its ends."""
    while fragment.startswith(WILDCARD):
        fragment = fragment[len(WILDCARD) :]
    while fragment.endswith(WILDCARD):
        fragment = fragment[: -len(WILDCARD)]
    return fragment


def _alternation(fragments: list[str]) -> str:
    unique = sorted(set(f for f in fragments if f and f != WILDCARD), key=lambda f: (-len(f), f))
    if not unique:  # `(?:)` would match everywhere
        raise ValueError("no message of this kind in the extract")
    return "(?:" + "|".join(unique) + ")"


Catalog = dict[str, dict[str, dict[str, str]]]
History = dict[str, dict[str, dict[str, list[str]]]]


def translations(data: Catalog, past: History, domain: str, msgid: str) -> list[tuple[str, str]]:
    """(language, text) for one message: this system's catalog, then what past versions of
    the catalog shipped instead."""
    out = sorted(data.get(domain, {}).get(msgid, {}).items())
    for lang, texts in sorted(past.get(domain, {}).get(msgid, {}).items()):
        out += [(lang, text) for text in texts]
    return out


def usage_word(text: str) -> str:
    """`Aufruf` in `Aufruf: %s [OPTION]...`: what a translated usage line opens with."""
    word = FORMAT.split(text, maxsplit=1)[0].strip(" \u00a0\u202f:：")
    return "".join("\\" + c if c in META else c for c in word)


def _help(fragments: list[str]) -> str:
    """The `Try 'prog --help'` lines as `--help` then what follows it in each language (or
    what precedes it, where nothing follows): the search starts at `--help`, not at every
    character of the first lines."""
    after, before = [], []
    for fragment in fragments:
        head, _, tail = fragment.partition("--help")
        tail = tail.removeprefix(WILDCARD)
        if len(tail.strip()) >= 4:
            after.append(tail)
        else:
            before.append(_trim(head))
    return f"(?:--help{_alternation(after)}|{_alternation(before)}[^\\n]*?--help)"


def _add_category(by_category: dict[str, list[str]], category: str, fragment: str) -> None:
    """A message's words for its category. Categories search whole windows unanchored: one
    literal piece, so the one-pass set stays a small automaton (a wildcard per message
    multiplies its states): the longest, or the last when the longest is short, since a short
    message says what happened at its end (`existe déjà` of `la relation « %s » existe déjà`,
    not `la relation`). A lone word cut out of a longer message (`argument`, `operando`) is
    any text's: it names the category only when it is the whole message."""
    if not category:
        return
    split = fragment.split(WILDCARD)
    pieces = [p.strip() for p in split if _text_length(p.strip()) >= 4]
    if not pieces:
        return
    literal = max(pieces, key=_text_length)
    if _text_length(literal) < 12:
        literal = pieces[-1]
    specific = len(split) == 1 or " " in literal or any(ord(c) > 0x2FF for c in literal)
    if specific:
        by_category.setdefault(category, []).append(literal)


# The kinds whose English msgid the rules take too: a severity (PostgreSQL's `ERROR:  `) and
# a category message as they are, a line or tool message for its category words only (its
# English detection is 10-detection.yaml's and 12-ecosystems.yaml's: a loose `prog: ...: `
# prefix is safe for translations only, and every alternative in these unanchored rules makes
# the DFA dearer on texts it has not seen).
ENGLISH_KINDS = ("line", "tool", "severity", "category", "answer")

# The exit-code headers of Claude Code, Codex and Gemini CLI that an answer may follow (as in
# 12-ecosystems.yaml's query-answer-nonzero-exit); OpenHands puts its exit code last.
ANSWER_HEADER = (
    "(?:Exit code:? [1-3]\\nWall time: [^\\n]*\\n(?:Total output lines: \\d+\\n)?Output:\\n|"
    "Exit code [1-3]\\n|Command: [^\\n]*\\nDirectory: [^\\n]*\\n(?:Stdout|Output): )?"
)


def render(data: Catalog, past: History | None = None) -> str:
    """The rules file for an extract (and the past translations `history` found): detection
    rules per kind, patterns per category."""
    past = past or {}
    kinds = ("line", "suffix", "infix", "tool", "severity", "prefix", "help", "usage", "dots")
    kinds += ("answer",)
    by_kind: dict[str, list[str]] = {k: [] for k in kinds}
    by_category: dict[str, list[str]] = {}
    for domain, msgid, category, kind in MESSAGES:
        translated = [text for _lang, text in translations(data, past, domain, msgid)]
        if not translated:
            continue  # a domain this extract lacks: its English alone is no localised rule
        english = [msgid] if kind in ENGLISH_KINDS else []
        for msgstr in english + translated:
            fragment = to_pattern(msgstr)
            if msgstr is msgid and kind in ("line", "tool"):  # its category words only
                _add_category(by_category, category, fragment)
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
                while fragment.endswith(WILDCARD):
                    fragment = fragment[: -len(WILDCARD)]
                # a file name where the catalog has one, not any words (`Only in-memory
                # stores are supported: ...` is an error, not diff's `Only in DIR: NAME`)
                by_kind["answer"].append(fragment.replace(WILDCARD, f"{SPACES}*\\S+{SPACES}*"))
                continue
            if kind_here != "category":
                by_kind[kind_here].append(fragment if kind_here == "line" else _trim(fragment))
            _add_category(by_category, category, fragment)
    sep = "(?::[ \\x{a0}\\x{202f}]?|[ \\x{a0}\\x{202f}]:[ \\x{a0}\\x{202f}]|：)"
    line = _alternation(by_kind["line"])
    rules = [
        (
            "localised-system-errors",
            "a strerror or bash message in the user's language ending a `prog: ...: ` line "
            "in the first two lines, or wget's translated `... failed: <error>.` ending the output",
            f"(?m)\\A(?:[^\\n]*\\n)?[^\\n]*?{sep}(?:{line}|"
            f"[^\\n]*?{_alternation(by_kind['suffix'])})[.。]?[ \\t]*$|"
            f"\\A(?:[^\\n]*\\n)?[^\\n]*?{sep}[^\\n]*?{_alternation(by_kind['infix'])}|"
            f"(?:\\.\\.\\.|…) ?{_alternation(by_kind['dots'])}[^\\n]*\\s*\\z",
        ),
        (
            "localised-tool-messages",
            "git, apt, dpkg, make, tar, find, coreutils, grep, wget and PostgreSQL failure "
            "messages in the user's language, at the start of a line or after one or two "
            "`prog: ` prefixes",
            f"(?m)^[ \\t]*(?:[\\w./-]+(?:\\[\\d+\\])?{sep}[ \\t]*){{0,2}}(?:[*]{{3}} +)?"
            f"{_alternation(by_kind['tool'])}",
        ),
        (
            "localised-postgres-severity",
            "psql output opening with `psql: `, or an ERROR or FATAL severity (translated or "
            "not, after `psql:FILE:LINE: ` when psql runs a file) in its first five lines",
            f"\\A\\s*psql: \\S|\\A(?:[^\\n]*\\n){{0,4}}?(?:psql:[^\\n]*?: )?"
            f"{_alternation(by_kind['severity'])}:  \\S",
        ),
        (
            "localised-error-prefix",
            "git's translated `fatal: ` or `error: ` opening one of the first four lines",
            f"\\A(?:[^\\n]*\\n){{0,3}}?{_alternation(by_kind['prefix'])}[ \\x{{a0}}]?\\S",
        ),
        (
            "localised-usage-error",
            "a usage error in the user's language: getopt's `Try 'prog --help'` line after the "
            "message, or a `Usage:` line right after a `prog: ` message",
            f"\\A[^\\n]*\\n(?:[^\\n]*\\n){{0,2}}?[^\\n]*?{_help(by_kind['help'])}|"
            f"\\A[\\w./+-]+(?:\\[\\d+\\])?{sep}[^\\n]+\\n[ \\t]*"
            f"{_alternation(by_kind['usage'])}{sep}[ \\t]*[\\w./+-]",
        ),
    ]
    versions = sorted(
        f"{domain}: " + ", ".join(f"{lang} {v}" for lang, v in sorted(entry["versions"].items()))
        for domain, entry in data.items()
    )
    sources = sorted(f"{domain}: {entry['source']}" for domain, entry in past.items())
    lines = [
        "# GENERATED by `python -m scripts.localised_rules render` from",
        "# scripts/localised_messages.json (the gettext catalogs below) and",
        "# scripts/localised_history.json (their past versions upstream); do not edit by hand:",
        "# change scripts/localised_rules.py and regenerate. Errors the OS and tools print in",
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
            "diff's report that the inputs differ (`Only in`, `Files ... differ`), in any "
            "language, opening the output: its exit code 1 is the answer"
        ),
        f"      pattern: {_quote(chr(92) + 'A' + ANSWER_HEADER + _alternation(by_kind['answer']))}",
        "  error:",
    ]
    for rule_id, description, pattern in rules:
        lines += [
            f"    - id: {rule_id}",
            f"      description: {_quote(description)}",
            f"      pattern: {_quote(pattern)}",
        ]
    lines += ["", "category_patterns:"]
    for category in sorted(by_category):
        lines += [f"  {category}:", f"    - {_quote(_alternation(by_category[category]))}"]
    return "\n".join(lines) + "\n"


PO_FIELD = re.compile(r'(msgid|msgid_plural|msgstr(?:\[0\])?|msgstr\[\d+\]|msgctxt) "(.*)"$')
PO_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "a": "\a"}


def parse_po(raw: bytes) -> dict[str, str]:
    """msgid -> msgstr of a .po file (its first plural form); fuzzy and obsolete entries,
    which gettext never shows, are left out."""
    charset = re.search(rb"charset=([\w.-]+)", raw[:4000])
    encoding = charset.group(1).decode() if charset else "utf-8"
    try:
        text = raw.decode(encoding, errors="replace")
    except LookupError:
        text = raw.decode("utf-8", errors="replace")
    out: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, list[str]] = {}
        key = ""
        fuzzy = False
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif line.startswith("#"):
                continue
            elif match := re.match(
                r'(msgid|msgid_plural|msgstr(?:\[0\])?|msgstr\[\d+\]|msgctxt) "(.*)"$', line
            ):
                key = match.group(1).replace("[0]", "")
                fields[key] = [match.group(2)]
            elif line.startswith('"') and key:
                fields[key].append(line[1:-1])
        unescape = lambda parts: re.sub(  # noqa: E731
            r"\\(.)", lambda m: PO_ESCAPES.get(m.group(1), m.group(1)), "".join(parts)
        )
        if not fuzzy and "msgid" in fields and "msgstr" in fields and "msgctxt" not in fields:
            msgid, msgstr = unescape(fields["msgid"]), unescape(fields["msgstr"])
            if msgid and msgstr:
                out[msgid] = msgstr
    return out


def history(
    domain: str, upstream: str, git_dir: Path, po_dir: str, current: Catalog
) -> dict[str, object]:
    """The translations of MESSAGES that past versions of `<po_dir>/<lang>.po` in a git
    repository shipped and this system's catalog (`current`) words otherwise."""
    wanted = [m for d, m, *_ in MESSAGES if d == domain]
    found: dict[str, dict[str, set[str]]] = {}
    read = 0
    for lang in LANGUAGES:
        path = f"{po_dir}/{lang}.po"
        log = subprocess.run(
            ["git", "-C", str(git_dir), "log", "--format=%H", "--", path],
            capture_output=True,
            text=True,
            check=True,
        )
        for commit in log.stdout.split():
            show = subprocess.run(
                ["git", "-C", str(git_dir), "show", f"{commit}:{path}"], capture_output=True
            )
            if show.returncode != 0:  # the commit that deleted the file
                continue
            read += 1
            catalog = parse_po(show.stdout)
            for msgid in wanted:
                text = catalog.get(msgid)
                if (
                    text
                    and text != msgid
                    and text != current.get(domain, {}).get(msgid, {}).get(lang)
                    and "\ufffd" not in text  # a file in another charset than it says
                ):
                    found.setdefault(msgid, {}).setdefault(lang, set()).add(text)
    entry: dict[str, object] = {"source": f"{upstream} {po_dir}/<lang>.po, {read} versions"}
    for msgid, langs in sorted(found.items()):
        entry[msgid] = {lang: sorted(texts) for lang, texts in sorted(langs.items())}
    return entry


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"]:
        locale_dir = Path(argv[1]) if len(argv) > 1 else LOCALE_DIR
        data = extract(locale_dir)
        EXTRACT.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        print(f"{EXTRACT}: {len(data)} domains")
        return 0
    if argv[:1] == ["history"] and len(argv) in (4, 5):
        current = json.loads(EXTRACT.read_text(encoding="utf-8"))
        past = json.loads(HISTORY.read_text(encoding="utf-8")) if HISTORY.is_file() else {}
        po_dir = argv[4] if len(argv) > 4 else "po"
        past[argv[1]] = history(argv[1], argv[2], Path(argv[3]), po_dir, current)
        HISTORY.write_text(json.dumps(past, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        print(f"{HISTORY}: {argv[1]}: {past[argv[1]]['source']}")
        return 0
    if argv[:1] == ["render"]:
        data = json.loads(EXTRACT.read_text(encoding="utf-8"))
        past = json.loads(HISTORY.read_text(encoding="utf-8")) if HISTORY.is_file() else {}
        RULES.write_text(render(data, past), encoding="utf-8")
        print(f"{RULES} written")
        return 0
    print(
        "usage: python -m scripts.localised_rules extract [LOCALE_DIR] | "
        "history DOMAIN UPSTREAM GIT_DIR [PO_DIR] | render",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
