"""One episode: a task, an arm, a seed; the model and the sandbox take turns until the model
stops calling tools, the turn budget or the time budget runs out. Compaction-family tasks have
their history replaced by a summary after `compact_at` model turns, as agents do."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from bench.effect.formats import Format, ToolResult, Turn, parse, path_of, request, text_calls
from bench.effect.tasks import Task

SYSTEM = (
    "You are a coding agent working in a repository at /home/user/repo. Use the tools to do "
    "what the user asks. When the task is done, or you cannot do it, answer without calling "
    "a tool."
)
# Claude Code's summary marker; the summary itself says what the task is, not what failed.
MARKER = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:"
)


@dataclass(frozen=True, slots=True)
class Step:
    """A tool call the model made and how it went."""

    turn: int
    name: str
    key: str  # the call's identity: tool and canonical arguments
    failed: bool
    after_compaction: bool


@dataclass
class Episode:
    """What happened in one episode (the runner's raw record, written to the JSON output)."""

    task: str
    family: str
    arm: str
    seed: int
    steps: list[Step] = field(default_factory=list)
    turns: int = 0
    success: bool = False
    end: str = ""  # answered | max_turns | timeout | error | refused
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    proxy_tokens: int = 0
    compacted: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A plain dict (steps as dicts)."""
        return asdict(self)

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Episode:
        """The episode `to_json` wrote."""
        steps = [Step(**step) for step in record.get("steps", [])]
        return cls(**{**record, "steps": steps})


def compact(task: Task, history: list[Turn]) -> list[Turn]:
    """The history after a compaction: one user message with the marker and a summary that
    restates the task (what failed is left out, as summaries often do)."""
    calls = sum(len(t.calls) for t in history)
    summary = (
        f"{MARKER}\n\nThe user asked: {task.prompt}\nSo far {calls} tool calls were made; the "
        "task is not finished yet. Continue with the task from where it was left."
    )
    return [Turn("user", summary)]


def call_key(name: str, args: dict[str, Any]) -> str:
    """A call's identity for repeat counting: tool name and arguments, keys sorted."""
    return f"{name} {json.dumps(args, sort_keys=True)}"


async def run_episode(
    client: httpx.AsyncClient,
    base_url: str,
    fmt: Format,
    model: str,
    task: Task,
    arm: str,
    seed: int,
    options: dict[str, Any],
    max_turns: int = 12,
    seconds: float = 300.0,
    read_text_calls: bool = False,
) -> Episode:
    """Play `task` against the model at `base_url` (direct, or a proxy in front of it);
    with `read_text_calls`, tool calls the model wrote as text count as calls."""
    episode = Episode(task.id, task.family, arm, seed)
    sandbox = task.build()
    history = [Turn("user", task.prompt)]
    headers = {"x-session-id": f"effect-{arm}-{task.id}-{seed}"}
    started = time.monotonic()
    try:
        for turn in range(max_turns):
            if task.compact_at is not None and turn == task.compact_at:
                history = compact(task, history)
                episode.compacted = True
            left = seconds - (time.monotonic() - started)
            if left <= 0:
                episode.end = "timeout"
                break
            body = request(fmt, model, SYSTEM, history, {**options, "seed": seed})
            response = await client.post(
                base_url.rstrip("/") + path_of(fmt), json=body, headers=headers, timeout=left
            )
            episode.turns = turn + 1
            episode.proxy_tokens += int(response.headers.get("x-recovery-proxy-tokens", 0))
            if response.status_code == 409:  # the proxy's `block` escalation refused the turn
                episode.end = "refused"
                break
            response.raise_for_status()
            reply = parse(fmt, response.json())
            if read_text_calls:
                reply = text_calls(reply)
            episode.prompt_tokens += reply.prompt_tokens
            episode.completion_tokens += reply.completion_tokens
            if not reply.calls:
                episode.end = "answered"
                break
            results = []
            for call in reply.calls:
                result = sandbox.call(call.name, call.args)
                results.append(ToolResult(call.id, call.name, result.text, result.failed))
                key = call_key(call.name, call.args)
                episode.steps.append(Step(turn, call.name, key, result.failed, episode.compacted))
            history.append(Turn("assistant", reply.text, reply.calls, results))
        else:
            episode.end = "max_turns"
    except httpx.TimeoutException:
        episode.end = "timeout"
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        episode.end, episode.error = "error", f"{type(exc).__name__}: {exc}"[:300]
    episode.success = task.check(sandbox)
    episode.seconds = round(time.monotonic() - started, 3)
    return episode
