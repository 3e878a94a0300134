"""`python -m bench.effect`: the effect benchmark. Does recovery context change what a model
does after a failed tool call, and does it get more tasks done?

    python -m bench.effect --model qwen2.5-coder-1.5b --base-url http://127.0.0.1:8080/v1 \\
        --seeds 4 --arms direct,proxy,control --concurrency 2 --out bench/effect/results
    python -m bench.effect --mock --seeds 8        # the scripted mock model, offline, seconds

Writes PREFIX.json (every episode), PREFIX.md (per-arm table, paired differences) and
PREFIX.png. Errors in the arguments are one line, exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.effect.formats import FORMATS
from bench.effect.report import by_family, markdown, write
from bench.effect.runner import ARMS, Plan, complete_pairs, journalled, run, schedule
from bench.effect.stats import summarise
from bench.effect.tasks import FAMILIES, all_tasks


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.effect", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="mock-model", help="model name sent in requests")
    p.add_argument("--base-url", help="OpenAI-compatible base URL, /v1 included")
    p.add_argument("--mock", action="store_true", help="play against the scripted mock model")
    p.add_argument("--format", choices=FORMATS, default="chat", help="wire format (default chat)")
    p.add_argument("--arms", default="direct,proxy", help="comma list of direct, proxy, control")
    p.add_argument("--seeds", type=int, default=2, help="seeds per task (pairs = tasks x seeds)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--families", help="comma list of task families (default all)")
    p.add_argument("--limit", type=int, help="first N tasks only")
    p.add_argument(
        "--pairs", type=int, help="first N (seed, task) pairs only, seed by seed (default all)"
    )
    p.add_argument("--concurrency", type=int, default=4, help="episodes at once (default 4)")
    p.add_argument("--max-turns", type=int, default=12, help="model turns per episode")
    p.add_argument("--episode-seconds", type=float, default=300.0, help="time per episode")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-tokens", type=int, default=512, help="completion tokens per turn")
    p.add_argument("--api-key", default="sk-local", help="sent as Bearer and x-api-key")
    p.add_argument("--out", default="bench/effect/out/run", help="output prefix (.json .md .png)")
    p.add_argument(
        "--text-tool-calls",
        action="store_true",
        help="read tool calls a model writes as text (```json or <tool_call>), as harnesses "
        "for small local models do",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="play nothing: report the pairs PREFIX.jsonl holds every arm of",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep each finished episode in PREFIX.jsonl and skip those already there",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 on success, 2 on a bad argument."""
    args = parser().parse_args(argv)
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    families = {f.__name__ for f in FAMILIES}
    chosen = set(args.families.split(",")) if args.families else families
    problem = (
        "give --base-url or --mock"
        if not (args.base_url or args.mock)
        else f"unknown arm in --arms {args.arms!r}: use {', '.join(ARMS)}"
        if set(arms) - set(ARMS) or not arms
        else f"unknown family in --families: use {', '.join(sorted(families))}"
        if chosen - families
        else "--seeds and --concurrency must be at least 1"
        if min(args.seeds, args.concurrency) < 1
        else ""
    )
    if problem:
        print(f"bench.effect: {problem}", file=sys.stderr)
        return 2
    tasks = [t for t in all_tasks() if t.family in chosen][: args.limit]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    options = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    plan = Plan(
        args.model,
        args.base_url or "",
        tasks,
        seeds,
        arms,
        args.format,
        args.concurrency,
        args.max_turns,
        args.episode_seconds,
        args.api_key,
        options,
        args.text_tool_calls,
        args.pairs,
    )
    journal = Path(args.out).with_suffix(".jsonl") if args.resume or args.report_only else None
    if args.report_only:
        episodes = complete_pairs(schedule(plan), journalled(journal))
    elif args.mock:
        from bench.effect.mock import policy
        from recovery_proxy.demo.mock_model import create_mock_app
        from recovery_proxy.server.background import BackgroundServer

        with BackgroundServer(create_mock_app([], after=policy(tasks))) as model:
            plan.base_url = f"{model.url}/v1"
            episodes = asyncio.run(run(plan, progress=True, journal=journal))
    else:
        episodes = asyncio.run(run(plan, progress=True, journal=journal))
    summary = summarise(episodes)
    meta = {
        "model": args.model,
        "format": args.format,
        "arms": list(arms),
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "tasks": len(tasks),
        "families": len({t.family for t in tasks}),
        "pairs": len(episodes) // len(arms),
        "episodes": len(episodes),
        "max_turns": args.max_turns,
        "command": "python -m bench.effect "
        + shlex.join(sys.argv[1:] if argv is None else list(argv)),
        "by_family": by_family(episodes),
    }
    paths = write(Path(args.out), meta, summary, episodes)
    print(markdown(meta, summary))
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
