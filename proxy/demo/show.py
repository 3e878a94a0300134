"""What the demo prints, and how: as text (the default), nothing but the closing summary
(`--quiet`), or one JSON document (`--json`). The plays report to a `Show`; it works out what
the proxy added to each request by comparing what the agent sent with what the model received.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx
import orjson

from recovery_proxy import tokens

Mode = Literal["text", "quiet", "json"]
NEXT_STEPS = """\
next:
  your agent through the proxy:   recovery-proxy run -- <agent command>
  offline, against the mock model: python -m recovery_proxy.demo.mock_model --port 9100 &
                                   recovery-proxy run --upstream http://127.0.0.1:9100/v1 -- <agent>
  a saved request, dry run:       recovery-proxy explain request.json"""


def rule(title: str) -> str:
    """A section heading."""
    return f"\n{'=' * 8} {title} {'=' * max(0, 70 - len(title))}"


def added_texts(sent: Any, received: Any) -> list[str]:
    """The texts in `received` that are not in `sent`: what the proxy appended to a string,
    and every string of an item or key it added."""
    if isinstance(received, dict) and isinstance(sent, dict):
        found = []
        for key, value in received.items():
            found += added_texts(sent[key], value) if key in sent else _strings(value)
        return found
    if isinstance(received, list) and isinstance(sent, list):
        found = []
        for index, value in enumerate(received):
            found += added_texts(sent[index], value) if index < len(sent) else _strings(value)
        return found
    if isinstance(received, str) and received != sent:
        text = (
            received[len(sent) :]
            if isinstance(sent, str) and received.startswith(sent)
            else received
        )
        return [text.strip("\n")] if text.strip() else []
    return []


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _strings(item)]


@dataclass
class Request:
    """One request of a play, as the proxy handled it."""

    number: int
    status: int
    injected: int  # texts added for the first time (x-recovery-proxy-injected)
    reapplied: int  # earlier texts re-applied byte for byte
    overhead_ms: float | None
    tokens_added: int  # tokens of the texts added for the first time
    tokens_reapplied: int  # tokens of the texts re-applied
    added: list[str] = field(default_factory=list)  # the texts added for the first time
    model: list[str] = field(default_factory=list)  # what the model did in its answer


@dataclass
class Play:
    """One wire format's session."""

    format: str
    title: str
    requests: list[Request] = field(default_factory=list)
    failures: int = 0  # failed tool results the agent sent
    turned_at: int = 0  # the request whose added text the model acted on
    without: str = ""  # what the same script does without that text
    seen: set[str] = field(default_factory=set, repr=False)  # texts added so far


class Show:
    """Collects the plays and prints them the way `mode` says."""

    def __init__(self, mode: Mode = "text") -> None:
        self.mode = mode
        self.plays: list[Play] = []

    def say(self, line: str) -> None:
        if self.mode == "text":
            print(line)

    def play(self, fmt: str, title: str) -> Play:
        self.plays.append(Play(fmt, title))
        self.say(rule(title))
        return self.plays[-1]

    def request(self, play: Play, response: httpx.Response, sent: Any, received: Any) -> Request:
        """Record one request: what the proxy said in its headers and what it added."""
        texts = added_texts(sent, received)
        new = [t for t in texts if t not in play.seen]
        play.seen.update(texts)
        overhead = response.headers.get("x-recovery-proxy-overhead-ms")
        request = Request(
            number=len(play.requests) + 1,
            status=response.status_code,
            injected=int(response.headers.get("x-recovery-proxy-injected", "0")),
            reapplied=int(response.headers.get("x-recovery-proxy-reapplied", "0")),
            overhead_ms=float(overhead) if overhead else None,
            tokens_added=sum(tokens.count(t) for t in new),
            tokens_reapplied=sum(tokens.count(t) for t in texts if t not in new),
            added=new,
        )
        play.requests.append(request)
        again = f" (+{request.tokens_reapplied} re-applied)" if request.tokens_reapplied else ""
        shown = "?" if request.overhead_ms is None else f"{request.overhead_ms:.1f}"
        self.say(
            f"  proxy: request {request.number}, status {request.status}, injected "
            f"{request.injected}, added {request.tokens_added} tokens{again}, overhead {shown} ms"
        )
        return request

    def model(self, play: Play, what: str) -> None:
        """What the model did: `calls read_file(...)`, `answers: ...`, `says: ...`."""
        if play.requests:
            play.requests[-1].model.append(what)
        self.say(f"  model {what}")

    def received(self, kind: str, text: str) -> None:
        """A text as the model received it."""
        self.say(f"  [{kind}] as the model received it:")
        self.say("    " + text.replace("\n", "\n    "))

    def finish(self) -> None:
        """The closing summary and the next commands (text, quiet), or the JSON document."""
        if self.mode == "json":
            plays = [
                {k: v for k, v in asdict(p).items() if k != "seen"} | {"outcome": outcome(p)}
                for p in self.plays
            ]
            document = {"plays": plays, "totals": self.totals()}
            sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        print(rule("summary"))
        for play in self.plays:
            blocks = sum(r.injected for r in play.requests)
            added = sum(r.tokens_added for r in play.requests)
            print(
                f"  {play.title.split(':')[0]}: requests {len(play.requests)}, failed tool "
                f"results {play.failures}, texts added {blocks} ({added} tokens)"
            )
            print(f"    then the model: {outcome(play)}")
            print(f"    without the proxy's text: {play.without}")
        totals = self.totals()
        median = totals["median_overhead_ms"]
        print(
            f"  in all: texts added {totals['texts_added']} ({totals['tokens_added']} tokens), "
            f"median overhead {'?' if median is None else f'{median:.1f}'} ms per request"
        )
        print(NEXT_STEPS)

    def totals(self) -> dict[str, Any]:
        """Requests, failures, texts and tokens added, the median overhead, over every play."""
        requests = [r for p in self.plays for r in p.requests]
        overheads = sorted(r.overhead_ms for r in requests if r.overhead_ms is not None)
        return {
            "requests": len(requests),
            "failures": sum(p.failures for p in self.plays),
            "texts_added": sum(r.injected for r in requests),
            "tokens_added": sum(r.tokens_added for r in requests),
            "median_overhead_ms": overheads[len(overheads) // 2] if overheads else None,
        }


def outcome(play: Play) -> str:
    """What the model did from the request it acted on: `calls ls src -> ... -> answers`."""
    actions = [a for r in play.requests[max(0, play.turned_at - 1) :] for a in r.model]
    return " -> ".join(a if len(a) <= 70 else a[:67] + "..." for a in actions) or "nothing"
