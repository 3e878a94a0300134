"""The active rule set, compiled: `Rules` and its parts (`Category`, `Matcher`, `PatternSet`),
every pattern compiled once with RE2 (linear time, safe on untrusted text). Immutable: it is
built from rule files by proxy/rules/load.py, and a reload builds a new one. A problem is a
`RulesError` naming the file, the rule id and what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import ahocorasick
import re2

from recovery_proxy.rules.literals import required_literals
from recovery_proxy.rules.schema import (
    Escalation,
    Placement,
    RuleFile,
    Scan,
    Sessions,
    Targets,
    Thresholds,
)

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False
# RE2::Set has no fallback when its DFA runs out of memory (it reports no match). Texts are
# bounded by the scan window (12 KiB by default) and a DFA adds at most one state per byte,
# so this budget is far beyond what a window can use; it is a ceiling per automaton (about
# 400 with the bundled rules, most of one short pattern whose states stay few), allocated
# only as used: the whole process peaks at 144 MiB after judging every corpus text twice.
_SET_OPTIONS.max_mem = 256 << 20


class RulesError(Exception):
    """A rules directory that cannot be used, with a message naming file, rule and problem."""


@dataclass(frozen=True)
class Matcher:
    """A compiled pattern and the id it came from."""

    id: str
    regex: Any

    def search(self, text: str) -> Any:
        return self.regex.search(text)


# How patterns are shared out between automata (measured with `python -m bench.classify --new`):
# RE2 builds an automaton's states lazily, for each text never seen, and production texts are
# new ones (the proxy judges each tool result once). One automaton for many patterns builds
# states for their every combination: about 700 us a result for the detection rules in one,
# 350 in runs of 16, 230 in runs of 4. So a pattern that has required literals (`literals.py`,
# most of them) gets an automaton of its own, searched only when a text holds one of its
# literals (one Aho-Corasick pass finds them: 14 of 136 detection rules a text on average);
# the others share automata of 4, and each long one (a generated alternation of translated
# messages) has its own.
LONG_PATTERN = 2000  # characters: a longer pattern (a generated alternation) gets its own automaton
PATTERNS_PER_SET = 4  # patterns without required literals per automaton


class PatternSet:
    """Every pattern of one ordered list searched over a text (RE2): those with required
    literals (`gated`) only where the text holds one (`atoms`: each literal's patterns, one
    Aho-Corasick pass over the case-folded text), the others in few passes (`sets`: runs of
    `per_set` patterns, each long one alone). `matching(text)` is the indices of the patterns
    that match, ascending (so the first is the first rule); `scan(text)` answers narrower
    questions (the first match, the matches in a range) searching no more than they need. A
    set built from several lists (`parts`: their lengths) keeps where each list starts
    (`starts`): one scan of a text serves all of them."""

    def __init__(
        self,
        patterns: list[str] | None = None,
        where: str = "",
        parts: tuple[int, ...] = (),
        per_set: int = PATTERNS_PER_SET,
    ) -> None:
        # with `parts`: the index of each list's first pattern, and where the last one ends
        self.starts = tuple(sum(parts[:k]) for k in range(len(parts) + 1))
        patterns = patterns or []
        literals = [required_literals(p) for p in patterns]
        by_literal: dict[str, list[int]] = {}
        for i, found in enumerate(literals):
            for literal in found or ():
                by_literal.setdefault(literal, []).append(i)
        self.gated = {i: _compiled([patterns[i]], where) for i, f in enumerate(literals) if f}
        self.atoms: Any = None
        if by_literal:
            self.atoms = ahocorasick.Automaton()
            for literal, indices in by_literal.items():
                self.atoms.add_word(literal, tuple(indices))
            self.atoms.make_automaton()
        others = [i for i, found in enumerate(literals) if not found]
        self.sets = tuple(
            (
                tuple(others[k] for k in group),
                _compiled([patterns[others[k]] for k in group], where),
            )
            for group in _groups([patterns[i] for i in others], per_set)
        )

    def scan(self, text: str | bytes) -> Scan:
        """`text` searched as far as the cheap part goes: the shared automata searched, the
        gated patterns whose literals it holds known; those are searched only when asked."""
        hits = [index[i] for index, automaton in self.sets for i in automaton.Match(text) or ()]
        candidates: list[int] = []
        if self.atoms is not None:
            folded = (text.decode(errors="replace") if isinstance(text, bytes) else text).casefold()
            candidates = sorted({i for _, indices in self.atoms.iter(folded) for i in indices})
        return Scan(text, sorted(hits), candidates, self.gated)

    def matching(self, text: str | bytes) -> list[int]:
        """Indices of the matching patterns; `text` as UTF-8 bytes saves an encoding a call."""
        return self.scan(text).matching()

    def first(self, text: str | bytes) -> int | None:
        """The first matching pattern (its index), or None; searches only until it is known."""
        return self.scan(text).first()


class Scan:
    """One text's search by a `PatternSet`: `hits`, the matches in its shared automata (all
    searched), and `candidates`, the gated patterns whose literals the text holds, each
    searched only when an answer needs it. Most answers need few: the first failure rule, the
    first category by the tool's order (production texts are new to RE2, so each gated search
    costs its states' building: about 1.5 us)."""

    __slots__ = ("text", "hits", "candidates", "gated")

    def __init__(
        self, text: str | bytes, hits: list[int], candidates: list[int], gated: dict[int, Any]
    ) -> None:
        self.text, self.hits, self.candidates, self.gated = text, hits, candidates, gated

    def matching(self, start: int = 0, stop: int | None = None) -> list[int]:
        """Every matching pattern with an index in [start, stop), ascending."""
        wanted = range(start, stop if stop is not None else 1 << 62)
        found = [i for i in self.candidates if i in wanted and self.gated[i].Match(self.text)]
        return sorted([*(i for i in self.hits if i in wanted), *found])

    def first(
        self, start: int = 0, rank: Callable[[int], int] | None = None, limit: int = 1 << 62
    ) -> int | None:
        """The matching pattern from index `start` on that comes first by `rank` (default: its
        index; ties by index), leaving out those ranked `limit` or later; None if none.
        Candidates are searched in that order, only until the answer is known."""
        key: Callable[[int], Any] = _index if rank is None else lambda i: (rank(i), i)
        if rank is None:
            hits = [i for i in self.hits if i >= start]
            candidates = [i for i in self.candidates if i >= start]
        else:
            hits = [i for i in self.hits if i >= start and rank(i) < limit]
            candidates = sorted(
                (i for i in self.candidates if i >= start and rank(i) < limit), key=key
            )
        best = min(hits, key=key, default=None)
        for i in candidates:
            if best is not None and key(i) > key(best):
                break
            if self.gated[i].Match(self.text):
                return i
        return best


