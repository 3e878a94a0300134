"""Wire formats: one module per API format, each exporting a `FORMAT`."""

from __future__ import annotations

from collections.abc import Mapping

from recovery_proxy.wire import anthropic_messages, gemini, openai_chat, openai_responses
from recovery_proxy.wire.base import WireFormat

FORMATS: list[WireFormat] = [
    openai_chat.FORMAT,
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    gemini.FORMAT,
]
DEFAULT = openai_chat.FORMAT


def for_passthrough(path: str, headers: Mapping[str, str]) -> WireFormat:
    """The API a non-rewritten request belongs to (its upstream, its error shape): by path
    prefix, then by a header only that API's clients send; OpenAI otherwise."""
    for fmt in FORMATS:
        if path.startswith(fmt.passthrough_prefixes) or any(
            h in headers for h in fmt.marker_headers
        ):
            return fmt
    return DEFAULT


__all__ = ["DEFAULT", "FORMATS", "WireFormat", "for_passthrough"]
