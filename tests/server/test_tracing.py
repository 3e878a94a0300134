"""OpenTelemetry spans: `recovery-proxy serve` as a process, an OTLP/HTTP receiver on
127.0.0.1 decoding what the SDK's exporter sends, and a mock provider. One span per request on a
rewritten route, in the agent's trace, with the proxy's decisions and never the conversation;
nothing (not even an import) unless the standard variables ask; one warning line when they
ask for what cannot run."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from recovery_proxy import tokens
from recovery_proxy.rewrite import Rewrite
from recovery_proxy.server.background import free_port
from recovery_proxy.server.tracing import SPAN_NAME, Tracing, attributes, exporters, problem
from tests.conftest import UPSTREAM
from tests.upstream import upstream_mock

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-otel-secret-key-123"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
ERROR = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
USER_LINE = "Read the secret plans in src/config.ts"
FINGERPRINT_LINE = "Summarise the private roadmap"
# Runs `recovery-proxy serve`; at exit it prints which opentelemetry modules were imported.
SERVE = """
import atexit, json, sys
{prelude}
def loaded() -> None:
    names = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    print("otel modules: " + json.dumps(names), file=sys.stderr)
atexit.register(loaded)
from recovery_proxy.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
NO_SDK = "sys.modules['opentelemetry.sdk'] = None  # as if the otel extra were not installed"


@dataclass
class Collector:
    """An OTLP/HTTP trace receiver: keeps each request's path and protobuf body."""

    received: list[tuple[str, bytes]] = field(default_factory=list)

    @property
    def spans(self) -> list[tuple[dict[str, Any], Span]]:
        """(resource attributes, span) of everything received, oldest span first."""
        out = []
        for _, body in self.received:
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = as_dict(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    out += [(resource, span) for span in scope_spans.spans]
        return sorted(out, key=lambda pair: pair[1].start_time_unix_nano)

    @property
    def raw(self) -> bytes:
        return b"".join(body for _, body in self.received)


@contextmanager
def collector() -> Iterator[tuple[Collector, str]]:
    """A running receiver and its base URL (what `OTEL_EXPORTER_OTLP_ENDPOINT` takes)."""
    kept = Collector()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            kept.received.append((self.path, body))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield kept, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def as_dict(pairs: Any) -> dict[str, Any]:
    return {pair.key: value(pair.value) for pair in pairs}


@dataclass
class Served:
    """A finished `serve` process: its stderr lines and the opentelemetry modules it loaded."""

    lines: list[str]
    modules: list[str]


@contextmanager
def serve(env: dict[str, str], prelude: str = "") -> Iterator[tuple[str, Served]]:
    """`recovery-proxy serve` with `env` over a clean environment (no OTEL_* of ours);
    yields its URL; `Served` is filled in once it has stopped (SIGINT)."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RECOVERY_PROXY_", "OTEL_"))}
    clean |= {
        "RECOVERY_PROXY_UPSTREAM": UPSTREAM,
        "RECOVERY_PROXY_HOT_RELOAD": "false",
        "OTEL_BSP_SCHEDULE_DELAY": "60000",  # spans leave at shutdown: the flush is tested
        **env,
    }
    code = SERVE.format(prelude=prelude)
    args = [sys.executable, "-c", code, "serve", "--port", str(port), "--store", "memory"]
    proc = subprocess.Popen(
        args, cwd=REPO, env=clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    served = Served([], [])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", served
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        lines = err.splitlines()
        marker = [line for line in lines if line.startswith("otel modules: ")]
        served.lines = [line for line in lines if not line.startswith("otel modules: ")]
        served.modules = json.loads(marker[-1].removeprefix("otel modules: ")) if marker else []


def conversation(user: str, *turns: tuple[str, str]) -> list[dict[str, Any]]:
    """A chat transcript: a system prompt, `user`, then one tool call per (path, result)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": user},
    ]
    for n, (path, result) in enumerate(turns):
        call = {"name": "read_file", "arguments": json.dumps({"path": path})}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{n}", "type": "function", "function": call}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": result})
    return messages


def post(url: str, messages: list[dict[str, Any]], **headers: str) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": messages}
    headers = {"Authorization": f"Bearer {SECRET}", **headers}
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response


