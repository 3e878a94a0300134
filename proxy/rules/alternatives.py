"""An RE2 pattern cut into its alternatives, read off its source: `alternatives(pattern)`.

`PatternSet` searches the alternatives of a pattern apart when some have required literals and
some have none (the first are gated, the others searched always), and a long generated
alternation in runs, each gated by its own literals. Cutting must not change what matches: a
flag group such as `(?i)` lasts to the end of its group, across `|`, so each top-level
alternative carries the flags set before it; a quantified group is never cut.
"""

from __future__ import annotations

import re

_STANDALONE_FLAGS = re.compile(r"\(\?[imsU]*(?:-[imsU]*)?\)")  # `(?m)`: to the group's end
_OPENER = re.compile(r"\((?:\?(?:[imsU]*(?:-[imsU]*)?:|P?<\w+>))?")


def alternatives(pattern: str) -> tuple[str, tuple[str, ...], str] | None:
    """`pattern` as `prefix`, alternatives and `suffix` such that `prefix + "|".join(some) +
    suffix` matches what those alternatives of `pattern` match: its top-level alternatives
    (each wrapped with the flags in force where it starts), else those of the group with the
    most (not quantified, no flags set inside). None when there are none to split, or the
    pattern is not understood."""
    level = _level(pattern, 0, len(pattern))
    if level is None:
        return None
    bars, flags, groups = level
    if bars:
        starts, ends = [0, *(b + 1 for b in bars)], [*bars, len(pattern)]
        return (
            "",
            tuple(
                f"(?:{''.join(pattern[a:b] for a, b in flags if b <= start)}{pattern[start:end]})"
                for start, end in zip(starts, ends, strict=True)
            ),
            "",
        )
    best: tuple[int, int, list[int]] | None = None
    for body, close in groups:
        inner = _level(pattern, body, close)
        if inner is None or inner[1] or pattern[close + 1 : close + 2] in ("?", "*", "+", "{"):
            continue
        if inner[0] and (best is None or len(inner[0]) > len(best[2])):
            best = (body, close, inner[0])
    if best is None:
        return None
    body, close, bars = best
    starts, ends = [body, *(b + 1 for b in bars)], [*bars, close]
    branches = tuple(pattern[start:end] for start, end in zip(starts, ends, strict=True))
    return pattern[:body], branches, pattern[close:]


def _level(
    pattern: str, start: int, end: int
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]] | None:
    """At the nesting level of `pattern[start:end]`: where its `|` are, its standalone flag
    groups (spans) and its groups (where each body starts, where it closes); None if not
    understood (unbalanced, `\\Q`)."""
    bars: list[int] = []
    flags: list[tuple[int, int]] = []
    groups: list[tuple[int, int]] = []
    i, depth, body = start, 0, 0
    while i < end:
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2] == "Q":
                return None
            i += 2
            continue
        if char == "[":
            after = _class_end(pattern, i)
            if after is None:
                return None
            i = after
            continue
        if char == "(":
            standalone = _STANDALONE_FLAGS.match(pattern, i)
            if standalone:
                if depth == 0:
                    flags.append(standalone.span())
                i = standalone.end()
                continue
            if depth == 0:
                opener = _OPENER.match(pattern, i)
                body = opener.end() if opener else i + 1
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                groups.append((body, i))
        elif char == "|" and depth == 0:
            bars.append(i)
        i += 1
    return (bars, flags, groups) if depth == 0 else None


def _class_end(pattern: str, i: int) -> int | None:
    """Where the character class opening at `pattern[i]` ends (the index after its `]`)."""
    i += 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":  # a leading `]` is a member
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            if close < 0:
                return None
            i = close + 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return None
