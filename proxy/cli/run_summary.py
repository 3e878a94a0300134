"""What `recovery-proxy run` prints at the end: a tally of what its proxy did (rewrites
counted as they happen, counters from the app's metrics, the session's stats in the store,
less what the session held before this run touched it)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recovery_proxy.config import Settings
from recovery_proxy.core.reply import Reply
from recovery_proxy.core.state import SessionState
from recovery_proxy.metrics import Metrics
from recovery_proxy.pipeline import Parts
from recovery_proxy.rewrite import ChatRequest, Rewrite, Rewriter
from recovery_proxy.session.keys import named, scoped, tenant_of
from recovery_proxy.store import Store

log = logging.getLogger("recovery_proxy")


@dataclass
class Baseline:
    """A session's counters before this run first touched it."""

    results: int = 0
    loop_notices: int = 0
    seen: int = 0

    @classmethod
    def of(cls, state: SessionState | None) -> Baseline:
        if state is None:
            return cls()
        return cls(state.stats.results, state.stats.loop_notices, len(state.seen))


@dataclass
class Tally:
    """The rewrites this run's proxy returned, and the sessions they belonged to."""

    requests: int = 0
    rewritten: int = 0
    injected: int = 0
    reapplied: int = 0
    refused: int = 0
    baselines: dict[str, Baseline | None] = field(default_factory=dict)  # None: unknown
    store: Store | None = None  # the app's store, once its lifespan has opened it
    loop: asyncio.AbstractEventLoop | None = None  # the proxy's event loop
    metrics: Metrics | None = None


class CountingRewriter:
    """Wraps the recovery pipeline: counts what each rewrite did. Never raises for counting."""

    def __init__(self, inner: Rewriter, tally: Tally, salt: str) -> None:
        self.inner = inner
        self.tally = tally
        self.salt = salt

    async def __call__(self, request: ChatRequest) -> Rewrite:
        tally = self.tally
        tally.requests += 1  # before the rewrite: one that fails open still counts
        if request.session is not None:  # the key the pipeline gives a path-named session
            expected = scoped(tenant_of(request.headers, self.salt), named(request.session))
            if expected not in tally.baselines:
                tally.baselines[expected] = await self._baseline(expected)
        rewrite = await self.inner(request)
        tally.rewritten += rewrite.body is not None
        tally.injected += rewrite.injected
        tally.reapplied += rewrite.reapplied
        tally.refused += rewrite.reject is not None
        if rewrite.session and rewrite.session not in tally.baselines:
            tally.baselines[rewrite.session] = None  # not the key expected: no baseline
        return rewrite

    def learn(self, rewrite: Rewrite, reply: Reply) -> None:
        """The pipeline's response side (its `learn`), passed through."""
        learn = getattr(self.inner, "learn", None)
        if learn is not None:
            learn(rewrite, reply)

    async def drain(self) -> None:
        drain = getattr(self.inner, "drain", None)
        if drain is not None:
            await drain()

    async def _baseline(self, key: str) -> Baseline | None:
        try:
            return Baseline.of(await self.tally.store.get(key))
        except Exception:  # a store outage: the pipeline counts and logs it
            return None


def counting_factory(tally: Tally) -> Callable[..., Any]:
    """A rewriter factory for `create_app`: the default pipeline inside a `CountingRewriter`."""
    from recovery_proxy.pipeline import build_pipeline

    def factory(settings: Settings, metrics: Metrics, parts: Parts) -> Rewriter:
        inner = build_pipeline(settings, metrics, parts)
        tally.store = parts.store
        tally.loop = asyncio.get_running_loop()
        tally.metrics = metrics
        return CountingRewriter(inner, tally, settings.session_salt)

    return factory


@dataclass
class Summary:
    """The numbers printed at the end of a run."""

    session: str
    keys: list[str]
    requests: int
    rewritten: int
    injected: int
    reapplied: int
    refused: int
    failures: dict[str, int]
    escalations: int
    compactions: int
    results: int | None  # None: the store could not say
    loop_notices: int | None
    upstream_errors: dict[str, int] = field(default_factory=dict)  # kind -> count
    usage: Usage | None = None  # what the provider reported in the responses read
    given: list[str] = field(default_factory=list)  # what pointed the agent at the proxy

    def render(self) -> str:
        failed = sum(self.failures.values())
        by_category = ", ".join(f"{name} {n}" for name, n in sorted(self.failures.items()))
        unknown = "?"
        lines = [
            f"recovery-proxy: session {self.session}"
            + (f" (key {', '.join(self.keys)})" if self.keys else " (no requests)"),
            f"  model requests {self.requests}, rewritten {self.rewritten}"
            + (f", refused by escalation {self.refused}" if self.refused else ""),
            f"  tool results seen {unknown if self.results is None else self.results}, "
            f"failures {failed}" + (f" ({by_category})" if by_category else ""),
            f"  blocks injected {self.injected}, re-applied {self.reapplied}",
            f"  repeat and loop notices "
            f"{unknown if self.loop_notices is None else self.loop_notices}, "
            f"escalations {self.escalations}, compactions {self.compactions}",
        ]
        if self.usage is not None and self.usage.tokens:
            lines.append(self.usage.render())
        if self.upstream_errors:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.upstream_errors.items()))
            lines.append(f"  upstream errors {sum(self.upstream_errors.values())} ({kinds})")
        if not self.requests:
            lines.append(NO_REQUESTS)
            if self.given:
                lines.append(f"  it was given {', '.join(self.given)} and never used them")
        return "\n".join(lines)


