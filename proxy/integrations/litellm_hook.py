"""recovery-proxy inside LiteLLM Proxy: a `CustomLogger` whose `async_pre_call_hook` runs the
recovery pipeline on each request's messages.

LiteLLM loads callbacks from a Python file next to its `config.yaml`:

    # recovery_callbacks.py
    from recovery_proxy.integrations.litellm_hook import recovery_hook

    # config.yaml
    litellm_settings:
      callbacks: recovery_callbacks.recovery_hook

Rules and the session store come from the same `RECOVERY_PROXY_*` settings as `serve`. The
session is LiteLLM's (`x-litellm-session-id` header, `litellm_session_id`, metadata) or the
conversation's fingerprint; the tenant is the LiteLLM key. Chat requests are read as Chat
Completions, LiteLLM's `/v1/messages` as Anthropic Messages. The `block` escalation raises
LiteLLM's `ProxyException` (409); any other failure forwards the request unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import orjson
from litellm.integrations.custom_logger import CustomLogger

from recovery_proxy.config import Settings
from recovery_proxy.metrics import Metrics
from recovery_proxy.rewrite import ChatRequest, Rewrite, Rewriter, fail_open
from recovery_proxy.session.keys import CREDENTIAL_HEADERS
from recovery_proxy.wire import WireFormat, anthropic_messages, openai_chat

log = logging.getLogger("recovery_proxy")
WIRES: dict[str, WireFormat] = {
    "completion": openai_chat.FORMAT,
    "acompletion": openai_chat.FORMAT,
    "anthropic_messages": anthropic_messages.FORMAT,
}
FIELDS = ("model", "messages", "system", "litellm_session_id")  # what the pipeline reads


class RecoveryHook(CustomLogger):
    """Rewrites `data["messages"]` (and the system text) before LiteLLM calls the model."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.metrics = Metrics()
        self._pipeline: Rewriter | None = None
        self._lock = asyncio.Lock()
        self._parts = AsyncExitStack()  # open as long as LiteLLM runs (it has no shutdown hook)

    async def pipeline(self) -> Rewriter:
        """The recovery pipeline, built on first use (settings from `RECOVERY_PROXY_*`)."""
        async with self._lock:
            if self._pipeline is None:
                from recovery_proxy.pipeline import build_pipeline, open_parts

                settings = self.settings or Settings()
                parts = await open_parts(settings, self.metrics, self._parts)
                self._pipeline = build_pipeline(settings, self.metrics, parts)
            return self._pipeline

    async def rewrite(self, data: Mapping[str, Any], key: Any, wire: WireFormat) -> Rewrite:
        """What the pipeline makes of LiteLLM's request data."""
        return await (await self.pipeline())(chat_request(data, key, wire))

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any
    ) -> dict | None:
        """The rewritten request; LiteLLM's `ProxyException` (409) for the `block` action."""
        wire = WIRES.get(str(call_type))
        if wire is None or not isinstance(data.get("messages"), list):
            return data
        rewrite = await fail_open(lambda: self.rewrite(data, user_api_key_dict, wire), self.metrics)
        if rewrite.body is None and rewrite.reject is None:
            return data
        if rewrite.reject is not None:
            from litellm.proxy._types import ProxyException

            raise ProxyException(
                message=rewrite.reject,
                type="recovery_escalation",
                param=None,
                code=409,
                headers={"x-should-retry": "false"},
            )
        if rewrite.body is not None:
            rewritten = orjson.loads(rewrite.body)
            for key in ("messages", "system"):
                if key in rewritten:
                    data[key] = rewritten[key]
        return data


def chat_request(data: Mapping[str, Any], key: Any, wire: WireFormat) -> ChatRequest:
    """The request as the pipeline sees it: the message fields of `data`, the client's
    headers (session ids) with the LiteLLM key as the only credential."""
    payload = {k: data[k] for k in FIELDS if k in data}
    metadata = data.get("metadata") or data.get("litellm_metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("session_id"), str):
        payload["metadata"] = {"session_id": metadata["session_id"]}
    server_request = data.get("proxy_server_request")
    sent = server_request.get("headers") if isinstance(server_request, Mapping) else None
    headers = {
        str(k).lower(): str(v)
        for k, v in (sent.items() if isinstance(sent, Mapping) else ())
        if str(k).lower() not in CREDENTIAL_HEADERS
    }
    tenant = getattr(key, "api_key", None) or getattr(key, "token", None) or ""
    headers["authorization"] = f"Bearer {tenant}"
    return ChatRequest(orjson.dumps(payload), payload, headers, wire)


recovery_hook = RecoveryHook()
