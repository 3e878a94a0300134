"""The active rule set, compiled: `Rules` and its parts (`Category`, `Matcher`, and the
`PatternSet`s of proxy/rules/pattern_set.py), every pattern compiled once with RE2 (linear time,
safe on untrusted text). Immutable: it is built from rule files by proxy/rules/load.py, and a
reload builds a new one. A problem is a `RulesError` naming the file, the rule id and what is
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import re2

from recovery_proxy.rules.errors import RulesError
from recovery_proxy.rules.pattern_set import PatternSet
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


@dataclass(frozen=True)
class Matcher:
    """A compiled pattern and the id it came from."""

    id: str
    regex: Any

    def search(self, text: str) -> Any:
        return self.regex.search(text)


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
    # Answers by command (`$ COMMAND\nOUTPUT`): successes whatever the exit status says; the
    # output without its wrapper (`unwrap`) and trailing lines (`trailer`, e.g. Gemini CLI's).
    answers: tuple[Matcher, ...] = ()
    trailer: tuple[Matcher, ...] = ()
    command_keys: tuple[str, ...] = ()  # the call's arguments that hold its command line
    # Steer the provider's own summariser (issue 25): the ledger in compaction instructions.
    steer_provider: bool = True
    provider_instructions: str = ""
    files: dict[str, RuleFile] = field(default_factory=dict, compare=False, repr=False)
    # The same patterns as `PatternSet`s (proxy/core/classify.py); built by `rules_load.build`.
    # `detection_set`: unwrap, not_error, exit_zero, error and reply in one set (its five
    # parts), one search of the window; `error_set` again alone for the output inside a wrapper;
    # `reply_set` only where the exit status says success; `answer_set` only for a failure
    # whose call has a command line.
    detection_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    error_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    reply_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
    answer_set: PatternSet = field(default_factory=PatternSet, compare=False, repr=False)
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