@dataclass
class Usage:
    """Tokens in the responses this run's proxy read, and what they cost where priced."""

    tokens: int = 0  # input + output, as the provider reported them
    streak: int = 0  # of those, in responses to requests inside a failure streak
    added: int = 0  # tokens of the proxy's own texts in the requests
    cost: float = 0.0
    streak_cost: float = 0.0

    def render(self) -> str:
        share = f" ({self.streak / self.tokens:.0%})" if self.tokens else ""
        line = f"  tokens {self.tokens:,}, in failure streaks {self.streak:,}{share}"
        line += f", added by the proxy {self.added:,}"
        if self.cost:
            line += f"; cost ${self.cost:.4f}, in failure streaks ${self.streak_cost:.4f}"
        return line


def usage_of(metrics: Metrics) -> Usage:
    """This process's usage counters (a run's proxy lives as long as the run)."""
    usage = Usage()
    for metric in metrics.registry.collect():
        for sample in metric.samples:
            labels = sample.labels
            streak = labels.get("streak") == "yes"
            if sample.name == "recovery_proxy_usage_tokens_total":
                value = int(sample.value)
                if labels.get("kind") in ("input", "output"):
                    usage.tokens += value
                    usage.streak += value if streak else 0
                elif labels.get("kind") == "added":
                    usage.added += value
            elif sample.name == "recovery_proxy_cost_usd_total":
                usage.cost += sample.value
                usage.streak_cost += sample.value if streak else 0.0
    return usage


NO_REQUESTS = (
    "  the agent sent nothing through the proxy: check that it reads OPENAI_BASE_URL,\n"
    "  ANTHROPIC_BASE_URL or GOOGLE_GEMINI_BASE_URL (Codex takes -c openai_base_url=URL or a\n"
    "  config.toml provider; an agent with a base URL in its own config ignores them)"
)


def _samples(metrics: Metrics, family: str) -> dict[str, float]:
    """A counter family's values by its (single) label value ("" for an unlabelled one)."""
    values: dict[str, float] = {}
    for metric in metrics.registry.collect():
        if metric.name != family:
            continue
        for sample in metric.samples:
            if sample.name == f"{family}_total":
                label = next(iter(sample.labels.values()), "")
                values[label] = values.get(label, 0.0) + sample.value
    return values


async def _session_counts(tally: Tally) -> tuple[int | None, int | None]:
    """Tool results and loop notices of this run, from the sessions' stats in the store."""
    results = notices = 0
    for key, baseline in tally.baselines.items():
        try:
            state = await tally.store.get(key)
        except Exception:
            return None, None
        now = Baseline.of(state)
        before = baseline or Baseline()
        judged = now.results - before.results
        results += judged if judged > 0 else max(0, now.seen - before.seen)
        notices += max(0, now.loop_notices - before.loop_notices)
    return results, notices


def summarise(tally: Tally, session: str, given: list[str] | None = None) -> Summary:
    """Read the counters; the store is read on the proxy's own loop (it is still running).
    `given`: the variables and switches that pointed the agent at the proxy."""
    results: int | None = None
    notices: int | None = None
    if tally.store is not None and tally.loop is not None and tally.baselines:
        future = asyncio.run_coroutine_threadsafe(_session_counts(tally), tally.loop)
        try:
            results, notices = future.result(timeout=10)
        except Exception as exc:  # the summary must never hide the child's exit code
            log.warning("could not read the session for the summary: %s", exc)
    elif not tally.baselines:
        results = notices = 0
    failures: dict[str, float] = {}
    upstream: dict[str, float] = {}
    escalations = compactions = 0.0
    usage = None
    if tally.metrics is not None:
        usage = usage_of(tally.metrics)
        failures = _samples(tally.metrics, "recovery_proxy_tool_failures")
        upstream = _samples(tally.metrics, "recovery_proxy_upstream_errors")
        escalations = sum(_samples(tally.metrics, "recovery_proxy_escalations").values())
        compactions = sum(_samples(tally.metrics, "recovery_proxy_compactions").values())
    return Summary(
        session=session,
        keys=list(tally.baselines),
        requests=tally.requests,
        rewritten=tally.rewritten,
        injected=tally.injected,
        reapplied=tally.reapplied,
        refused=tally.refused,
        failures={name: int(n) for name, n in failures.items() if n},
        escalations=int(escalations),
        compactions=int(compactions),
        results=results,
        loop_notices=notices,
        upstream_errors={kind: int(n) for kind, n in upstream.items() if n},
        usage=usage,
        given=list(given or []),
    )
