"""The literals every match of a pattern contains: a prefilter's atoms.

`required_literals(pattern)` is a set of strings, case-folded, such that any text the RE2
pattern matches contains one of them (case-folded too), or None when no such set is known
(the pattern is then always searched). `PatternSet` looks the atoms of all its patterns up in
one Aho-Corasick pass and searches only the patterns whose atoms a text holds: RE2 builds the
states of an automaton lazily, per text never seen, and one automaton per pattern gated this
way builds far fewer than a shared one searched over every text. `anchored_at_start(pattern)`
says a pattern need only be tried at a text's start.

The pattern is read with Python's own regular-expression parser after rewriting the few RE2
spellings it lacks; anything else it cannot read gives None. Case: every literal and the text
are compared case-folded (`str.casefold`), which keeps every pair of characters RE2's `(?i)`
treats as equal (checked over every cased code point in tests/rules/test_literals.py).
"""

from __future__ import annotations

import functools
import re
import re._constants as sre
import re._parser as sre_parse
import warnings
from typing import Any

MIN_LITERAL = 3  # UTF-8 bytes: a shorter atom occurs in nearly every text and gates nothing
MAX_EXACT = 16  # strings: a node matching more (or unknown) ones gives no exact set

_FLAG_GROUP = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)([:)])")
_HEX = re.compile(r"\\x\{([0-9A-Fa-f]+)\}")

# (exact, required): `exact` the strings the node matches, all of them (None: too many, or
# unknown); `required` literals one of which every match holds (None: none known).
Info = tuple[frozenset[str] | None, frozenset[str] | None]
_EMPTY = frozenset([""])


@functools.lru_cache(maxsize=4096)  # a reload reads the same patterns again
def required_literals(pattern: str) -> frozenset[str] | None:
    """Case-folded literals, one of which is in every match of `pattern`; None if unknown."""
    tree = _parsed(pattern)
    if tree is None:
        return None
    found = _required(_sequence(tree.data))
    return found if found and min(len(f.encode()) for f in found) >= MIN_LITERAL else None


@functools.lru_cache(maxsize=4096)
def anchored_at_start(pattern: str) -> bool:
    """Whether every match of `pattern` starts where the text does (`\\A` opens each of its
    alternatives): such a pattern need not be searched past its first bytes."""
    tree = _parsed(pattern)
    return tree is not None and _starts_at_start(tree.data)


def _parsed(pattern: str) -> Any:
    """`pattern` parsed by Python's own parser (as far as literals go), or None."""
    python = _python_syntax(pattern)
    if python is None:
        return None
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like
            warnings.simplefilter("ignore")
            return sre_parse.parse(python)
    except (re.error, ValueError, OverflowError, RecursionError):
        return None


def _starts_at_start(items: Any) -> bool:
    if not items:
        return False
    op, arg = items[0]
    if op is sre.AT:
        return arg is sre.AT_BEGINNING_STRING
    if op is sre.SUBPATTERN:
        return _starts_at_start(arg[-1])
    if op is sre.BRANCH:
        return all(_starts_at_start(branch) for branch in arg[1])
    return False


def _python_syntax(pattern: str) -> str | None:
    """`pattern` in Python's syntax, as far as literals go: flag groups dropped (case is folded
    anyway), `\\x{...}`, `\\z` and `(?<name>` respelled; None for RE2 syntax with no Python
    spelling (`\\p`, `\\Q...\\E`, `\\C`, POSIX classes)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped in ("p", "P", "Q", "E", "C"):
                return None
            hexed = _HEX.match(pattern, i)
            if hexed:
                out.append(f"\\U{int(hexed.group(1), 16):08x}")
                i = hexed.end()
                continue
            out.append("\\Z" if escaped == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if char == "[" and pattern[i + 1 : i + 2] == ":":
                return None
            in_class = char != "]"
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            out.append(char)
            i += 1
            for special in ("^", "]"):  # a leading `]` is a member, not the end
                if pattern[i : i + 1] == special:
                    out.append("\\" + special if special == "]" else special)
                    i += 1
            continue
        flags = _FLAG_GROUP.match(pattern, i) if pattern.startswith("(?", i) else None
        if flags and flags.group(1):
            out.append("(?:" if flags.group(2) == ":" else "")
            i = flags.end()
            continue
        if pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _sequence(items: Any) -> Info:
    """A concatenation: exact strings while they stay few, else the best requirement of its
    parts (a run of exact parts counts as one part)."""
    run: frozenset[str] = _EMPTY  # the exact strings of the parts since the last unknown one
    options: list[frozenset[str] | None] = []
    all_exact = True
    for op, arg in _flat(items):
        node_exact, node_required = _node(op, arg)
        options.append(node_required)
        if node_exact is not None and len(run) * len(node_exact) <= MAX_EXACT:
            run = frozenset(a + b for a in run for b in node_exact)
            continue
        options.append(run)  # a whole run: every match holds one of its strings
        all_exact = False
        run = node_exact if node_exact is not None else _EMPTY
    return (run if all_exact else None), _best([*options, run])


def _flat(items: Any) -> Any:
    """A sequence's nodes with groups opened (`│ (Error: ...)` is `│ Error: ...`): a group's
    literals join its neighbours'."""
    for op, arg in items:
        if op is sre.SUBPATTERN:
            yield from _flat(arg[-1])
        else:
            yield op, arg


def _node(op: Any, arg: Any) -> Info:
    if op is sre.LITERAL:
        return frozenset([chr(arg).casefold()]), None
    if op is sre.AT:  # ^ $ \A \z \b: match the empty string
        return _EMPTY, None
    if op is sre.BRANCH:
        branches = [_sequence(branch) for branch in arg[1]]
        if all(exact is not None for exact, _ in branches):
            union = frozenset().union(*(exact for exact, _ in branches if exact is not None))
            if len(union) <= MAX_EXACT:
                return union, None
        each = [_required(branch) for branch in branches]
        if any(found is None for found in each):
            return None, None
        return None, frozenset().union(*(found for found in each if found is not None))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, high, sub = arg
        inner = _sequence(sub)
        if low == 0:  # optional: its exact strings or nothing (`WARN(?:ING)?`, `code:?`)
            exact = inner[0]
            if high == 1 and exact is not None and len(exact) < MAX_EXACT:
                return exact | _EMPTY, None
            return None, None
        return inner if (low, high) == (1, 1) else (None, _required(inner))
    if op is sre.IN:
        return _class(arg), None
    return None, None  # any character, a negated one, \d \w \s ...


def _class(members: Any) -> frozenset[str] | None:
    """A small character class as its exact strings (case-folded)."""
    chars: set[str] = set()
    for op, arg in members:
        if op is sre.LITERAL:
            chars.add(chr(arg).casefold())
        elif op is sre.RANGE and arg[1] - arg[0] < 4:
            chars.update(chr(c).casefold() for c in range(arg[0], arg[1] + 1))
        else:
            return None
    return frozenset(chars) if len(chars) <= 4 else None


def _required(info: Info) -> frozenset[str] | None:
    return _best([info[0], info[1]])


def _best(options: list[frozenset[str] | None]) -> frozenset[str] | None:
    """The most selective requirement: its shortest literal longest, then the fewest."""
    usable = [found for found in options if found and "" not in found]
    return max(usable, key=lambda found: (min(map(len, found)), -len(found)), default=None)
