"""Many RE2 patterns searched over one text, as cheaply as new texts allow: `PatternSet`.

RE2 builds an automaton's states lazily, for each text never seen, and production texts are new
ones (the proxy judges each tool result once). One automaton for many patterns builds states
for their every combination: about 700 us a result for the detection rules in one, 350 in runs
of 16, 230 in runs of 4 (`python -m bench.classify --new`). So each pattern is cut into pieces
(`pieces`): a piece with required literals (`literals.py`) gets an automaton of its own,
searched only when the text holds one of its literals (one Aho-Corasick pass finds them); the
pieces without share automata of 4, those anchored at the text's start one more.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ahocorasick_rs
import re2

from recovery_proxy.rules.alternatives import alternatives
from recovery_proxy.rules.errors import RulesError
from recovery_proxy.rules.literals import anchored_at_start, required_literals

_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False
# RE2::Set has no fallback when its DFA runs out of memory (it reports no match). Texts are
# bounded by the scan window (12 KiB by default) and a DFA adds at most one state per byte,
# so this budget is far beyond what a window can use; it is a ceiling per automaton (523
# with the bundled rules, most of one short piece whose states stay few), allocated only as
# used: the whole process peaks at 120 MiB after judging every corpus text twice.
_SET_OPTIONS.max_mem = 256 << 20

LONG_PATTERN = 2000  # characters: a longer piece (of a generated alternation) is searched alone
PATTERNS_PER_SET = 4  # pieces without required literals per automaton


class PatternSet:
    """Every pattern of one ordered list searched over a text. `search(text)` is a
    `TextSearch` that answers questions (every match, the first one, the first in some order)
    searching no more than they need; `matching(text)` is the indices of the patterns that
    match, ascending. A set built from several lists (`parts`: their lengths) keeps where
    each list starts (`starts`): one search of a text serves all of them.

    `gated`: each gated piece's pattern index and automaton; `atoms` finds the literals in
    the case-folded text, `gates[k]` the pieces literal k gates; `sets`: the other pieces'
    automata, each with the pattern index of each of its pieces."""

    def __init__(
        self,
        patterns: list[str] | None = None,
        where: str = "",
        parts: tuple[int, ...] = (),
        per_set: int = PATTERNS_PER_SET,
    ) -> None:
        self.starts = tuple(sum(parts[:k]) for k in range(len(parts) + 1))
        gated: list[tuple[int, Any]] = []
        by_literal: dict[str, list[int]] = {}
        shared: list[tuple[int, str]] = []
        anchored: list[tuple[int, str]] = []
        for owner, piece in (
            (i, p) for i, pattern in enumerate(patterns or []) for p in pieces(pattern)
        ):
            literals = required_literals(piece)
            if literals:
                for literal in literals:
                    by_literal.setdefault(literal, []).append(len(gated))
                gated.append((owner, _compiled([piece], where)))
            elif anchored_at_start(piece):
                anchored.append((owner, piece))
            else:
                shared.append((owner, piece))
        self.gated = tuple(gated)
        self.gates = tuple(tuple(found) for found in by_literal.values())
        self.atoms: Any = None
        if by_literal:
            self.atoms = ahocorasick_rs.AhoCorasick(
                list(by_literal), matchkind=ahocorasick_rs.MATCHKIND_STANDARD
            )
        self.sets = tuple(
            (tuple(owner for owner, _ in group), _compiled([p for _, p in group], where))
            for group in _groups(shared, per_set)
        )
        if anchored:  # one automaton: each reads only a text's first bytes
            automaton = _compiled([p for _, p in anchored], where, re2.Set.MatchSet)
            self.sets += ((tuple(owner for owner, _ in anchored), automaton),)

    def search(self, text: str | bytes) -> TextSearch:
        """`text` searched as far as the cheap part goes: the shared automata searched, the
        gated pieces whose literals it holds known; those are searched only when asked."""
        hits = {owners[i] for owners, automaton in self.sets for i in automaton.Match(text) or ()}
        candidates: list[tuple[int, Any]] = []
        if self.atoms is not None:
            folded = (text.decode(errors="replace") if isinstance(text, bytes) else text).casefold()
            found = {k for k, _, _ in self.atoms.find_matches_as_indexes(folded, overlapping=True)}
            candidates = [self.gated[g] for g in sorted({g for k in found for g in self.gates[k]})]
        return TextSearch(text, sorted(hits), candidates)

    def matching(self, text: str | bytes) -> list[int]:
        """Indices of the matching patterns; `text` as UTF-8 bytes saves an encoding a call."""
        return self.search(text).matching()

    def first(self, text: str | bytes) -> int | None:
        """The first matching pattern (its index), or None; searches only until it is known."""
        return self.search(text).first()


class TextSearch:
    """One text's search by a `PatternSet`: `hits`, the patterns matched in its shared
    automata (all searched), and `candidates`, the gated pieces whose literals the text holds
    (pattern index, automaton; ascending), each searched only when an answer needs it. Most
    answers need few: the first failure rule, the first category in the tool's order (a new
    text costs each gated search its states' building: about 1.5 us)."""

    __slots__ = ("candidates", "hits", "text")

    def __init__(
        self, text: str | bytes, hits: list[int], candidates: list[tuple[int, Any]]
    ) -> None:
        self.text, self.hits, self.candidates = text, hits, candidates

    def matching(self, start: int = 0, stop: int | None = None) -> list[int]:
        """Every matching pattern with an index in [start, stop), ascending."""
        wanted = range(start, stop if stop is not None else 1 << 62)
        found = {i for i in self.hits if i in wanted}
        for i, automaton in self.candidates:
            if i in wanted and i not in found and automaton.Match(self.text):
                found.add(i)
        return sorted(found)

    def first(
        self, start: int = 0, rank: Callable[[int], int] | None = None, limit: int = 1 << 62
    ) -> int | None:
        """The matching pattern from index `start` on that comes first by `rank` (default: its
        index; ties by index), leaving out those ranked `limit` or later; None if none.
        Candidates are searched in that order, only until the answer is known."""
        if rank is None:
            key: Callable[[int], Any] = _index
            hits = [i for i in self.hits if i >= start]
            candidates = [c for c in self.candidates if c[0] >= start]
        else:
            key = lambda i: (rank(i), i)  # noqa: E731
            hits = [i for i in self.hits if i >= start and rank(i) < limit]
            candidates = sorted(
                (c for c in self.candidates if c[0] >= start and rank(c[0]) < limit),
                key=lambda c: key(c[0]),
            )
        best = min(hits, key=key, default=None)
        for i, automaton in candidates:
            if best is not None and key(i) >= key(best):
                break
            if automaton.Match(self.text):
                return i
        return best


