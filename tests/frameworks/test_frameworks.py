"""Real agent frameworks through the proxy, against a scripted mock model (issue 4).

Each framework runs as a tiny agent script (`clients/*_agent.py`) in its own process, with the
interpreter of a separate venv (`.venv-frameworks`, see `.ci/frameworks-requirements.txt`):
litellm in the proxy's venv pins openai<3, which today's framework releases outgrow.

The model calls read_file("src/config.ts") twice (it fails both times, in the framework's own
words), then read_file("src/settings.ts") (it succeeds), then answers. The test reads the
requests the mock model received, finding the failed results by the framework's wording rather
than by request index: the first failure must carry a recovery block, and the block on the
second must list the first under "Previous attempts (this session):".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from tests.conftest import make_settings

REPO = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"
PYTHON_ENV = "RECOVERY_PROXY_FRAMEWORKS_PYTHON"
DEFAULT_PYTHON = REPO / ".venv-frameworks" / "bin" / "python"
CLIENT_TIMEOUT = 180

BLOCK = "\n\n[Error Recovery Context]\n"
MISSING, PRESENT = "src/config.ts", "src/settings.ts"
FILE_TEXT = "export const port = 3000;"  # what the clients' read_file returns for PRESENT
ANSWER = "The port lives in src/settings.ts; it is now 8080."
EARLIER_ATTEMPT = re.compile(
    r"Previous attempts \(this session\):\n\s+1\. read_file\(\"src/config\.ts\"\) -> \S"
)

# Keep every framework on loopback: no tracing, telemetry or hub look-ups.
QUIET_ENV = {
    "OPENAI_API_KEY": "sk-test",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
    "PYTHONUNBUFFERED": "1",
}
ROUTING_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")


@dataclass(frozen=True)
class Framework:
    """One framework's agent script and how its failed read_file result reads."""

    script: str
    error_start: str  # the failed result's first words, at the start of a line
    error_words: tuple[str, ...] = ()  # more of the framework's own words in that result
    final_as_tool: bool = False  # the agent ends on a `final_answer` tool call
    by_request: bool = False  # the mock answers by request count, not assistant messages


FRAMEWORKS = {
    "openai-agents": Framework(
        "openai_agents_agent.py",
        error_start="An error occurred while running the tool.",
    ),
    "langgraph": Framework(
        "langgraph_agent.py",
        error_start="Error: FileNotFoundError(",
        error_words=("No such file or directory: 'src/config.ts'", "Please fix your mistakes."),
    ),
    "pydantic-ai": Framework(
        "pydantic_ai_agent.py",
        error_start='{"error":',
        error_words=("No such file or directory: 'src/config.ts'",),
    ),
    # A failed ToolCallingAgent step sends no assistant message (not even `Calling tools:`),
    # only `Error:\n...` user text, so the mock cannot count assistant messages.
    "smolagents": Framework(
        "smolagents_agent.py",
        error_start="Error executing tool 'read_file' with arguments",
        error_words=("FileNotFoundError: No such file or directory: 'src/config.ts'",),
        final_as_tool=True,
        by_request=True,
    ),
}


def tool_call(n: int, name: str, arguments: dict[str, str]) -> dict[str, Any]:
    """An assistant message calling one tool, as the OpenAI API returns it."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"id": f"call_fw{n}", "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def model_script(final_as_tool: bool = False) -> list[dict[str, Any]]:
    """Fail twice on the same file, read another one, then finish."""
    final = (
        tool_call(4, "final_answer", {"answer": ANSWER})
        if final_as_tool
        else {"role": "assistant", "content": ANSWER}
    )
    return [
        tool_call(1, "read_file", {"path": MISSING}),
        tool_call(2, "read_file", {"path": MISSING}),
        tool_call(3, "read_file", {"path": PRESENT}),
        final,
    ]


def frameworks_python() -> Path:
    """The frameworks venv's interpreter; a missing one is a broken setup: the test fails."""
    python = Path(os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON)
    if not python.is_file():
        pytest.fail(
            f"frameworks interpreter {python} not found. Create it with `python3 -m venv "
            ".venv-frameworks && .venv-frameworks/bin/pip install -r "
            f".ci/frameworks-requirements.txt`, or point {PYTHON_ENV} at one.",
            pytrace=False,
        )
    return python


def run_client(script: str, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a client script of `clients/` against `base_url`, on loopback only."""
    env = {k: v for k, v in os.environ.items() if k not in ROUTING_ENV} | QUIET_ENV
    return subprocess.run(
        [str(frameworks_python()), str(CLIENTS / script), "--base-url", base_url, *args],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        env=env,
        cwd=REPO,
        check=False,
    )


def text_of(content: Any) -> str:
    """A message content's text: a string, or the text parts of a list."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def result_texts(body: dict[str, Any]) -> list[str]:
    """The texts of the messages that can carry tool results (smolagents sends them as user)."""
    return [
        text_of(m.get("content"))
        for m in body.get("messages", [])
        if isinstance(m, dict) and m.get("role") in ("tool", "user")
    ]


def failures(body: dict[str, Any], framework: Framework) -> list[str]:
    """Each failed result in a request as the model received it, oldest first.

    A failure runs from the framework's error words to the next failure or the message's end.
    """
    start = re.compile(r"(?m)^" + re.escape(framework.error_start))
    found = []
    for text in result_texts(body):
        # A block's own `Error: <key line>` (right after its `Operation:` line) is not a start.
        starts = [
            m.start()
            for m in start.finditer(text)
            if not text[: m.start()].rstrip("\n").rpartition("\n")[2].startswith("Operation: ")
        ]
        found += [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]
    return found


def first_with_failures(received: list[dict[str, Any]], framework: Framework, n: int) -> str:
    """The latest failure in the first request that shows `n` failed results."""
    for body in received:
        found = failures(body, framework)
        if len(found) >= n:
            return found[n - 1]
    seen = [len(failures(body, framework)) for body in received]
    raise AssertionError(f"no request showed {n} failures; failures per request: {seen}")


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_framework_tool_errors_get_recovery_blocks(name: str) -> None:
    framework = FRAMEWORKS[name]
    frameworks_python()
    mock = create_mock_app(model_script(framework.final_as_tool), by_request=framework.by_request)
    with (
        BackgroundServer(mock) as upstream,
        BackgroundServer(create_app(make_settings(upstream=f"{upstream.url}/v1"))) as proxy,
    ):
        done = run_client(framework.script, f"{proxy.url}/v1")
    received: list[dict[str, Any]] = mock.state.received
    assert done.returncode == 0, f"{name} agent failed:\n{done.stdout}\n{done.stderr}"
    assert ANSWER in done.stdout

    first = first_with_failures(received, framework, 1)
    own_words, _, block = first.partition(BLOCK)
    assert block, f"no recovery block on {name}'s failed tool result: {first!r}"
    for words in framework.error_words:
        assert words in own_words, f"{words!r} not in {name}'s tool result {own_words!r}"
    assert block.startswith(f'Operation: read_file("{MISSING}")'), block

    second = first_with_failures(received, framework, 2)
    assert BLOCK in second, f"no recovery block on {name}'s second failure: {second!r}"
    assert EARLIER_ATTEMPT.search(second.partition(BLOCK)[2]), second

    after_success = next(
        (
            text.partition(FILE_TEXT)[2]
            for body in received
            for text in result_texts(body)
            if FILE_TEXT in text
        ),
        None,
    )
    assert after_success is not None, f"{name}'s successful read never reached the model"
    assert BLOCK not in after_success, f"a block after {name}'s successful read"
