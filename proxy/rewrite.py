"""The rewrite hook: the seam where the recovery pipeline plugs into the HTTP path."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from recovery_proxy.logs import log_request
from recovery_proxy.metrics import Metrics
from recovery_proxy.wire import DEFAULT, WireFormat

log = logging.getLogger("recovery_proxy")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request to a rewritten route, as the client sent it, and the format it speaks."""

    body: bytes
    payload: dict[str, Any]
    headers: Mapping[str, str]
    wire: WireFormat = DEFAULT
    session: str | None = None  # the id a `/s/{session}/...` path named
    path: str = ""  # the route path (after any session prefix)


@dataclass(slots=True)
class Rewrite:
    """What to do with a request: forward `body` (None: the original bytes), or refuse it
    with `reject` (a 409 in the wire format's error shape carrying this message)."""

    body: bytes | None = None
    injected: int = 0  # texts added for the first time in this request
    reapplied: int = 0  # earlier texts re-applied byte for byte
    session: str = ""  # the session key (tenant hash : session digest)
    reject: str | None = None
    results: int = 0  # tool results in the request
    failures: int = 0  # failures judged for the first time
    rules: str = ""  # the rules version that judged them
    arm: str = ""  # A/B arm ("treatment" | "control") while an experiment runs, else ""
    name: str = ""  # the session's display name (`session.keys.display_name`)
    tokens: int = 0  # estimated tokens of the texts the forwarded body carries (new, re-applied)
    categories: tuple[str, ...] = ()  # categories of the failures judged for the first time
    streak: bool = False  # the latest tool result failed: the answer is spent inside a streak
    model: str = ""  # the model the request names (prices its answer)


UNCHANGED = Rewrite()


def log_rewrite(rewrite: Rewrite, wire: str, started: float, body: bytes | None = None) -> None:
    """The request log line for one rewrite (proxy/logs.py), the same for every route."""
    log_request(
        session=rewrite.session,
        wire=wire,
        results=rewrite.results,
        failures=rewrite.failures,
        injected=rewrite.injected,
        reapplied=rewrite.reapplied,
        started=started,
        rules_version=rewrite.rules,
        arm=rewrite.arm,
        refused=rewrite.reject is not None,
        body=body,
    )


class Rewriter(Protocol):
    """Decides what a chat request becomes before it is forwarded."""

    async def __call__(self, request: ChatRequest) -> Rewrite: ...


async def fail_open(rewrite: Callable[[], Awaitable[Rewrite]], metrics: Metrics) -> Rewrite:
    """Await `rewrite()`; on any exception forward the original request (the one fail-open
    path: the app and the LiteLLM hook both call it). Counted, and logged in one line."""
    try:
        return await rewrite()
    except Exception as exc:  # fail-open is the contract: never break the agent
        metrics.rewrite_failures.inc()
        log.error("rewrite failed, forwarding unchanged: %s: %s", type(exc).__name__, exc)
        return UNCHANGED
