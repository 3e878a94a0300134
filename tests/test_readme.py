"""The README's "What the model sees" example is what the proxy really sends: it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

from tests.agent import ScriptedAgent

README = Path(__file__).resolve().parents[1] / "README.md"
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("## What the model sees", 1)[1]
    match = re.search(r"```\n(.*?)\n```", section, re.S)
    assert match, "the README lost its example block"
    return match.group(1)


async def test_readme_example_is_the_real_output(client) -> None:
    agent = ScriptedAgent(client)
    await agent.call("edit_file", {"path": "src/config.ts", "old": "3000", "new": "8080"}, ENOENT)
    await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert agent.last_tool_text == readme_example()


def test_readme_benchmark_summary_is_the_measured_one() -> None:
    """The README's headline figures are bench.compare's summary block, copied verbatim from
    the bench/results.md the last full run wrote (rerun `python -m bench.compare`, paste)."""
    results = (README.parent / "bench" / "results.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- bench.compare summary: start -->.*?<!-- bench.compare summary: end -->",
        results,
        re.S,
    )
    assert match, "bench/results.md has no summary block: rerun python -m bench.compare"
    assert match.group(0) in README.read_text(encoding="utf-8")
