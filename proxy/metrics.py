"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    """The proxy's counters; `render()` gives the text exposition format."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "recovery_proxy_requests", "Requests handled", ["route"], registry=r
        )
        self.upstream_errors = Counter(
            "recovery_proxy_upstream_errors",
            "Upstream unreachable or timed out",
            ["kind"],
            registry=r,
        )
        self.rewrite_failures = Counter(
            "recovery_proxy_rewrite_failures",
            "Rewrites that raised and were forwarded unchanged (fail-open)",
            registry=r,
        )
        self.injections = Counter(
            "recovery_proxy_injections", "Blocks and notices spliced in", ["kind"], registry=r
        )
        self.failures_seen = Counter(
            "recovery_proxy_tool_failures",
            "Failed tool results first seen",
            ["category"],
            registry=r,
        )
        self.compactions = Counter("recovery_proxy_compactions", "Compactions detected", registry=r)
        self.escalations = Counter(
            "recovery_proxy_escalations", "Escalations fired", ["action"], registry=r
        )
        self.store_outages = Counter(
            "recovery_proxy_store_outages", "Times the session store became unreachable", registry=r
        )
        self.rules_reloads = Counter(
            "recovery_proxy_rules_reloads", "Rules reloads", ["result"], registry=r
        )
        self.rules_info = Gauge(
            "recovery_proxy_rules_info", "Active rules version", ["version"], registry=r
        )
        self.overhead = Histogram(
            "recovery_proxy_overhead_seconds",
            "Time the proxy added to a request (arrival to forwarding), by route",
            ["route"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5),
            registry=r,
        )

        # The response side (issue 25): replies read off the critical path, usage, cost.
        self.reply_failures = Counter(
            "recovery_proxy_reply_read_failures",
            "Relayed responses that could not be read (the relay is never affected)",
            registry=r,
        )
        self.usage_tokens = Counter(
            "recovery_proxy_usage_tokens",
            "Tokens providers reported (input, cached, output) and tokens the proxy added "
            "(added), by A/B arm and whether the request was inside a failure streak",
            ["kind", "arm", "streak"],
            registry=r,
        )
        self.cost = Counter(
            "recovery_proxy_cost_usd",
            "Estimated provider cost of responses with a known price, in USD",
            ["arm", "streak"],
            registry=r,
        )

        # Session outcomes (issue 28), as harnesses and operators report them over HTTP.
        self.outcomes = Counter(
            "recovery_proxy_outcomes",
            "Session outcomes reported over HTTP, by A/B arm and outcome (every report: a "
            "session reported twice counts twice here, once in the report)",
            ["arm", "outcome"],
            registry=r,
        )

    def set_rules_version(self, version: str) -> None:
        """Expose the active rules content hash as a label."""
        self.rules_info.clear()
        self.rules_info.labels(version=version).set(1)

    def render(self) -> bytes:
        return generate_latest(self.registry)