def _index(i: int) -> int:
    return i


def _groups(patterns: list[str], per_set: int) -> list[list[int]]:
    """Which patterns share an automaton (indices, ascending in each): the others in runs of at
    most `per_set`, then each long one (a generated alternation of translated messages) alone."""
    short = [i for i, p in enumerate(patterns) if len(p) <= LONG_PATTERN]
    runs = [short[k : k + per_set] for k in range(0, len(short), per_set)]
    return [*runs, *([i] for i, p in enumerate(patterns) if len(p) > LONG_PATTERN)]


def _compiled(patterns: list[str], where: str) -> Any:
    """One RE2::Set of `patterns` (unanchored search), or a RulesError naming `where`."""
    regex_set = re2.Set.SearchSet(_SET_OPTIONS)
    try:
        for pattern in patterns:
            regex_set.Add(pattern)
        regex_set.Compile()
    except re2.error as exc:
        raise RulesError(f"{where}: patterns do not compile together: {exc}") from None
    return regex_set


@dataclass(frozen=True)
class Category:
    id: str
    matchers: tuple[Matcher, ...]
    tools: Any | None
    hints: tuple[str, ...]
    tool_hints: tuple[tuple[Any, tuple[str, ...]], ...]
    systemic: bool
    subject: Any | None = None  # RE2: its first matching group names the module or command
    # Patterns other files add (`category_patterns`, e.g. generated translations): tried only
    # where no category's own patterns match, so the main one-pass set stays small.
    extra: tuple[Matcher, ...] = ()
    error_hints: tuple[tuple[Any, tuple[str, ...]], ...] = ()  # (RE2 on the key line, hints)

    def hints_for(self, tool: str, error: str = "") -> tuple[str, ...]:
        """The hints for a failure of this category: those of the first `error_hints` whose
        pattern matches its key error line, else of the first `tool_hints` for its tool, else
        the category's own."""
        for regex, hints in self.error_hints:
            if error and regex.search(error):
                return hints
        for regex, hints in self.tool_hints:
            if regex.search(tool):
                return hints
        return self.hints


MARKED_CACHE = 512  # texts remembered by `Rules.marked`
MARKED_TEXT_MAX = 64 * 1024  # characters: longer texts are searched every time
RANKS_CACHE = 256  # tool names remembered by `Rules.category_ranks`
RANKS_TOOL_MAX = 256  # characters: a longer tool name is ranked every time


