"""The recovery pipeline behind the rewrite hook: parse, session, track, plan, splice."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import orjson
import re2

from recovery_proxy import tokens
from recovery_proxy.config import Settings
from recovery_proxy.core.classify import Verdict
from recovery_proxy.core.conversation import Conversation
from recovery_proxy.core.plan import Budget, Plan
from recovery_proxy.core.reply import Reply
from recovery_proxy.core.state import SessionState
from recovery_proxy.core.tracker import observe
from recovery_proxy.core.usage import learn
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.metrics import Metrics
from recovery_proxy.prices import Prices
from recovery_proxy.rewrite import UNCHANGED, ChatRequest, Rewrite
from recovery_proxy.rules.model import Rules
from recovery_proxy.rules.watch import RulesHolder
from recovery_proxy.session.continuity import Continuity
from recovery_proxy.session.keys import (
    FINGERPRINT,
    display_name,
    scoped,
    session_id,
    tenant_of,
)
from recovery_proxy.session.known import KnownFixes
from recovery_proxy.store import Store, open_store
from recovery_proxy.webhooks import Webhooks
from recovery_proxy.wire import WireFormat

log = logging.getLogger("recovery_proxy")

# Bodies above this run the tracker off the event loop (a thread hop costs ~0.25 ms; judging
# thousands of results in a huge body costs far more, and would stall every other request).
HEAVY_BYTES = 1024 * 1024
# A request waits at most this long for its session's previous reply to be stored.
LEARN_WAIT = 0.5


class TrackerError(Exception):
    """The tracker itself raised; the app forwards the original request (fail-open)."""


class RecoveryPipeline:
    """The rewriter: one call per chat request."""

    def __init__(
        self,
        settings: Settings,
        rules: RulesHolder,
        store: Store,
        metrics: Metrics,
        webhooks: Webhooks,
    ) -> None:
        self.settings = settings
        self.rules = rules
        self.store = store
        self.metrics = metrics
        self.webhooks = webhooks
        self.store_down = False
        self.continuity = Continuity(store)
        self.prices = Prices(settings.prices)
        self.prices_loaded: asyncio.Future[Any] | None = None
        self.learning: dict[str, asyncio.Task[None]] = {}  # session key -> its reply being stored
        self.known = KnownFixes(store, settings.known_fixes_sessions)
        self._load_prices()

    def _load_prices(self) -> asyncio.Future[Any] | None:
        """Read the price table on a worker thread (litellm's map is a 1.5 MB file), once,
        as soon as an event loop runs: the first reply should not wait for it."""
        if self.prices_loaded is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return None
            self.prices_loaded = loop.run_in_executor(None, self.prices.load)
        return self.prices_loaded

    async def __call__(self, request: ChatRequest) -> Rewrite:
        rules = self.rules.current
        wire = request.wire
        conv = wire.parse(request.payload)
        if conv is None:
            return UNCHANGED
        if not conv.model and wire.path_model is not None:
            conv.model = wire.path_model(request.path)
        estimate = len(request.body) // tokens.CHARS_PER_TOKEN
        conv.compacting = wire.compacting(request.payload, request.path, estimate)
        now = time.time()
        key, name = await self._session(request, conv, rules, now)
        budget_numbers = self._budget_numbers(request, conv.model, rules)
        verdicts: dict[str, Verdict] = {}
        fraction = self.settings.control_fraction
        control = fraction > 0 and arm_of(key, fraction) == "control"
        learning = self.settings.known_fixes
        known = await self.known.offers(key) if learning and not control else []

        def apply(state: SessionState) -> Plan:
            state.name = state.name or name
            budget = Budget(tokens_for(conv.model), rules.thresholds.block_tokens, *budget_numbers)
            try:
                return observe(state, conv, rules, budget, now, verdicts, control, known)
            except Exception as exc:  # a tracker bug, not a store outage: fail open upstream
                raise TrackerError(f"{type(exc).__name__}: {exc}") from exc

        pending = self.learning.get(key)
        if pending is not None:  # the previous answer's calls first (they name this turn's)
            await asyncio.wait([pending], timeout=LEARN_WAIT)
        plan = await self._update(key, apply, len(request.body) > HEAVY_BYTES)
        if learning:  # control sessions teach too; they are never offered anything
            await self.known.record(key, plan, now)
        counts = {
            "results": len(conv.results),
            "failures": len(plan.new_failures),
            "rules": rules.version,
            "name": name,
            "categories": tuple(plan.new_failures),
            "streak": plan.streak,
            "model": conv.model,
        }
        if control:  # A/B control arm: tracked like treatment, forwarded untouched
            self._count(plan, control=True)
            return Rewrite(session=key, arm="control", **counts)
        arm = "treatment" if fraction > 0 else ""
        self._count(plan)
        if plan.events and rules.escalation.webhook_url:
            self.webhooks.send(rules.escalation.webhook_url, plan.events)
        if plan.reject is not None:
            reason = rules.templates.blocked.format(reason=plan.reject)
            return Rewrite(reject=reason, session=key, arm=arm, **counts)
        if not plan.appends and not plan.summary and not plan.ledger:
            return Rewrite(session=key, arm=arm, **counts)
        body = serialise(wire.splice(request.payload, plan, rules.placement))
        if might_hold_long_integers(body, request.body):  # see `exact_numbers`
            body = exact_numbers(request, plan, rules)
        fresh = min(plan.fresh, plan.injected)
        reapplied = plan.injected - fresh
        added = added_tokens(plan, conv.model)
        return Rewrite(body, fresh, reapplied, session=key, arm=arm, tokens=added, **counts)

    def learn(self, rewrite: Rewrite, reply: Reply) -> None:
        """A relayed response was read (after its last byte went out): store its calls and
        usage in the session, in the background; count usage and cost in the metrics."""
        if not rewrite.session:
            return
        key = rewrite.session
        task = asyncio.ensure_future(self._learn(rewrite, reply))
        self.learning[key] = task
        task.add_done_callback(lambda done: self._learned(key, done))

    async def drain(self, timeout: float = 2.0) -> None:
        """Wait (bounded) for replies still being stored: the app's shutdown calls it before
        the store closes."""
        await asyncio.sleep(0)  # a reply read on this turn of the loop starts its task
        if self.learning:
            await asyncio.wait(list(self.learning.values()), timeout=timeout)

    def _learned(self, key: str, task: asyncio.Task[None]) -> None:
        if self.learning.get(key) is task:
            del self.learning[key]

    async def _learn(self, rewrite: Rewrite, reply: Reply) -> None:
        try:
            if self.prices.table is None:
                await asyncio.shield(self._load_prices() or asyncio.to_thread(self.prices.load))
            price = self.prices.find(reply.model or rewrite.model) if reply.usage else None
            cost = price.cost(reply.input, reply.cached, reply.output) if price else None
            streak = rewrite.streak
            arm, label = rewrite.arm or "none", "yes" if streak else "no"
            for kind in ("input", "cached", "output"):
                self.metrics.usage_tokens.labels(kind, arm, label).inc(getattr(reply, kind))
            self.metrics.usage_tokens.labels("added", arm, label).inc(rewrite.tokens)
            if cost is not None:
                self.metrics.cost.labels(arm, label).inc(cost)
            await self.store.update(
                rewrite.session, lambda state: learn(state, reply, streak, rewrite.tokens, cost)
            )
        except Exception as exc:  # the response side never affects the relay or a request
            self.metrics.reply_failures.inc()
            log.debug("reply not stored: %s: %s", type(exc).__name__, exc)

    async def _session(
        self, request: ChatRequest, conv: Conversation, rules: Rules, now: float
    ) -> tuple[str, str]:
        """The session key and name: a named session (path, header, body), else the
        conversation a fingerprint belongs to (linked across compaction; its own key if the
        store fails)."""
        tenant = tenant_of(request.headers, self.settings.session_salt)
        hint = request.wire.session_hint(request.headers, request.payload)
        raw = session_id(
            request.headers, request.payload, rules.sessions, conv.thread, hint, request.session
        )
        name = display_name(raw, conv.first_user)
        if raw.startswith(FINGERPRINT):
            try:
                return await self.continuity.key(tenant, conv, rules, now), name
            except Exception as exc:  # an outage here is met again (and counted) by _update
                log.debug("continuity unavailable: %s", exc)
        return scoped(tenant, raw), name

    async def _update(self, key: str, apply: Any, heavy: bool = False) -> Plan:
        """Run the tracker against the store; if the store is down, against an empty state
        (stateless recovery from what the conversation shows)."""
        try:
            plan: Plan = await self.store.update(key, apply, heavy)
        except TrackerError:
            raise
        except Exception as exc:
            if not self.store_down:
                self.store_down = True
                self.metrics.store_outages.inc()
                log.error("session store unavailable, degrading to stateless recovery: %s", exc)
            return apply(SessionState())
        if self.store_down:
            self.store_down = False
            log.warning("session store reachable again")
        return plan

    def _budget_numbers(
        self, request: ChatRequest, model: str, rules: Rules
    ) -> tuple[int, int, bool]:
        """(request cap, window headroom, escalations only) for this request."""
        return budget_numbers(
            len(request.body), request.payload, request.wire, model, rules, self.settings
        )

    def _count(self, plan: Plan, control: bool = False) -> None:
        """Metrics for one plan. A control session counts what was observed only: nothing was
        injected or escalated (no block, no webhook: either could change what the agent does)."""
        for category in plan.new_failures:
            self.metrics.failures_seen.labels(category).inc()
        if plan.compaction:
            self.metrics.compactions.inc()
        if control:
            return
        if plan.escalations:
            action = self.rules.current.escalation.action
            self.metrics.escalations.labels(action).inc(plan.escalations)
        if plan.appends:
            self.metrics.injections.labels("block").inc(len(plan.appends))
        if plan.summary:
            self.metrics.injections.labels("summary").inc()


def budget_numbers(
    size: int,
    payload: dict[str, Any],
    wire: WireFormat,
    model: str,
    rules: Rules,
    settings: Settings | None = None,
) -> tuple[int, int, bool]:
    """(request cap, window headroom, escalations only) for a body of `size` bytes."""
    th = rules.thresholds
    window = tokens.context_window(model, settings.context_window if settings else None)
    used = size // tokens.CHARS_PER_TOKEN
    near = th.near_window * window
    if 0.8 * near < used < 1.25 * near:  # close to the line: count exactly (slow on big bodies)
        used = wire.count_tokens(payload, model)
    headroom = max(0, window - used)
    return th.request_tokens, headroom, used > th.near_window * window


# An integer orjson cannot hold (over 64 bits) is read as a float and would be written back as
# `1.2345678901234568e+28`. Such bodies are parsed and written again by the standard library,
# exactly. Finding them must cost nothing on the others: a "+" in the output (memchr, ~4 us for
# 430 KB), only then an "e+" (~0.4 ms) and a 20-digit run in the input (RE2, ~0.8 ms).
LONG_INTEGER = re2.compile(rb"[0-9]{20}")


def might_hold_long_integers(rewritten: bytes, original: bytes) -> bool:
    """Whether `original` had an integer over 64 bits that orjson turned into a float."""
    return b"+" in rewritten and b"e+" in rewritten and bool(LONG_INTEGER.search(original))


def exact_numbers(request: ChatRequest, plan: Plan, rules: Rules) -> bytes:
    """The rewritten body with every number of the request written as it was sent."""
    payload = json.loads(request.body)
    spliced = request.wire.splice(payload, plan, rules.placement)
    return json.dumps(spliced, ensure_ascii=False, separators=(",", ":")).encode()


def serialise(payload: dict[str, Any]) -> bytes:
    """The rewritten body. orjson stops at 255 levels of nesting; the standard library goes
    on (slower, only for such bodies), so a deeply nested request still gets its recovery."""
    try:
        return orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def added_tokens(plan: Plan, model: str) -> int:
    """Estimated tokens of the texts a plan adds to the request (counts the tracker has
    mostly cached already: each text is rendered once and re-applied as is)."""
    texts = [*plan.appends.values(), plan.summary, plan.ledger]
    return sum(tokens.count(text, model) for text in texts)


def tokens_for(model: str) -> Any:
    return lambda text: tokens.count(text, model)


@dataclass(frozen=True, slots=True)
class Parts:
    """What a pipeline works with: opened once (by the app's lifespan), closed with it."""

    rules: RulesHolder
    store: Store
    webhooks: Webhooks


async def open_parts(
    settings: Settings, metrics: Metrics, stack: AsyncExitStack, loaded: Rules | None = None
) -> Parts:
    """The rules (hot reloaded; `loaded` if start-up has read them), the session store and
    the webhook sender, each closed by `stack`."""
    rules = RulesHolder(settings.rules, metrics, settings.extra_rules, loaded)
    if settings.hot_reload:
        rules.start()
        stack.push_async_callback(rules.stop)
    store = await open_store(settings)
    stack.push_async_callback(store.close)
    webhooks = Webhooks()
    stack.push_async_callback(webhooks.close)
    return Parts(rules, store, webhooks)


def build_pipeline(settings: Settings, metrics: Metrics, parts: Parts) -> RecoveryPipeline:
    """The app's default rewriter: the recovery pipeline over `parts`."""
    return RecoveryPipeline(settings, parts.rules, parts.store, metrics, parts.webhooks)


async def open_pipeline(
    settings: Settings, metrics: Metrics, stack: AsyncExitStack
) -> RecoveryPipeline:
    """A recovery pipeline with parts of its own, closed by `stack` (benchmarks, embedders)."""
    return build_pipeline(settings, metrics, await open_parts(settings, metrics, stack))
