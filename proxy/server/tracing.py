"""OpenTelemetry spans for the requests on rewritten routes (the `otel` extra).

Off unless the standard variables ask for traces: an OTLP endpoint
(`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER`
(`otlp`, `console`); never with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Off,
opentelemetry is not even imported and a request pays one `is None` test. On, the SDK's
exporter, sampler, batch processor, resource and propagators read their own `OTEL_*`
variables; `service.name` defaults to `recovery-proxy`. A tracer provider the process already
has (`opentelemetry-instrument`) is used as it is.

One span per request, from its arrival to its forwarding (the span lasts the proxy's own
overhead), child of the agent's span when the request carries a W3C `traceparent`. It is made
after the answer has been relayed, so it never delays one. Its attributes are counts, names
and versions, never tool text, bodies or credentials. Any error here drops the span and logs
one line (fail-open).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from recovery_proxy.rewrite import Rewrite
from recovery_proxy.session.keys import FINGERPRINT_NAME

log = logging.getLogger("recovery_proxy")

SPAN_NAME = "recovery_proxy.rewrite"
SERVICE_NAME = "recovery-proxy"
EXPORTERS = ("otlp", "console")
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
MISSING_EXTRA = (
    "tracing off: the OTEL_* variables ask for traces but the otel extra is not installed "
    "(pip install 'recovery-proxy[otel]')"
)


def exporters(environ: Mapping[str, str]) -> list[str]:
    """The span exporters the environment asks for; [] when tracing is off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    chosen = environ.get("OTEL_TRACES_EXPORTER", "")
    names = [name.strip().lower() for name in chosen.split(",") if name.strip()]
    if not names:
        return ["otlp"] if any(environ.get(name, "").strip() for name in ENDPOINTS) else []
    return [] if "none" in names else names


def problem(names: list[str], environ: Mapping[str, str]) -> str | None:
    """Why the requested tracing cannot run (an exporter or protocol not shipped), or None."""
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        return f"OTEL_TRACES_EXPORTER={','.join(names)}: only otlp and console are supported"
    protocol = next((environ[name].strip() for name in PROTOCOLS if environ.get(name)), "")
    if "otlp" in names and protocol not in ("", "http/protobuf"):
        return f"OTLP protocol {protocol!r}: only http/protobuf is supported"
    return None


def attributes(wire: str, rewrite: Rewrite, overhead: float | None) -> dict[str, Any]:
    """A request's span attributes: what the proxy decided, in counts and names."""
    out: dict[str, Any] = {
        "recovery_proxy.wire_format": wire,
        "recovery_proxy.tool_results": rewrite.results,
        "recovery_proxy.failures": rewrite.failures,
        "recovery_proxy.blocks.injected": rewrite.injected,
        "recovery_proxy.blocks.reapplied": rewrite.reapplied,
        "recovery_proxy.tokens_added": rewrite.tokens,
        "recovery_proxy.rewritten": rewrite.body is not None,
    }
    if rewrite.categories:
        out["recovery_proxy.failure.categories"] = sorted(set(rewrite.categories))
    if rewrite.session:
        out["recovery_proxy.session.key"] = rewrite.session
    if rewrite.name:
        # a fingerprinted session's name quotes its first user line: conversation text
        named = not rewrite.name.startswith(FINGERPRINT_NAME)
        out["recovery_proxy.session.named"] = named
        if named:
            out["recovery_proxy.session.name"] = rewrite.name
            out["gen_ai.conversation.id"] = rewrite.name
    if rewrite.rules:
        out["recovery_proxy.rules.version"] = rewrite.rules
    if rewrite.arm:
        out["recovery_proxy.arm"] = rewrite.arm
    if rewrite.reject is not None:
        out["recovery_proxy.refused"] = True  # answered 409 by the `block` escalation
    if overhead is not None:
        out["recovery_proxy.overhead_ms"] = round(overhead * 1000, 3)
    return out


class Tracing:
    """Makes the spans, with a tracer from `start_tracing`; `close()` flushes them."""

    def __init__(
        self,
        tracer: Any,
        extract: Callable[[Mapping[str, str]], Any],
        fields: frozenset[str],
        provider: Any = None,
    ) -> None:
        self.tracer = tracer
        self.extract = extract
        self.fields = frozenset(name.lower().encode("latin-1") for name in fields)
        self.provider = provider  # ours to shut down (None: the process's own provider)
        self.failed = False

    def record(
        self,
        raw_headers: list[tuple[bytes, bytes]],
        wire: str,
        rewrite: Rewrite,
        started: float,
        overhead: float | None,
    ) -> None:
        """One span for a request that arrived at `started` (`perf_counter()`) and went
        upstream `overhead` seconds later (None: it did not, it ends now)."""
        try:
            now, clock = time.perf_counter(), time.time_ns()
            end = started + overhead if overhead is not None else now
            carrier = {
                name.decode("latin-1"): value.decode("latin-1")
                for name, value in raw_headers
                if name in self.fields
            }
            span = self.tracer.start_span(
                SPAN_NAME,
                context=self.extract(carrier),
                attributes=attributes(wire, rewrite, overhead),
                start_time=clock - round((now - started) * 1e9),
            )
            span.end(end_time=clock - round((now - end) * 1e9))
        except Exception as exc:  # tracing must never break a request
            if not self.failed:
                self.failed = True
                log.warning("tracing: span dropped: %s: %s", type(exc).__name__, exc)

    async def close(self) -> None:
        """Export what is still batched (in a thread: the exporter blocks) and stop."""
        if self.provider is not None:
            await asyncio.to_thread(self.provider.shutdown)


def start_tracing(environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """Tracing as the environment asks, or None (off; a one-line warning if it asked for
    something that cannot run)."""
    names = exporters(environ)
    if not names:
        return None
    reason = problem(names, environ)
    if reason is not None:
        log.warning("tracing off: %s", reason)
        return None
    try:
        tracing = _open(names)
    except ImportError:
        log.warning(MISSING_EXTRA)
        return None
    except Exception as exc:  # a bad variable the SDK refuses: run without traces
        log.warning("tracing off: %s: %s", type(exc).__name__, exc)
        return None
    log.info("tracing on: a span per rewritten request (%s)", ", ".join(names))
    return tracing


def _open(names: list[str]) -> Tracing:
    """The tracer: the process's provider if it has one, else one of ours exporting to
    `names` (each through a batch processor)."""
    from opentelemetry import propagate, trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    made: dict[str, Callable[[], SpanExporter]] = {"console": ConsoleSpanExporter}
    if "otlp" in names:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        made["otlp"] = OTLPSpanExporter
    ours: TracerProvider | None = None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):  # nobody configured one
        resource = Resource.create()
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
        ours = TracerProvider(resource=resource, shutdown_on_exit=False)
        for name in names:
            ours.add_span_processor(BatchSpanProcessor(made[name]()))
        provider = ours
    tracer = provider.get_tracer("recovery_proxy", _version())
    fields = frozenset(propagate.get_global_textmap().fields)
    return Tracing(tracer, propagate.extract, fields, ours)


def _version() -> str | None:
    """This package's version, for the instrumentation scope (None from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("recovery-proxy")
    except PackageNotFoundError:
        return None
