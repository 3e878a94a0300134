"""A tiny smolagents ToolCallingAgent on an OpenAI-compatible server model.

Run with the frameworks venv: `python smolagents_agent.py --base-url http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from smolagents import OpenAIServerModel, ToolCallingAgent, tool

MISSING = "src/config.ts"


@tool
def read_file(path: str) -> str:
    """Read a text file of the project.

    Args:
        path: The file's path, relative to the project root.
    """
    if path == MISSING:
        raise FileNotFoundError(f"No such file or directory: '{path}'")
    return f"// {Path(path).name}\nexport const port = 3000;\n"


def build(base_url: str) -> ToolCallingAgent:
    """The agent, on an OpenAI-compatible server model at `base_url`."""
    model = OpenAIServerModel(
        model_id="gpt-4o-mini",
        api_base=base_url,
        api_key="sk-test",
        client_kwargs={"max_retries": 0, "default_headers": {"X-Session-Id": "frameworks-smol"}},
    )
    return ToolCallingAgent(tools=[read_file], model=model, max_steps=6, verbosity_level=0)


def main() -> None:
    """Run the agent against --base-url and print its final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    print(build(args.base_url).run("Change the dev server port to 8080 in src/config.ts."))


if __name__ == "__main__":
    main()