def _index(i: int) -> int:
    return i


@functools.lru_cache(maxsize=1024)  # a reload cuts the same patterns again
def pieces(pattern: str) -> tuple[str, ...]:
    """`pattern` as the pieces searched apart, which together match what it matches: itself
    when it has required literals and is short; else its alternatives
    (`alternatives.alternatives`) in runs of at most `LONG_PATTERN` characters, each with required
    literals, and those that have none in one more."""
    if len(pattern) <= LONG_PATTERN and required_literals(pattern):
        return (pattern,)
    split = alternatives(pattern)
    if split is None:
        return (pattern,)
    prefix, branches, suffix = split
    runs: list[list[str]] = []
    rest: list[str] = []
    for run in _runs(branches):
        if not required_literals(prefix + "|".join(run) + suffix):  # which have none?
            rest += [b for b in run if not required_literals(b)]
            run = [b for b in run if required_literals(b)]
        runs += [run] if run else []
    found = tuple(prefix + "|".join(run) + suffix for run in (*runs, rest) if run)
    try:
        for piece in found:
            re2.compile(piece)
    except re2.error:  # not cut as RE2 reads it: searched whole
        return (pattern,)
    return found


def _runs(branches: tuple[str, ...]) -> list[list[str]]:
    """Consecutive alternatives in runs of at most `LONG_PATTERN` characters (or one)."""
    runs: list[list[str]] = []
    size = LONG_PATTERN
    for branch in branches:
        if size + len(branch) > LONG_PATTERN:
            runs.append([])
            size = 0
        runs[-1].append(branch)
        size += len(branch) + 1
    return runs


def _groups(pieces: list[tuple[int, str]], per_set: int) -> list[list[tuple[int, str]]]:
    """Which pieces share an automaton: the short ones in runs of at most `per_set`, then each
    long one alone."""
    short = [p for p in pieces if len(p[1]) <= LONG_PATTERN]
    runs = [short[k : k + per_set] for k in range(0, len(short), per_set)]
    return [*runs, *([p] for p in pieces if len(p[1]) > LONG_PATTERN)]


def _compiled(patterns: list[str], where: str, kind: Any = re2.Set.SearchSet) -> Any:
    """One RE2::Set of `patterns` (by default an unanchored search), or a RulesError naming
    `where`."""
    regex_set = kind(_SET_OPTIONS)
    try:
        for pattern in patterns:
            regex_set.Add(pattern)
        regex_set.Compile()
    except re2.error as exc:
        raise RulesError(f"{where}: patterns do not compile together: {exc}") from None
    return regex_set
