"""required_literals: the atoms a pattern's every match holds, so a text without them is never
searched with it (proxy/rules/literals.py)."""

from __future__ import annotations

import pytest
import re2

from recovery_proxy.rules.literals import anchored_at_start, required_literals
from recovery_proxy.rules.load import load_rules
from recovery_proxy.rules.pattern_set import _compiled, pieces
from tests.corpus import CORPORA, load_corpus


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        ("Traceback \\(most recent call last\\):", {"traceback (most recent call last):"}),
        ("(?i)No such file", {"no such file"}),
        ("(?m)^npm (?:ERR!|error) ", {"npm err! ", "npm error "}),
        ("\\A\\s*(?:fatal|error): \\S", {"fatal: ", "error: "}),
        ("exit (?:code|status) [1-9]\\d*", {"exit code ", "exit status "}),
        ("Ab[cC]d", {"abcd"}),  # a small class: its members, folded
        ("a\\x{a0}:\\x{202f}bc", {"a\xa0:\u202fbc"}),  # RE2's \x{...}
        ("(?P<tool>\\w+) failed|(?<x>\\w+) panicked", {" failed", " panicked"}),
        ("(?:abc)+xyzw", {"xyzw"}),  # the longer of two requirements
        ("Exit code:? 1", {"exit code 1", "exit code: 1"}),  # an optional part stays exact
        ("\\[(?:ERROR|WARN(?:ING)?)\\]\\t", {"[error]\t", "[warn]\t", "[warning]\t"}),
        ("(?m)^│ (Error: [^\\n]+)", {"│ error: "}),  # a group joins its neighbours
        (
            "(?m)^(?:冲突|衝突)[（(]",
            {"冲突（", "冲突(", "衝突（", "衝突("},
        ),  # CJK: 3 bytes a letter
    ],
)
def test_literals_every_match_holds(pattern: str, literals: set[str]) -> None:
    assert required_literals(pattern) == literals


@pytest.mark.parametrize(
    "pattern",
    [
        "\\d+",  # no literal at all
        "(?:error)?:x",  # optional, and ":x" too short
        "error|\\d+",  # one branch without
        "\\pL+ failed",  # RE2 syntax Python lacks: searched always
        "[[:alpha:]]+ failed",
        "\\Qa.b\\E failed",
        "E\\d+",  # one letter
    ],
)
def test_no_literals_when_none_is_required_or_the_pattern_is_not_understood(
    pattern: str,
) -> None:
    assert required_literals(pattern) is None


def test_case_folding_keeps_every_pair_re2_treats_as_equal() -> None:
    """Text and literals are compared case-folded: every character RE2's `(?i)` matches for a
    letter must fold to what that letter folds to (all cased code points below U+20000)."""
    letters = (chr(c) for c in range(0x20, 0x20000) if not 0xD800 <= c < 0xE000)
    cased = [c for c in letters if c.casefold() != c or c.lower() != c or c.upper() != c]
    universe = "".join(cased)
    for letter in cased:
        matches = set(re2.compile(f"(?i)\\x{{{ord(letter):x}}}").findall(universe))
        assert {m.casefold() for m in matches} == {letter.casefold()}, letter


def test_every_match_of_the_bundled_rules_holds_one_of_their_literals() -> None:
    """Over every corpus text: where a rule's pattern, or a piece `PatternSet` cuts it into,
    matches, one of its literals is in the case-folded text (else the prefilter would drop
    that match); and the pieces match together where the pattern does."""
    rules = load_rules()
    matchers = [
        *rules.unwrap,
        *rules.not_error,
        *rules.exit_zero,
        *rules.error,
        *rules.reply,
        *rules.key_line,
        *rules.markers,
        *(m for c in rules.categories for m in (*c.matchers, *c.extra)),
    ]
    gated = [(m, required_literals(m.regex.pattern)) for m in matchers]
    gated = [(m, found) for m, found in gated if found]
    assert len(gated) > 0.8 * len(matchers)
    cut = [(m, pieces(m.regex.pattern)) for m in matchers]
    cut = [(m, p, _compiled(list(p), m.id)) for m, p in cut if len(p) > 1]  # one pass each
    assert len(cut) > 20
    texts = [e["content"] for path in CORPORA for e in load_corpus(path)]
    for text in texts:
        folded = text.casefold()
        for matcher, found in gated:
            if matcher.search(text):
                assert any(literal in folded for literal in found), (matcher.id, text[:200])
        for matcher, parts, regex_set in cut:  # each piece's matches, in one pass
            hits = regex_set.Match(text.encode()) or []
            assert bool(hits) == bool(matcher.search(text)), (matcher.id, text[:200])
            for i in hits:
                literals = required_literals(parts[i])
                assert literals is None or any(x in folded for x in literals), (matcher.id, i)


@pytest.mark.parametrize(
    ("pattern", "anchored"),
    [
        ("\\A\\s*error", True),
        ("\\Aa|\\Ab", True),
        ("(?:\\A(?:a|b)|\\Ac)d", True),
        ("(?m)\\A(?:Exit code \\d+\\n)?x", True),
        ("\\Aa|b", False),  # one alternative may match anywhere
        ("(?m)^x", False),  # the start of any line
        ("^x", False),  # RE2's text start, but read as a line start: never assumed
        ("x\\A", False),
        ("\\pL\\A", False),  # not understood
    ],
)
def test_anchored_at_start(pattern: str, anchored: bool) -> None:
    assert anchored_at_start(pattern) is anchored
