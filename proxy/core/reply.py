"""What a relayed response said, in neutral terms: the calls the model made, the tokens the
provider counted, why it stopped. Wire adapters read responses into a `Reply`
(`WireFormat.read_reply`); the server hands it to the pipeline after the last byte went out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ReplyCall:
    """One call the model made: its id, tool name and arguments (JSON text, as sent)."""

    id: str
    name: str
    arguments: str = ""


@dataclass(slots=True)
class Reply:
    """A response's calls, usage and stop reason. `input` counts every prompt token (cached
    ones too); `cached` those read from the provider's cache."""

    calls: list[ReplyCall] = field(default_factory=list)
    input: int = 0
    cached: int = 0
    output: int = 0
    stop_reason: str = ""
    model: str = ""
    cleared: int = 0  # tool uses the provider's context editing cleared (Anthropic)
    usage: bool = False  # the response reported usage at all

    def add_usage(self, input: int = 0, cached: int = 0, output: int = 0) -> None:
        self.input += input
        self.cached += cached
        self.output += output
        self.usage = True