def test_each_rewritten_request_is_a_span_in_the_agents_trace() -> None:
    first_turn = conversation(USER_LINE, ("src/config.ts", ERROR))
    second_turn = conversation(USER_LINE, ("src/config.ts", ERROR), ("README.md", "# app"))
    with (
        collector() as (received, endpoint),
        upstream_mock() as mock,
        serve({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}) as (url, served),
    ):
        route = mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={"choices": []})
        named = f"{url}/s/otel-run/v1/chat/completions"
        trace = {"traceparent": TRACEPARENT, "tracestate": "agent=1"}
        first = post(named, first_turn, **trace)
        second = post(named, second_turn, **trace)
        third = post(f"{url}/v1/chat/completions", conversation(FINGERPRINT_LINE))
        assert received.received == []  # batched: they leave at shutdown, flushed
    forwarded = [call.request for call in route.calls]
    assert [r.headers["traceparent"] for r in forwarded[:2]] == [TRACEPARENT] * 2
    assert [r.headers["tracestate"] for r in forwarded[:2]] == ["agent=1"] * 2
    assert "traceparent" not in forwarded[2].headers  # the proxy adds no header of its own
    assert {path for path, _ in received.received} == {"/v1/traces"}
    told = [line for line in served.lines if "tracing" in line]
    assert len(told) == 1 and told[0].endswith("tracing on: a span per rewritten request (otlp)")

    spans = received.spans
    assert len(spans) == 3
    resource, span = spans[0]
    assert resource["service.name"] == "recovery-proxy"
    assert [s.name for _, s in spans] == ["recovery_proxy.rewrite"] * 3
    assert span.kind == Span.SpanKind.SPAN_KIND_INTERNAL
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == PARENT_ID
    assert spans[1][1].trace_id.hex() == TRACE_ID
    assert spans[2][1].parent_span_id == b""  # no traceparent: a trace of its own

    block = json.loads(forwarded[0].content)["messages"][3]["content"].removeprefix(ERROR + "\n\n")
    attrs = as_dict(span.attributes)
    overhead = attrs.pop("recovery_proxy.overhead_ms")
    assert attrs.pop("recovery_proxy.rules.version")
    assert attrs == {
        "recovery_proxy.wire_format": "openai_chat",
        "recovery_proxy.session.key": first.headers["x-recovery-proxy-session"],
        "recovery_proxy.session.named": True,
        "recovery_proxy.session.name": "otel-run",
        "gen_ai.conversation.id": "otel-run",
        "recovery_proxy.tool_results": 1,
        "recovery_proxy.failures": 1,
        "recovery_proxy.failure.categories": ["not_found"],
        "recovery_proxy.blocks.injected": 1,
        "recovery_proxy.blocks.reapplied": 0,
        "recovery_proxy.tokens_added": tokens.count(block, "gpt-4o-mini"),
        "recovery_proxy.rewritten": True,
    }
    assert abs(overhead - float(first.headers["x-recovery-proxy-overhead-ms"])) < 0.002
    lasted = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
    assert abs(lasted - overhead) < 0.01  # the span lasts the proxy's own time

    again = as_dict(spans[1][1].attributes)
    assert (again["recovery_proxy.failures"], again["recovery_proxy.tool_results"]) == (0, 2)
    assert again["recovery_proxy.blocks.injected"] == 0
    assert again["recovery_proxy.blocks.reapplied"] == 1
    assert again["recovery_proxy.tokens_added"] == attrs["recovery_proxy.tokens_added"]
    assert again["recovery_proxy.session.key"] == second.headers["x-recovery-proxy-session"]

    unnamed = as_dict(spans[2][1].attributes)
    assert unnamed["recovery_proxy.session.named"] is False
    assert "recovery_proxy.session.name" not in unnamed and "gen_ai.conversation.id" not in unnamed
    assert unnamed["recovery_proxy.session.key"] == third.headers["x-recovery-proxy-session"]
    assert unnamed["recovery_proxy.rewritten"] is False

    for private in (SECRET, "ENOENT", "secret plans", "private roadmap", "coding agent"):
        assert private.encode() not in received.raw, private


