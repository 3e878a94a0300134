"""A tiny pydantic-ai agent whose read_file tool raises `ModelRetry` for a missing file.

Run with the frameworks venv: `python pydantic_ai_agent.py --base-url http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from openai import AsyncOpenAI
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

MISSING = "src/config.ts"


def read_file(path: str) -> str:
    """Read a text file of the project.

    Args:
        path: The file's path, relative to the project root.
    """
    if path == MISSING:
        raise ModelRetry(f"No such file or directory: '{path}'")
    return f"// {Path(path).name}\nexport const port = 3000;\n"


def build(base_url: str) -> Agent[None, str]:
    """The agent, on an OpenAI chat model served at `base_url`."""
    client = AsyncOpenAI(
        base_url=base_url,
        api_key="sk-test",
        max_retries=0,
        default_headers={"X-Session-Id": "frameworks-pydantic-ai"},
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    return Agent(
        model,
        instructions="You are a coding agent. Use read_file to inspect the project.",
        tools=[read_file],
        retries=3,
    )


def main() -> None:
    """Run the agent against --base-url and print its final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    result = build(args.base_url).run_sync("Change the dev server port to 8080 in src/config.ts.")
    print(result.output)


if __name__ == "__main__":
    main()
