"""PatternSet: patterns shared out between several automata answer as one ordered list."""

from __future__ import annotations

from recovery_proxy.rules.model import LONG_PATTERN, PatternSet


def test_matches_are_ascending_indices_across_automata() -> None:
    long = "(?:" + "|".join(f"word{i:05d}" for i in range(LONG_PATTERN // 8)) + "|needle)"
    patterns = ["alpha", long, "beta", "gamma", "(?i)ALPHA", "delta"]
    regex_set = PatternSet(patterns, "test", per_set=2)
    assert len(regex_set.sets) == 4  # [0, 2], [3, 4], [5], then the long one alone
    assert regex_set.matching(b"delta needle alpha") == [0, 1, 4, 5]
    assert regex_set.matching("gamma beta") == [2, 3]
    assert regex_set.matching(b"nothing here") == []


def test_parts_are_counted_in_their_own_list() -> None:
    regex_set = PatternSet(["a", "b", "c", "d", "e"], "test", parts=(1, 2, 2), per_set=2)
    assert regex_set.matching_parts(b"a c e") == [[0], [1], [1]]
    assert regex_set.matching_parts(b"zzz") == ((), (), ())


def test_an_empty_list_matches_nothing() -> None:
    assert PatternSet([], "test").matching(b"anything") == []
    assert PatternSet(None, "test", parts=(0, 0)).matching_parts(b"x") == ((), ())
