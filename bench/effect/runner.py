"""Run the suite: every (task, seed) pair in every arm, arms of a pair interleaved in a seeded
order, episodes on a pool of concurrent workers. Arms: `direct` (the model itself), `proxy`
(recovery-proxy in front of it), `control` (the proxy with every session in its A/B control
arm: tracked, forwarded unchanged). The proxies run in this process on loopback ports; the
model never does."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.effect.episode import Episode, run_episode
from bench.effect.formats import Format
from bench.effect.tasks import Task
from recovery_proxy.config import Settings
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer

ARMS = ("direct", "proxy", "control")


@dataclass
class Plan:
    """What to run and against what."""

    model: str
    base_url: str  # OpenAI-compatible, /v1 included
    tasks: Sequence[Task]
    seeds: Sequence[int]
    arms: Sequence[str] = ("direct", "proxy")
    fmt: Format = "chat"
    concurrency: int = 4
    max_turns: int = 12
    episode_seconds: float = 300.0
    api_key: str = "sk-local"
    options: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.7, "max_tokens": 512})
    read_text_calls: bool = False  # tool calls written as text count (small local models)
    pairs: int | None = None  # only the first N (seed, task) pairs of the schedule


def schedule(plan: Plan) -> list[tuple[Task, int, str]]:
    """The episodes in run order: pair by pair, each pair's arms in an order drawn from its
    seed, so arms meet the same server load and no arm runs all its episodes first."""
    jobs = []
    pairs = [(seed, task) for seed in plan.seeds for task in plan.tasks][: plan.pairs]
    for seed, task in pairs:
        arms = list(plan.arms)
        random.Random(f"{seed}:{task.id}").shuffle(arms)
        jobs += [(task, seed, arm) for arm in arms]
    return jobs


@contextmanager
def proxies(plan: Plan) -> Iterator[dict[str, str]]:
    """Base URLs per arm: the model's for `direct`, a proxy on loopback for the others."""
    urls = {"direct": plan.base_url}
    root = plan.base_url.rstrip("/").removesuffix("/v1")
    with ExitStack() as stack:
        for arm in plan.arms:
            if arm == "direct":
                continue
            settings = Settings(
                upstream=plan.base_url,
                anthropic_upstream=root,
                store="memory",
                hot_reload=False,
                control_fraction=1.0 if arm == "control" else 0.0,
                read_timeout=plan.episode_seconds,
            )
            server = stack.enter_context(BackgroundServer(create_app(settings)))
            urls[arm] = f"{server.url}/v1"
        yield urls


def journalled(journal: Path | None) -> dict[tuple[str, int, str], Episode]:
    """Episodes a stopped run already finished, by (task, seed, arm): one JSON line each in
    `journal`. A line cut short by the stop is ignored (that episode runs again)."""
    done: dict[tuple[str, int, str], Episode] = {}
    if journal is None or not journal.exists():
        return done
    for line in journal.read_text().splitlines():
        try:
            episode = Episode.from_json(json.loads(line))
        except (ValueError, TypeError):
            continue
        done[(episode.task, episode.seed, episode.arm)] = episode
    return done


def complete_pairs(
    jobs: list[tuple[Task, int, str]], done: dict[tuple[str, int, str], Episode]
) -> list[Episode]:
    """The journalled episodes of the pairs whose every arm finished, in schedule order."""
    arms: dict[tuple[str, int], int] = {}
    for task, seed, _ in jobs:
        arms[(task.id, seed)] = arms.get((task.id, seed), 0) + 1
    whole = {
        pair
        for pair, count in arms.items()
        if sum((*pair, arm) in done for arm in {a for t, s, a in jobs if (t.id, s) == pair})
        == count
    }
    return [done[(t.id, s, a)] for t, s, a in jobs if (t.id, s) in whole]


async def run(plan: Plan, progress: bool = False, journal: Path | None = None) -> list[Episode]:
    """Every episode of `plan`, in schedule order. With a `journal`, each finished episode is
    appended to it as a JSON line, and episodes already there are not played again: a long run
    that was stopped resumes where it was."""
    jobs = schedule(plan)
    done = journalled(journal)
    if journal is not None:  # rewritten without a line a stop cut short
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text("".join(json.dumps(e.to_json()) + "\n" for e in done.values()))
    gate = asyncio.Semaphore(plan.concurrency)
    finished = 0
    headers = {
        "authorization": f"Bearer {plan.api_key}",
        "x-api-key": plan.api_key,
        "anthropic-version": "2023-06-01",
    }
    limits = httpx.Limits(max_connections=plan.concurrency * 2)
    with proxies(plan) as urls:
        async with httpx.AsyncClient(headers=headers, limits=limits) as client:

            async def one(task: Task, seed: int, arm: str) -> Episode:
                nonlocal finished
                if (task.id, seed, arm) in done:
                    finished += 1
                    return done[(task.id, seed, arm)]
                async with gate:
                    episode = await run_episode(
                        client,
                        urls[arm],
                        plan.fmt,
                        plan.model,
                        task,
                        arm,
                        seed,
                        plan.options,
                        plan.max_turns,
                        plan.episode_seconds,
                        plan.read_text_calls,
                    )
                if journal is not None:
                    with journal.open("a") as out:
                        out.write(json.dumps(episode.to_json()) + "\n")
                finished += 1
                if progress and (finished % 10 == 0 or finished == len(jobs)):
                    print(f"  {finished}/{len(jobs)} episodes", file=sys.stderr, flush=True)
                return episode

            return list(await asyncio.gather(*(one(*job) for job in jobs)))
