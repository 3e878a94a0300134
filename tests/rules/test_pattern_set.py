"""PatternSet: patterns gated by their literals or shared out between automata answer as one
ordered list, exactly as searching them one by one."""

from __future__ import annotations

import re2

from recovery_proxy.rules.model import LONG_PATTERN, PatternSet


def test_matches_are_ascending_indices_across_automata() -> None:
    long = "(?:" + "|".join(f"word{i:05d}" for i in range(LONG_PATTERN // 8)) + r"|\d\d)"
    patterns = ["alpha", long, r"\d{3}", "gamma", "(?i)ALPHA", r"\s+x\b", "delta"]
    regex_set = PatternSet(patterns, "test", per_set=2)
    assert sorted(regex_set.gated) == [0, 3, 4, 6]  # required literals: searched where present
    assert [index for index, _ in regex_set.sets] == [(2, 5), (1,)]  # runs of 2, long alone
    assert regex_set.matching(b"delta 42 alpha") == [0, 1, 4, 6]
    assert regex_set.matching("gamma 123 x") == [1, 2, 3, 5]
    assert regex_set.matching(b"nothing here") == []


def test_case_insensitive_patterns_match_any_case_of_their_literals() -> None:
    regex_set = PatternSet(["(?i)straße", "(?i)KELVIN", "Exact"], "test")
    assert regex_set.matching("STRASSE ẞ Kelvin") == [1]  # RE2: ß and ẞ are one letter, not ss
    assert regex_set.matching("STRAẞE kelvin exact") == [0, 1]
    assert regex_set.matching("Exact") == [2]


def test_parts_are_counted_in_their_own_list() -> None:
    regex_set = PatternSet(["a", "b", "ccc", "d", "eee"], "test", parts=(1, 2, 2), per_set=2)
    assert regex_set.matching_parts(b"a ccc eee") == [[0], [1], [1]]
    assert regex_set.matching_parts(b"zzz") == ((), (), ())


def test_an_empty_list_matches_nothing() -> None:
    assert PatternSet([], "test").matching(b"anything") == []
    assert PatternSet(None, "test", parts=(0, 0)).matching_parts(b"x") == ((), ())


def test_every_pattern_answers_as_searched_alone() -> None:
    patterns = [r"(?m)^error: \w+", r"\bfailed\b", r"(?i)no such file", r"\A\s*E\d+", "x|yz"]
    texts = ["error: disk", "it FAILED", "No Such File or directory", "  E42 bad", "yz", ""]
    regex_set = PatternSet(patterns, "test")
    for text in texts:
        alone = [i for i, p in enumerate(patterns) if re2.search(p, text)]
        assert regex_set.matching(text) == alone, text
