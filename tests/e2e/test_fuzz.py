"""Fuzzed bodies, headers and paths for every wire format: never a 500 of the proxy's own
making, and the proxy healthy afterwards. Bounded (a few hundred examples) so CI stays fast."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recovery_proxy.server.app import RecoveryProxy, create_app
from recovery_proxy.wire import FORMATS
from tests.conftest import bundled_rules, make_settings
from tests.upstream import upstream_mock

ROUTES = [(wire.name, path) for wire in FORMATS for path in wire.paths]
KEYS = [
    "role", "content", "tool_calls", "tool_call_id", "function", "name", "arguments", "id",
    "type", "call_id", "output", "input", "tool_use_id", "is_error", "text", "messages",
    "system", "instructions", "previous_response_id", "metadata", "functionCall",
    "functionResponse", "parts", "contents", "response", "model",
]  # fmt: skip
ROLES = ["user", "assistant", "tool", "system", "developer", "function", "model"]
TYPES = ["function_call", "function_call_output", "tool_use", "tool_result", "text", "message"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(ROLES + TYPES + ["Error: ENOENT: no such file", "Exit code: 1", "call_0", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    ),
    max_leaves=25,
)
item = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": st.one_of(st.text(max_size=12), values),
        "messages": st.one_of(st.lists(item, max_size=6), values),
        "input": st.one_of(st.lists(item, max_size=6), values),
        "system": values,
        "instructions": values,
        "tools": values,
        "stream": st.booleans(),
    },
)
header_values = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\x7f"),
    max_size=30,
)
segments = st.text(alphabet="abcXYZ019-_.~%:@!$&'()*+,;=", min_size=1, max_size=12)


def _is_error_shape(body: Any) -> bool:
    """OpenAI `{"error": {...}}` or Anthropic `{"type": "error", "error": {...}}`."""
    return isinstance(body, dict) and isinstance(body.get("error"), dict)


def _app() -> RecoveryProxy:
    """An app over the bundled rules, loaded once: each example opens its own."""
    return create_app(make_settings(), rules=bundled_rules())


def _run(app: RecoveryProxy, coro: Any) -> Any:
    async def with_lifespan() -> Any:
        async with app.lifespan():
            return await coro(app)

    return asyncio.run(with_lifespan())


fuzz = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(route=st.sampled_from(ROUTES), body=bodies, raw=st.booleans(), junk=st.binary(max_size=60))
def test_fuzzed_bodies_never_500(
    route: tuple[str, str], body: dict[str, Any], raw: bool, junk: bytes
) -> None:
    _, path = route
    content = junk if raw else orjson.dumps(body)

    async def go(app: RecoveryProxy) -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy.local") as client:
            response = await client.post(
                path, content=content, headers={"authorization": "Bearer sk-fuzz"}
            )
            assert response.status_code != 500, response.text
            if response.status_code in (400, 409, 413):
                assert _is_error_shape(response.json()), response.text
            assert (await client.get("/healthz")).status_code == 200

    with upstream_mock(assert_all_called=False) as mock:
        for _, route_path in ROUTES:
            mock.post(f"http://x{route_path}").mock(return_value=httpx.Response(200, json={}))
        _run(_app(), go)


@fuzz
@given(
    route=st.sampled_from(ROUTES),
    headers=st.dictionaries(
        st.sampled_from(
            ["x-session-id", "authorization", "x-api-key", "session-id", "x-custom", "metadata"]
        ),
        header_values,
        max_size=4,
    ),
    tail=st.lists(segments, max_size=4),
)
def test_fuzzed_headers_and_paths_never_500(
    route: tuple[str, str], headers: dict[str, str], tail: list[str]
) -> None:
    _, path = route
    encoded = [(k.encode(), v.encode("utf-8")) for k, v in headers.items()]
    encoded += [(b"x-latin1", "é".encode("latin-1"))] if "x-custom" in headers else []

    async def go(app: RecoveryProxy) -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy.local") as client:
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
            for target in (path, "/v1/" + "/".join(tail)):
                response = await client.request(
                    "POST", target, content=orjson.dumps(body), headers=encoded
                )
                assert response.status_code != 500, (target, response.text)
            assert (await client.get("/healthz")).status_code == 200

    with upstream_mock(assert_all_called=False):
        _run(_app(), go)