@dataclass(frozen=True, slots=True)
class Templates:
    """Every text the proxy writes, from the rules' `templates:` (fields checked at load)."""

    block: str
    previous_attempt: str
    no_previous_attempts: str
    same_error: str
    hint: str
    repeat_warn: str
    repeat_stop: str
    same_call: str
    cycle: str
    call_window: str
    repeated_message: str
    compaction_loop: str
    escalation: str
    systemic: str
    summary: str
    summary_item: str
    ledger: str
    blocked: str
    notice: str
    # resolutions (proxy/core/resolutions.py)
    resolution_found: str
    resolution_after: str
    resolution_changed: str
    resolution_retried: str
    summary_resolution: str
    resolved_before: str
    resolution_event: str
    known_fix: str


@dataclass(frozen=True)
class Rules:
    """The active, compiled rule set. Immutable: a reload builds a new one."""

    version: str
    source: str
    scan: Scan
    unwrap: tuple[Matcher, ...]
    not_error: tuple[Matcher, ...]
    error: tuple[Matcher, ...]
    key_line: tuple[Matcher, ...]
    categories: tuple[Category, ...]
    targets: Targets
    templates: Templates
    thresholds: Thresholds
    escalation: Escalation
    placement: Placement
    markers: tuple[Matcher, ...]
    cleared: tuple[str, ...]
    sessions: Sessions
    exit_zero: tuple[Matcher, ...] = ()  # wrappers reporting exit 0: success unless a reply
    reply: tuple[Matcher, ...] = ()  # error replies: failures whatever the exit status says
    # Steer the provider's own summariser (issue 25): the ledger in compaction instructions.
    steer_provider: bool = True
    provider_instructions: str = ""
    files: dict[str, RuleFile] = field(default_factory=dict, compare=False, repr=False)
    # The same patterns as `PatternSet`s (proxy/core/classify.py); built by `rules_load.build`.
    # `detection_set`: unwrap, not_error, exit_zero and error in one set (its four parts), one
    # search of the window; `error_set` again alone for the output inside a wrapper;
    # `reply_set` only where the exit status says success.
    detection_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    error_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    reply_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    key_line_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    category_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    category_owner: tuple[int, ...] = field(default=(), compare=False, repr=False)
    category_extra_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    category_extra_owner: tuple[int, ...] = field(default=(), compare=False, repr=False)
    marker_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    # Texts already searched for markers: a system prompt or first message comes back on
    # every request of a session, and a text-keyed lookup is cheaper than searching it again.
    _marked: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def marked(self, text: str) -> bool:
        """Whether a compaction marker occurs in `text`."""
        found = self._marked.get(text)
        if found is None:
            found = bool(self.marker_set.matching(text))
            if len(text) <= MARKED_TEXT_MAX:  # bounded memory: at most 512 x 64 KiB
                if len(self._marked) >= MARKED_CACHE:
                    self._marked.clear()
                self._marked[text] = found
        return found

    def category(self, category_id: str) -> Category | None:
        return self._categories_by_id.get(category_id)

    @cached_property
    def _categories_by_id(self) -> dict[str, Category]:
        return {c.id: c for c in self.categories}  # ids are unique (`rules_load.build`)

    def category_ranks(self, tool: str) -> tuple[int, ...]:
        """Each category's place in the order tried for `tool`: those whose `tools` match it
        first, then those for every tool, in file order; `len(categories)` for a category
        whose `tools` do not match it (never tried). Remembered per tool name (bounded)."""
        ranks = self._ranks.get(tool)
        if ranks is None:
            tools = [c.tools for c in self.categories]
            specific = [i for i, t in enumerate(tools) if t is not None and t.search(tool)]
            general = [i for i, t in enumerate(tools) if t is None]
            place = {i: rank for rank, i in enumerate(specific + general)}
            ranks = tuple(place.get(i, len(self.categories)) for i in range(len(self.categories)))
            if len(tool) <= RANKS_TOOL_MAX:  # bounded memory: at most 256 short names
                if len(self._ranks) >= RANKS_CACHE:
                    self._ranks.clear()
                self._ranks[tool] = ranks
        return ranks

    @cached_property
    def _ranks(self) -> dict[str, tuple[int, ...]]:
        """`category_ranks` by tool name, for this compiled rule set only (a reload or
        `replace` starts empty)."""
        return {}


def compile_pattern(pattern: str, where: str) -> Any:
    """Compile with RE2 or raise a RulesError saying where the bad pattern is."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise RulesError(f"{where}: invalid RE2 pattern {pattern!r}: {detail}") from None
