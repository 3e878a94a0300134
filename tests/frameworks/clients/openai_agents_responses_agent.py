"""A tiny openai-agents agent on its DEFAULT model (the Responses API) whose read_file tool
raises.

Run with the frameworks venv:
`python openai_agents_responses_agent.py --base-url http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from agents import Agent, Runner, function_tool, set_default_openai_client, set_tracing_disabled
from openai import AsyncOpenAI

MISSING = "src/config.ts"


@function_tool
def read_file(path: str) -> str:
    """Read a text file of the project.

    Args:
        path: The file's path, relative to the project root.
    """
    if path == MISSING:
        raise FileNotFoundError(f"No such file or directory: '{path}'")
    return f"// {Path(path).name}\nexport const port = 3000;\n"


async def run(base_url: str) -> str:
    """Run the agent on its task against `base_url`; its final answer."""
    client = AsyncOpenAI(
        base_url=base_url,
        api_key="sk-test",
        max_retries=0,
        default_headers={"X-Session-Id": "frameworks-openai-agents-responses"},
    )
    set_default_openai_client(client, use_for_tracing=False)
    agent = Agent(
        name="coder",
        instructions="You are a coding agent. Use read_file to inspect the project.",
        tools=[read_file],
    )
    result = await Runner.run(agent, "Change the dev server port to 8080 in src/config.ts.")
    return str(result.final_output)


def main() -> None:
    """Run the agent against --base-url and print its final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    set_tracing_disabled(True)
    print(asyncio.run(run(args.base_url)))


if __name__ == "__main__":
    main()