@pytest.mark.parametrize(
    "asks",
    [
        {},
        {"OTEL_SDK_DISABLED": "true"},
        {"OTEL_TRACES_EXPORTER": "none"},
    ],
    ids=["unset", "sdk-disabled", "exporter-none"],
)
def test_unless_the_variables_ask_no_span_and_no_opentelemetry_import(
    asks: dict[str, str],
) -> None:
    with collector() as (received, endpoint), upstream_mock() as mock:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **asks} if asks else {}
        with serve(env) as (url, served):
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={"choices": []})
            turn = conversation(USER_LINE, ("src/config.ts", ERROR))
            response = post(f"{url}/v1/chat/completions", turn, traceparent=TRACEPARENT)
            assert response.headers["x-recovery-proxy-injected"] == "1"
    assert received.received == []
    assert served.modules == []
    assert not [line for line in served.lines if "tracing" in line]


@pytest.mark.parametrize(
    ("prelude", "env", "warning"),
    [
        (
            NO_SDK,
            {},
            "tracing off: the OTEL_* variables ask for traces but the otel extra is not "
            "installed (pip install 'recovery-proxy[otel]')",
        ),
        (
            "",
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "tracing off: OTLP protocol 'grpc': only http/protobuf is supported",
        ),
    ],
    ids=["extra-missing", "grpc"],
)
def test_what_cannot_run_is_one_warning_line_and_the_proxy_runs(
    prelude: str, env: dict[str, str], warning: str
) -> None:
    with collector() as (received, endpoint), upstream_mock() as mock:
        asks = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **env}
        with serve(asks, prelude) as (url, served):
            mock.post(f"{UPSTREAM}/chat/completions").respond(200, json={"choices": []})
            turn = conversation(USER_LINE, ("src/config.ts", ERROR))
            response = post(f"{url}/v1/chat/completions", turn)
            assert response.headers["x-recovery-proxy-injected"] == "1"
    assert received.received == []
    told = [line for line in served.lines if "tracing" in line]
    assert len(told) == 1 and told[0].endswith(warning), served.lines


@pytest.mark.parametrize(
    ("env", "chosen"),
    [
        ({}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["console"]),
        ({"OTEL_TRACES_EXPORTER": "otlp, console"}, ["otlp", "console"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, []),
        ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, []),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, []),
    ],
)
def test_which_variables_turn_tracing_on(env: dict[str, str], chosen: list[str]) -> None:
    assert exporters(env) == chosen


def test_exporters_and_protocols_that_are_not_shipped_are_named() -> None:
    assert problem(["otlp"], {}) is None
    assert problem(["otlp"], {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}) is None
    assert problem(["zipkin"], {}) == (
        "OTEL_TRACES_EXPORTER=zipkin: only otlp and console are supported"
    )
    assert problem(["otlp"], {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}) == (
        "OTLP protocol 'http/json': only http/protobuf is supported"
    )
    assert problem(["console"], {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is None


def test_a_refused_request_and_an_experiment_arm_are_in_the_attributes() -> None:
    refused = Rewrite(reject="stop", session="t:s", arm="treatment", name="fingerprint: hi")
    attrs = attributes("anthropic_messages", refused, None)
    assert attrs["recovery_proxy.refused"] is True and attrs["recovery_proxy.arm"] == "treatment"
    assert attrs["recovery_proxy.session.named"] is False
    assert "recovery_proxy.overhead_ms" not in attrs  # not forwarded: answered by the proxy
    assert "hi" not in json.dumps(attrs)


def test_a_tracer_that_raises_drops_the_span_with_one_log_line(caplog) -> None:
    class Broken:
        def start_span(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("exporter exploded")

    tracing = Tracing(Broken(), lambda carrier: None, frozenset({"traceparent"}))
    for _ in range(3):
        tracing.record([(b"traceparent", TRACEPARENT.encode())], "gemini", Rewrite(), 0.0, 0.001)
    dropped = [r for r in caplog.records if "span dropped" in r.getMessage()]
    assert len(dropped) == 1
    assert dropped[0].getMessage() == "tracing: span dropped: RuntimeError: exporter exploded"


def test_the_readme_names_every_span_attribute_and_the_span() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Traces and dashboards", 1)[1].split("\n## ", 1)[0]
    first_column = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    named = set(re.findall(r"`((?:recovery_proxy|gen_ai)\.[a-z_.]+)`", "\n".join(first_column)))
    everything = Rewrite(
        b"{}", reject="r", arm="control", name="run", session="t:s", rules="v", categories=("x",)
    )
    assert named == set(attributes("openai_chat", everything, 0.001))
    assert f"`{SPAN_NAME}`" in section
