"""PatternSet: patterns gated by their literals or shared out between automata answer as one
ordered list, exactly as searching them one by one."""

from __future__ import annotations

import random
from hashlib import md5

import pytest
import re2

from recovery_proxy.rules.alternatives import alternatives
from recovery_proxy.rules.pattern_set import LONG_PATTERN, PatternSet, pieces


def test_matches_are_ascending_indices_across_automata() -> None:
    long = "(?:" + "|".join(f"word{i:05d}" for i in range(LONG_PATTERN // 8)) + r"|\d\d)"
    patterns = ["alpha", long, r"\d{3}", "gamma", "(?i)ALPHA", r"\s+x\b", "delta"]
    regex_set = PatternSet(patterns, "test", per_set=2)
    # required literals: searched where present; the long one in runs of its alternatives
    assert [i for i, _ in regex_set.gated] == [0, 1, 1, 3, 4, 6]
    assert [index for index, _ in regex_set.sets] == [(1, 2), (5,)]  # its `\d\d` shared
    assert regex_set.matching(b"delta 42 alpha") == [0, 1, 4, 6]
    assert regex_set.matching("gamma 123 x") == [1, 2, 3, 5]
    assert regex_set.matching(b"nothing here") == []


def test_case_insensitive_patterns_match_any_case_of_their_literals() -> None:
    regex_set = PatternSet(["(?i)straße", "(?i)KELVIN", "Exact"], "test")
    assert regex_set.matching("STRASSE ẞ Kelvin") == [1]  # RE2: ß and ẞ are one letter, not ss
    assert regex_set.matching("STRAẞE kelvin exact") == [0, 1]
    assert regex_set.matching("Exact") == [2]


def test_parts_keep_where_each_list_starts() -> None:
    regex_set = PatternSet(["a", "b", "ccc", "d", "eee"], "test", parts=(1, 2, 2), per_set=2)
    assert regex_set.starts == (0, 1, 3, 5)
    assert regex_set.search(b"a ccc eee").matching(start=1, stop=3) == [2]
    assert regex_set.search(b"zzz").matching() == []


def test_a_search_searches_gated_patterns_only_until_the_answer_is_known() -> None:
    patterns = ["alpha", "beta", "gamma", "delta", r"\d+"]  # the last has no literal: shared
    found = PatternSet(patterns, "test").search(b"gamma beta 7 alpha")
    assert [i for i, _ in found.candidates] == [0, 1, 2] and found.hits == [4]
    searched: list[int] = []
    found.candidates = [(i, _Counted(i, m, searched)) for i, m in found.candidates]
    assert found.first() == 0 and searched == [0]
    assert found.first(start=1, rank=lambda i: -i) == 4 and searched == [0]  # shared ranks first
    ranks = {2: 0, 4: 1}.get  # 1 and 3 ranked 5: left out below, never searched
    assert found.first(start=1, rank=lambda i: ranks(i, 5), limit=5) == 2 and searched == [0, 2]
    assert found.first(rank=lambda i: 9, limit=9) is None
    assert found.matching(stop=4) == [0, 1, 2] and searched == [0, 2, 0, 1, 2]


class _Counted:
    """A gated automaton that notes each search."""

    def __init__(self, index: int, automaton: object, searched: list[int]) -> None:
        self.index, self.automaton, self.searched = index, automaton, searched

    def Match(self, text: bytes) -> object:
        self.searched.append(self.index)
        return self.automaton.Match(text)  # type: ignore[attr-defined]


def test_a_set_answers_first_and_matching_alike() -> None:
    regex_set = PatternSet(["alpha", "beta", "gamma", "delta", r"\d+"], "test")
    assert regex_set.first(b"nothing") is None and regex_set.first(b"beta delta") == 1
    assert regex_set.matching(b"delta 9 beta") == [1, 3, 4]


def test_alternatives_without_literals_are_cut_out_of_a_pattern() -> None:
    """A pattern whose every alternative but one has literals: those are gated, the one
    without is searched apart; flags in force at an alternative's start go with it."""
    pattern = r"(?m)^npm error |(?i)^\s*\d+:\d+ \w+$|build failed"
    assert pieces(pattern) == (
        r"(?:(?m)^npm error )|(?:(?m)(?i)build failed)",
        r"(?:(?m)(?i)^\s*\d+:\d+ \w+$)",
    )
    regex_set = PatternSet([pattern], "test")
    assert len(regex_set.gated) == 1 and len(regex_set.sets) == 1
    for text in ["x\nnpm error E404", "BUILD FAILED", " 3:4 Problems", "ok", "x 3:4 problems"]:
        assert regex_set.matching(text) == ([0] if re2.search(pattern, text) else []), text


def test_a_long_alternation_is_searched_in_runs_each_gated_by_its_own_literals() -> None:
    words = [md5(str(i).encode()).hexdigest()[:12] for i in range(800)]  # no shared prefix
    pattern = r"(?m)^\w+: (?:" + "|".join(words) + r")$"
    cut = pieces(pattern)
    assert len(cut) > 3 and all(len(p) <= LONG_PATTERN + 20 for p in cut)
    regex_set = PatternSet([pattern], "test")
    assert len(regex_set.gated) == len(cut) and not regex_set.sets
    found = regex_set.search(f"x\ntool: {words[799]}".encode())
    assert len(found.candidates) == 1 and found.matching() == [0]
    assert regex_set.matching(f"tool: {words[799]}, then more".encode()) == []


@pytest.mark.parametrize(
    ("pattern", "split"),
    [
        (r"(?m)^a|(?i)b|c", ("", ("(?:(?m)^a)", "(?:(?m)(?i)b)", "(?:(?m)(?i)c)"), "")),
        (r"pre(?:x|[|)]|z\))post", ("pre(?:", ("x", "[|)]", r"z\)"), ")post")),
        (r"(a|b)(c|d|e)", ("(a|b)(", ("c", "d", "e"), ")")),
        (r"[[:alpha:]|]x|y", ("", ("(?:[[:alpha:]|]x)", "(?:y)"), "")),
        (r"(?:x|y)?z", None),  # a quantified group is not the union of its alternatives
        (r"(?:x(?i)|y)z", None),  # flags set inside
        (r"\Q|\E", None),
        (r"abc", None),
    ],
)
def test_alternatives(pattern: str, split: object) -> None:
    assert alternatives(pattern) == split


def test_an_empty_list_matches_nothing() -> None:
    assert PatternSet([], "test").matching(b"anything") == []
    assert PatternSet(None, "test", parts=(0, 0)).search(b"x").matching() == []


def test_every_pattern_answers_as_searched_alone() -> None:
    patterns = [r"(?m)^error: \w+", r"\bfailed\b", r"(?i)no such file", r"\A\s*E\d+", "x|yz"]
    texts = ["error: disk", "it FAILED", "No Such File or directory", "  E42 bad", "yz", ""]
    regex_set = PatternSet(patterns, "test")
    for text in texts:
        alone = [i for i, p in enumerate(patterns) if re2.search(p, text)]
        assert regex_set.matching(text) == alone, text


_ATOMS = ["a", "b", "ab", "A", r"\d", "[ab]", "[|)]", r"\|", r"\(", "x", r"\n", "^", "$", r"\A"]
_ATOMS += [r"\z", r"\b", "[^a]", "[[:alpha:]]", "abc", "ERR", "fail"]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    """A random RE2 pattern of literals, classes, anchors, flags and (quantified) groups."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.15 and depth < 3:
            inner = "|".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 4)))
            opener = rng.choice(["(?:", "(", "(?i:"])
            parts.append(opener + inner + ")" + rng.choice(["", "", "?", "*", "+", "{2}"]))
        elif roll < 0.22:
            parts.append(rng.choice(["(?i)", "(?m)", "(?s)", "(?-i)", "(?im)"]))
        else:
            parts.append(rng.choice(_ATOMS) + rng.choice(["", "", "", "?", "*", "+"]))
    return "".join(parts)


def test_random_patterns_cut_into_pieces_match_where_they_do() -> None:
    """Fuzzed: top-level alternations and a group's alternatives, cut, match the same texts."""
    rng = random.Random(7)
    letters = ["a", "b", "A", "B", "x", "\n", "|", ")", "(", "1", "ERR", "fail", "abc", " "]
    texts = ["".join(rng.choice(letters) for _ in range(rng.randint(0, 12))) for _ in range(200)]
    cut = 0
    for n in range(1200):
        if n % 2:
            pattern = "|".join(_random_pattern(rng) for _ in range(rng.randint(1, 4)))
        else:
            group = "|".join(_random_pattern(rng, 2) for _ in range(3))
            pattern = f"{_random_pattern(rng)}(?:{group}){_random_pattern(rng, 3)}"
        try:
            whole = re2.compile(pattern)
        except re2.error:
            continue
        parts = [re2.compile(p) for p in pieces(pattern)]
        cut += len(parts) > 1
        for text in texts:
            assert bool(whole.search(text)) == any(p.search(text) for p in parts), (pattern, text)
    assert cut > 250  # patterns actually cut, each checked on every text
