"""Header-less continuity: which conversation a fingerprinted request continues.

Without a session id a request's key is a fingerprint of its system prompt and first user
message. A compaction replaces the first user message, so the compacted request would open an
empty session and never get its summary. A small index per tenant and agent (the system
prompt's first paragraph) maps each thread fingerprint to the conversation it belongs to. A new
thread joins an earlier conversation only on evidence: it carries tool results of exactly one
of them (results with short, reusable ids only next to a summary marker), or it opens with a
summary marker and exactly one conversation of that agent was active recently. With no
evidence, or several candidates (concurrent sessions of one agent under one key), it starts a
conversation of its own: nothing is added rather than something wrong.

A thread that starts again (its first user message alone, after its conversation has judged
tool results) is a new run of the same task, e.g. a second `gemini -p` with the same prompt in
the same project: it gets a conversation of its own rather than the earlier run's failures. A
retry of the first request, before any tool result, stays in its conversation.

"Opens with": the agent's own compaction puts its summary at the start of a message (or of a
paragraph it appends to its system prompt). A marker quoted inside a message (a web page the
user pasted, a tool's output) is no evidence: it would link a stranger's new conversation to
the one recent conversation of the same agent and key, and hand it that one's failures.
"""

from __future__ import annotations

from collections import OrderedDict

from recovery_proxy.core.compaction import MARKER_ASSISTANT_TEXTS
from recovery_proxy.core.conversation import STRONG_ID, Conversation, identify
from recovery_proxy.core.state import MAX_LINKS, Link, SessionState
from recovery_proxy.rules.model import Rules
from recovery_proxy.session.keys import FINGERPRINT, scoped
from recovery_proxy.store import Store

RECENT_SECONDS = 3600.0  # a conversation idle longer is no candidate for a compacted thread
TOUCH_SECONDS = 60.0  # how often a live thread refreshes its entry in the index
CACHE_SIZE = 4096
AGENT_CHARS = 1024


def agent_of(system: str) -> str:
    """The stable part of a system prompt: its first paragraph (LangChain-style agents append
    the summary to the system prompt; volatile lines come later, if at all)."""
    return system.split("\n\n", 1)[0][:AGENT_CHARS]


class Continuity:
    """Resolves fingerprinted requests to conversation keys; an LRU cache of resolved threads
    keeps the hot path free of store reads."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cache: OrderedDict[str, tuple[str, float]] = OrderedDict()

    async def key(self, tenant: str, conv: Conversation, rules: Rules, now: float) -> str:
        """The session key for a request that named no session."""
        index = scoped(tenant, "agent:" + agent_of(conv.system))
        slot = f"{index}/{conv.thread}"
        cached = self.cache.get(slot)
        if cached is not None and now - cached[1] < TOUCH_SECONDS and not starts_again(conv, rules):
            return cached[0]  # a thread that may start again is checked below
        own = scoped(tenant, FINGERPRINT + conv.thread)
        known = await self.store.get(index)
        link = known.links.get(conv.thread) if known else None
        ended = ""  # the conversation this request starts again, if it does
        if link is not None and starts_again(conv, rules) and await self._moved_on(link.key):
            ended, chosen = link.key, scoped(tenant, f"{FINGERPRINT}{conv.thread}@{now:.6f}")
        else:
            chosen = link.key if link else await self._choose(known, conv, rules, now, own)
        key = await self.store.update(
            index, lambda state: _register(state, conv, chosen, now, ended)
        )
        self.cache[slot] = (key, now)
        self.cache.move_to_end(slot)
        if len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        return key

    async def _moved_on(self, key: str) -> bool:
        """True when the conversation under `key` has judged tool results: a request of its
        thread without any is a new run, not this one continued."""
        state = await self.store.get(key)
        return state is not None and bool(state.seen)

    async def _choose(
        self, known: SessionState | None, conv: Conversation, rules: Rules, now: float, own: str
    ) -> str:
        """The conversation a new thread continues, or `own` without unambiguous evidence."""
        if known is None:
            return own
        candidates = {
            link.key for link in known.links.values() if now - link.touched < RECENT_SECONDS
        }
        candidates.discard(own)
        if not candidates:
            return own
        # a provider's compaction block is written by the provider, not quoted tool text
        marker = bool(conv.boundary) or opens_with_marker(conv, rules)
        # A short id (`call_0`) may be in two unrelated conversations of a local model: it
        # counts as evidence only next to a marker; a long (random) id counts by itself.
        identify(conv.results)
        keys = {r.key for r in conv.results if marker or len(r.call_id) >= STRONG_ID}
        if keys:
            sharing = []
            for candidate in sorted(candidates):
                state = await self.store.get(candidate)
                if state is not None and not keys.isdisjoint(state.seen):
                    sharing.append(candidate)
            if sharing:
                return sharing[0] if len(sharing) == 1 else own
        if len(candidates) == 1 and marker:
            return candidates.pop()
        return own


def starts_again(conv: Conversation, rules: Rules) -> bool:
    """The request is its thread's opening: the first user message and nothing after it (no
    tool result, no model text, no later user message, no summary marker)."""
    if conv.results or conv.assistant_texts or len(conv.user_anchors) > 1:
        return False
    return not opens_with_marker(conv, rules)


def opens_with_marker(conv: Conversation, rules: Rules) -> bool:
    """A summary marker where an agent's compaction puts it: at the start of a user or
    assistant message, or of a paragraph of the system prompt."""
    assistant = [text for _, _, text in conv.assistant_texts[:MARKER_ASSISTANT_TEXTS]]
    for text in [*conv.texts, *assistant]:
        if not rules.marked(text):  # the one-pass set first; positions only on a hit
            continue
        for matcher in rules.markers:
            found = matcher.search(text)
            if found is None:
                continue
            before = text[: found.start()]
            paragraph = text == conv.system and (before.endswith("\n\n") or not before.strip())
            if not before.strip() or paragraph:
                return True
    return False


def _register(
    state: SessionState, conv: Conversation, chosen: str, now: float, ended: str = ""
) -> str:
    """Record (or refresh) the thread's link; a link another replica made first wins. A link
    to `ended` (the conversation this request starts again) is replaced by `chosen`."""
    link = state.links.pop(conv.thread, None)
    key = link.key if link and link.key != ended else chosen
    state.links[conv.thread] = Link(key=key, touched=now)  # most recently used last
    while len(state.links) > MAX_LINKS:
        del state.links[next(iter(state.links))]
    state.updated = now
    return key
