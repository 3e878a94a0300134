"""`POST /v1/recovery/sessions/{session}/outcome`: a harness reports how its session ended
(issue 28). proxy/session/outcome.py says who may report which session, and how the write
stays exact; the admin API's `POST /admin/sessions/{key}/outcome` answers through `record`
here too.

The proxy answers `/v1/recovery/` itself, never relays it. `{session}` is the session's key
(`x-recovery-proxy-session`) or the id it was named by. The body is
`{"result": "succeeded" | "failed" | "abandoned", "score": 0..1, "note": "..."}` (score and
note optional). The answer is the outcome as stored, with the session's key, name and arm;
errors are `{"error": {"message", "type"}}` like the admin API's: 400 a body that is not a
JSON object, 401 no credential while `require_credential` is on, 404 no such session of this
credential (another tenant's is a 404 too), 405 not a POST, 413 a body over 16 KiB, 422 a
wrong field (named in the message), 503 the store is unavailable.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

import orjson

from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.server.asgi import (
    BodyTooLarge,
    Receive,
    Scope,
    Send,
    has_credential,
    length_and_encoding,
    read_body,
    send_error,
)
from recovery_proxy.server.state import ProxyState
from recovery_proxy.session.keys import tenant_of
from recovery_proxy.session.outcome import (
    BadReport,
    NotJson,
    UnknownSession,
    candidates,
    parse_report,
    record_outcome,
)
from recovery_proxy.wire.gemini import with_query_key

log = logging.getLogger("recovery_proxy")

PREFIX = "/v1/recovery/"
ROUTE = re.compile(r"/v1/recovery/sessions/(?P<session>.+)/outcome")
SHOWN = "POST /v1/recovery/sessions/{session}/outcome"
MAX_BODY = 16 * 1024
MAX_SESSION = 1024  # characters of a session id or key in the path
NO_STORE = [(b"cache-control", b"no-store")]
Answer = tuple[int, dict[str, Any]]


async def handle(proxy: ProxyState, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a request under `/v1/recovery/`."""
    status, body = await _answer(proxy, scope, receive)
    headers = [*NO_STORE, (b"allow", b"POST")] if status == 405 else NO_STORE
    await send_error(send, status, orjson.dumps(body), headers)


async def _answer(proxy: ProxyState, scope: Scope, receive: Receive) -> Answer:
    match = ROUTE.fullmatch(scope["path"])
    if match is None or len(match["session"]) > MAX_SESSION:
        return error(404, f"no such route: session outcomes are {SHOWN}", "not_found")
    if scope["method"] != "POST":
        return error(405, f"session outcomes are {SHOWN}", "method_not_allowed")
    if proxy.settings.require_credential and not has_credential(scope):
        message = "This proxy requires a credential (Authorization, x-api-key or api-key)."
        return error(401, message, "missing_credential")
    try:
        body = await read_body(receive, MAX_BODY, length_and_encoding(scope["headers"])[0])
    except BodyTooLarge:
        return error(413, f"an outcome report is at most {MAX_BODY} bytes", "request_too_large")
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    headers = with_query_key(headers, scope.get("query_string", b""))
    tenant = tenant_of(headers, proxy.settings.session_salt)
    return await record(proxy, candidates(tenant, match["session"]), body, "harness")


async def record(
    proxy: ProxyState, keys: list[str], body: bytes, by: Literal["harness", "operator"]
) -> Answer:
    """Record the outcome `body` reports in the first live session of `keys`: the answer."""
    try:
        report = parse_report(body)
    except NotJson as exc:
        return error(400, str(exc), "invalid_json")
    except BadReport as exc:
        return error(422, str(exc), "invalid_outcome")
    if proxy.store is None:
        return error(503, "the proxy is still starting", "unavailable")
    try:
        done = await record_outcome(proxy.store, keys, report, by)
    except UnknownSession:
        whose = "of this credential " if by == "harness" else ""
        return error(404, f"no such session {whose}(it may have expired)", "not_found")
    except Exception as exc:  # the store is down: say so, change nothing
        log.error("outcome not recorded: %s", type(exc).__name__)
        return error(503, "the session store is unavailable", "unavailable")
    fraction = proxy.settings.control_fraction
    arm = arm_of(done.key, fraction)
    proxy.metrics.outcomes.labels(arm if fraction > 0 else "none", report.result).inc()
    log.info("outcome %s reported by the %s for session %s", report.result, by, done.key)
    outcome = done.outcome.model_dump()
    return 200, {"session": done.key, "name": done.name, "arm": arm, "outcome": outcome}


def error(status: int, message: str, kind: str) -> Answer:
    return status, {"error": {"message": message, "type": kind}}
