"""What a relayed response teaches a session: the calls it made (for requests that will not
resend them) and the tokens it cost, inside a failure streak or not."""

from __future__ import annotations

from recovery_proxy.core.provider_state import KnownCall
from recovery_proxy.core.reply import Reply
from recovery_proxy.core.state import SessionState


def learn(state: SessionState, reply: Reply, streak: bool, added: int, cost: float | None) -> None:
    """Fold one response into `state.provider`. `streak`: its request ended in a failed tool
    result; `added`: tokens of the proxy's texts in that request; `cost`: USD, if priced."""
    provider = state.provider
    for call in reply.calls:
        if call.id:
            provider.calls.pop(call.id, None)  # most recent last: the cap drops the oldest
            provider.calls[call.id] = KnownCall(name=call.name, arguments=call.arguments)
    usage = provider.usage
    usage.responses += 1
    usage.added += added
    usage.input += reply.input
    usage.cached += reply.cached
    usage.output += reply.output
    if streak:
        usage.streak_responses += 1
        usage.streak_input += reply.input
        usage.streak_output += reply.output
    if cost is not None:
        usage.priced += 1
        usage.cost += cost
        if streak:
            usage.streak_cost += cost
    provider.cleared = reply.cleared > 0  # the provider clears on every turn past its trigger
    provider.stop_reason = reply.stop_reason
    provider.trim()
