"""Neutral conversations for core tests: no wire format, no HTTP, no store."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from recovery_proxy.core.conversation import Conversation, ToolCall, ToolResult, digest
from recovery_proxy.core.plan import Budget, Plan
from recovery_proxy.core.state import SessionState
from recovery_proxy.core.tracker import observe
from recovery_proxy.rules.model import Escalation, Rules, Thresholds

SYSTEM = "You are a coding agent working in /srv/checkout-service."
TASK = "The payment webhook test fails on CI; find out why and fix it."
ENOENT = "Error: ENOENT: no such file or directory, open 'src/webhooks/stripe.ts'"
REFUSED = "psycopg.OperationalError: connection failed: connect ECONNREFUSED 127.0.0.1:5432"


def approx_tokens(text: str) -> int:
    return len(text) // 4 + 1


def budget(remaining: int = 1000, headroom: int = 100_000, block: int = 200, **kw: Any) -> Budget:
    return Budget(approx_tokens, block, remaining, headroom, **kw)


def with_rules(rules: Rules, **changes: Any) -> Rules:
    """The bundled rules with `escalation`/`thresholds` fields changed."""
    escalation = {k: v for k, v in changes.items() if k in Escalation.model_fields}
    thresholds = {k: v for k, v in changes.items() if k in Thresholds.model_fields}
    return dataclasses.replace(
        rules,
        escalation=rules.escalation.model_copy(update=escalation),
        thresholds=rules.thresholds.model_copy(update=thresholds),
    )


class Transcript:
    """A conversation grown turn by turn, as an adapter would hand it to the core.

    Positions are opaque strings (`"item-7"`): the core must give them back untouched."""

    _ids = itertools.count(1)

    def __init__(self, rules: Rules, system: str = SYSTEM, task: str = TASK) -> None:
        self.rules = rules
        self.system = system
        # ("user", text) | ("assistant", text) | ("result", r)
        self.items: list[tuple[str, Any]] = [("user", task)]
        self.state = SessionState()
        self.now = 1_750_000_000.0
        self.partial = False
        self.control = False  # the A/B control arm: tracked, nothing injected

    def add(self, tool: str, arguments: dict[str, Any], output: str, **kw: Any) -> ToolResult:
        call_id = f"toolu_{next(self._ids):04d}"
        result = ToolResult(
            call_id, output, f"item-{len(self.items)}", ToolCall(call_id, tool, arguments), **kw
        )
        self.items.append(("result", result))
        return result

    def say(self, text: str) -> None:
        self.items.append(("user", text))

    def think(self, text: str) -> None:
        """The model wrote `text` (an assistant message without tool calls)."""
        self.items.append(("assistant", text))

    def conversation(self) -> Conversation:
        users = [(i, text) for i, (kind, text) in enumerate(self.items) if kind == "user"]
        conv = Conversation(
            model="gpt-4o-mini",
            system=self.system,
            first_user=users[0][1] if users else "",
            results=[r for kind, r in self.items if kind == "result"],
            texts=[self.system, *(text for _, text in users)],
            length=len(self.items),
            user_anchors=[(i, digest(text)) for i, text in users],
            ends_with_user=self.items[-1][0] == "user",
            ends_with_result=self.items[-1][0] == "result",
            partial=self.partial,
        )
        results, human = 0, ""
        for kind, item in self.items:
            if kind == "user":
                human = item
            elif kind == "assistant":
                conv.assistant_texts.append((results, human, item))
            else:
                results += 1
        conv.last_human = human
        conv.fingerprint()
        return conv

    def send(self, plan_budget: Budget | None = None) -> Plan:
        self.now += 30
        return observe(
            self.state,
            self.conversation(),
            self.rules,
            plan_budget or budget(block=self.rules.thresholds.block_tokens),
            self.now,
            control=self.control,
        )

    def call(self, tool: str, arguments: dict[str, Any], output: str, **kw: Any) -> Plan:
        """One agent turn: a tool result arrives, the request goes out."""
        self.last = self.add(tool, arguments, output, **kw)
        return self.send()

    def text_after_last(self, plan: Plan) -> str:
        return plan.appends.get(self.last.position, "")
