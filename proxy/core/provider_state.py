"""The provider's side of a session (issue 25): compaction it did, calls and usage its
responses reported. One field of `SessionState` (`provider`), defaulted: states stored before
it load unchanged. Bounded."""

from __future__ import annotations

from pydantic import BaseModel, Field

MAX_BOUNDARIES = 8
MAX_KNOWN_CALLS = 64


class KnownCall(BaseModel):
    """A call a relayed response made (`previous_response_id` chains never resend it)."""

    name: str
    arguments: str = ""  # as the response carried it (JSON text)


class Usage(BaseModel):
    """Tokens the provider reported for a session's responses, and what the proxy added.
    `streak_*`: responses to requests inside a failure streak (the latest tool result failed)."""

    responses: int = 0
    input: int = 0
    cached: int = 0
    output: int = 0
    streak_responses: int = 0
    streak_input: int = 0
    streak_output: int = 0
    added: int = 0  # tokens of the texts the proxy put into forwarded requests (re-applied too)
    cost: float = 0.0  # USD, for models with a known price
    streak_cost: float = 0.0
    priced: int = 0  # responses whose model had a price


class ProviderState(BaseModel):
    """Provider compaction seen, calls learned from responses, usage."""

    boundaries: list[str] = Field(default_factory=list)  # compaction blocks/items seen
    calls: dict[str, KnownCall] = Field(default_factory=dict)  # call id -> call, capped
    usage: Usage = Field(default_factory=Usage)
    cleared: bool = False  # the latest response reported tool results cleared (context editing)
    stop_reason: str = ""  # the latest response's

    def trim(self) -> None:
        del self.boundaries[:-MAX_BOUNDARIES]
        while len(self.calls) > MAX_KNOWN_CALLS:
            del self.calls[next(iter(self.calls))]
