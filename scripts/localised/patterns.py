"""Translated messages as RE2 fragments, and the alternations the rules are made of."""

from __future__ import annotations

import re

QUOTES = "\"'`«»„“”‘’‚‹›「」『』"
FORMAT = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?(?:l|ll|h|z|j|t)?[sdicuzmf]|%%")
WILDCARD = "[^\\n]*?"
META = set(r"\.^$|?*+()[]{}")
SPACES = "[ \\x{a0}\\x{202f}]"  # a no-break space in a catalog may print as a plain one


def _escape(text: str) -> str:
    """Text as an RE2 literal (its regex metacharacters backslashed)."""
    return "".join("\\" + c if c in META else c for c in text)


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
        escaped = re.sub("[\u00a0\u202f]", SPACES.replace("\\", "\\\\"), _escape(part))
        pieces.append(escaped.replace("\n", "\\n").replace("\t", "\\t"))
    return WILDCARD.join(pieces).strip()


def text_length(fragment: str) -> int:
    """How many characters of text a fragment stands for (a space class is one)."""
    return len(fragment.replace(SPACES, " ").replace("\\", ""))


def trim(fragment: str, head: bool = True) -> str:
    """A fragment without wildcards at its end (and, unless `head` is False, its start)."""
    while head and fragment.startswith(WILDCARD):
        fragment = fragment[len(WILDCARD) :]
    while fragment.endswith(WILDCARD):
        fragment = fragment[: -len(WILDCARD)]
    return fragment


def alternation(fragments: list[str]) -> str:
    """A non-capturing group of the distinct fragments, longest first."""
    unique = sorted(set(f for f in fragments if f and f != WILDCARD), key=lambda f: (-len(f), f))
    if not unique:  # `(?:)` would match everywhere
        raise ValueError("no message of this kind in the extract")
    return "(?:" + "|".join(unique) + ")"


def usage_word(text: str) -> str:
    """`Aufruf` in `Aufruf: %s [OPTION]...`: what a translated usage line opens with."""
    return _escape(FORMAT.split(text, maxsplit=1)[0].strip(" \u00a0\u202f:："))


def help_pattern(fragments: list[str]) -> str:
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
            before.append(trim(head))
    return f"(?:--help{alternation(after)}|{alternation(before)}[^\\n]*?--help)"


def add_category(by_category: dict[str, list[str]], category: str, fragment: str) -> None:
    """A message's words for its category. Categories search whole windows unanchored: one
    literal piece, so the one-pass set stays a small automaton (a wildcard per message
    multiplies its states): the longest, or the last when the longest is short, since a short
    message says what happened at its end (`existe déjà` of `la relation « %s » existe déjà`,
    not `la relation`). A lone word cut out of a longer message (`argument`, `operando`) is
    any text's: it names the category only when it is the whole message."""
    if not category:
        return
    split = fragment.split(WILDCARD)
    pieces = [p.strip() for p in split if text_length(p.strip()) >= 4]
    if not pieces:
        return
    literal = max(pieces, key=text_length)
    if text_length(literal) < 12:
        literal = pieces[-1]
    specific = len(split) == 1 or " " in literal or any(ord(c) > 0x2FF for c in literal)
    if specific:
        by_category.setdefault(category, []).append(literal)


def drop_ambiguous(by_category: dict[str, list[str]], order: list[str]) -> None:
    """Leave out a category's words that open a longer message of a category tried after it
    (`order`: the categories' precedence): a message cut at its first directive (Russian apt's
    translation of `Failed to fetch %s`, `could not get %s`) is also the head of another
    message (its `Could not get lock %s`, `could not get the lock on file %s`), and the
    category tried first would take both. Words that two categories' messages share as they
    are (Italian postgres' `la relazione`, the head of `la relazione "%s" esiste già` and of
    `la relazione "%s" non esiste`) tell neither: both leave them out."""
    rank = {c: i for i, c in enumerate(order)}
    later = [(rank.get(c, len(rank)), f) for c, fragments in by_category.items() for f in fragments]
    owners: dict[str, set[str]] = {}
    for category, fragments in by_category.items():
        for f in fragments:
            owners.setdefault(f, set()).add(category)
    for category, fragments in by_category.items():
        mine = rank.get(category, len(rank))
        fragments[:] = [
            f
            for f in fragments
            if len(owners[f]) == 1
            and not any(r > mine and g != f and g.startswith(f) for r, g in later)
        ]
