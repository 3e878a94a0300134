"""A tiny LangGraph agent: ChatOpenAI plus a ToolNode with `handle_tool_errors=True`.

Run with the frameworks venv: `python langgraph_agent.py --base-url http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

MISSING = "src/config.ts"


@tool
def read_file(path: str) -> str:
    """Read a text file of the project, given its path relative to the project root."""
    if path == MISSING:
        raise FileNotFoundError(f"No such file or directory: '{path}'")
    return f"// {Path(path).name}\nexport const port = 3000;\n"


def build(base_url: str) -> CompiledStateGraph:
    """The agent graph: the model node, then tools while the model calls any."""
    model = ChatOpenAI(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="sk-test",
        max_retries=0,
        use_responses_api=False,
        default_headers={"X-Session-Id": "frameworks-langgraph"},
    ).bind_tools([read_file])

    def call_model(state: MessagesState) -> dict[str, list[AnyMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([read_file], handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def main() -> None:
    """Run the agent against --base-url and print its final answer."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    messages = [
        SystemMessage("You are a coding agent. Use read_file to inspect the project."),
        HumanMessage("Change the dev server port to 8080 in src/config.ts."),
    ]
    state = build(args.base_url).invoke({"messages": messages}, {"recursion_limit": 20})
    print(state["messages"][-1].content)


if __name__ == "__main__":
    main()
