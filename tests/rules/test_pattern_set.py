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


def test_parts_keep_where_each_list_starts() -> None:
    regex_set = PatternSet(["a", "b", "ccc", "d", "eee"], "test", parts=(1, 2, 2), per_set=2)
    assert regex_set.starts == (0, 1, 3, 5)
    assert regex_set.scan(b"a ccc eee").matching(start=1, stop=3) == [2]
    assert regex_set.scan(b"zzz").matching() == []


def test_a_scan_searches_gated_patterns_only_until_the_answer_is_known() -> None:
    patterns = ["alpha", "beta", "gamma", "delta", r"\d+"]  # the last has no literal: shared
    regex_set = PatternSet(patterns, "test")
    scan = regex_set.scan(b"gamma beta 7 alpha")
    assert scan.candidates == [0, 1, 2] and scan.hits == [4]
    searched: list[int] = []
    gated = dict(scan.gated)
    scan.gated = {i: _Counted(i, m, searched) for i, m in gated.items()}
    assert scan.first() == 0 and searched == [0]
    assert scan.first(start=1, rank=lambda i: -i) == 4 and searched == [0]  # shared ranks first
    ranks = {2: 0, 4: 1}.get  # 1 and 3 ranked 5: left out below, never searched
    assert scan.first(start=1, rank=lambda i: ranks(i, 5), limit=5) == 2 and searched == [0, 2]
    assert scan.first(rank=lambda i: 9, limit=9) is None
    assert regex_set.first(b"nothing") is None and regex_set.first(b"beta delta") == 1


class _Counted:
    """A gated automaton that notes each search."""

    def __init__(self, index: int, automaton: object, searched: list[int]) -> None:
        self.index, self.automaton, self.searched = index, automaton, searched

    def Match(self, text: bytes) -> object:  # noqa: N802 (RE2's name)
        self.searched.append(self.index)
        return self.automaton.Match(text)  # type: ignore[attr-defined]


def test_an_empty_list_matches_nothing() -> None:
    assert PatternSet([], "test").matching(b"anything") == []
    assert PatternSet(None, "test", parts=(0, 0)).scan(b"x").matching() == []


def test_every_pattern_answers_as_searched_alone() -> None:
    patterns = [r"(?m)^error: \w+", r"\bfailed\b", r"(?i)no such file", r"\A\s*E\d+", "x|yz"]
    texts = ["error: disk", "it FAILED", "No Such File or directory", "  E42 bad", "yz", ""]
    regex_set = PatternSet(patterns, "test")
    for text in texts:
        alone = [i for i, p in enumerate(patterns) if re2.search(p, text)]
        assert regex_set.matching(text) == alone, text
