"""Claude Code, Codex, Gemini CLI and OpenCode, today's releases, end to end: each runs
non-interactively in a scratch directory with a throwaway HOME against the mock model, through
`recovery-proxy serve` and through `recovery-proxy run --`. Per agent: exit 0; a block on the
first failure; the second failure lists the first; every forwarded model request extends the
previous one; requests with nothing to add go byte for byte; the session is the agent's own id
where it sends one; Claude Code's breakpoints stay where it put them; the command line of each
shell call is read from the arguments the agent really sends."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from recovery_proxy.core.commands import command_line
from recovery_proxy.demo.mock_model.agents import COMMAND, COMPACTION_ASKS, shell_of
from recovery_proxy.rules.load import load_rules
from recovery_proxy.wire import FORMATS
from tests.agents.agents import AGENTS, Agent
from tests.agents.harness import (
    BLOCK,
    CLI,
    Exchange,
    mock_model,
    run_agent,
    served,
    session_names,
)

HISTORY = ("messages", "input", "contents")


def scratch(tmp_path: Path, agent: Agent) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    agent.prepare(home, work)
    return home, work


def environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """A clean environment: PATH, the throwaway HOME (and XDG dirs under it), the agent's own."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", "NO_COLOR": "1"}
    for name, sub in (("CONFIG", ".config"), ("DATA", ".local/share"), ("CACHE", ".cache")):
        env[f"XDG_{name}_HOME"] = str(home / sub)
    env["XDG_STATE_HOME"] = str(home / ".local/state")
    env["CODEX_HOME"] = str(home / ".codex")
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    return env | extra


def history(body: dict[str, Any]) -> list[Any]:
    return next(body[key] for key in HISTORY if isinstance(body.get(key), list))


def main_loop(seen: list[Exchange], agent: Agent) -> list[dict[str, Any]]:
    """The agent's own turns (its shell tool offered, not a compaction), in order."""
    out = []
    for exchange in seen:
        body = exchange.json if exchange.method == "POST" and agent.wire in exchange.path else None
        if isinstance(body, dict) and shell_of(body):
            last = orjson.dumps(history(body)[-1:]).decode()
            if not any(ask in last for ask in COMPACTION_ASKS):
                out.append(body)
    return out


def without_breakpoints(node: Any) -> Any:
    """`node` without `cache_control` (Claude Code moves its breakpoint every turn)."""
    if isinstance(node, dict):
        return {k: without_breakpoints(v) for k, v in node.items() if k != "cache_control"}
    if isinstance(node, list):
        return [without_breakpoints(v) for v in node]
    return node


def breakpoints(node: Any, at: str = "") -> list[str]:
    """Where `cache_control` sits in a body, as paths."""
    if isinstance(node, dict):
        found = [at] if "cache_control" in node else []
        return found + [p for k, v in node.items() for p in breakpoints(v, f"{at}/{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in breakpoints(v, f"{at}/{i}")]
    return []


def check_recovery(forwarded: list[dict[str, Any]]) -> None:
    """A block on the first failure, the second lists the first, each request extends the last."""
    assert len(forwarded) >= 3, [len(history(b)) for b in forwarded]
    texts = [orjson.dumps(history(body)).decode() for body in forwarded]
    assert BLOCK not in texts[0]
    assert texts[1].count(BLOCK) == 1 and "Previous attempts" not in texts[1]
    assert texts[2].count(BLOCK) == 2
    second = texts[2][texts[2].rindex(BLOCK) :]
    assert "Previous attempts (this session):" in second and "  1. " in second
    for before, after in itertools.pairwise(forwarded):
        old, new = (without_breakpoints(history(b)) for b in (before, after))
        assert new[: len(old)] == old  # the history as forwarded only grows


def check_commands(forwarded: list[dict[str, Any]], agent: Agent) -> None:
    """Each shell call, as the agent sent it (Codex's `cmd`, the others' `command`), reads as
    the command the mock model asked for: what `answers` rules see."""
    path = agent.wire
    wire = next(f for f in FORMATS if path in f.paths or path.startswith(f.passthrough_prefixes))
    parse, rules = wire.parse, load_rules()
    calls = [r.call for body in forwarded if (conv := parse(body)) for r in conv.results]
    lines = {command_line(call.arguments, rules.command_keys) for call in calls if call is not None}
    assert lines == {COMMAND}, lines


def check_serve(agent: Agent, tap: list[Exchange], model: list[Exchange], store: Path) -> None:
    check_recovery(main_loop(model, agent))
    check_commands(main_loop(model, agent), agent)
    received = {exchange.body for exchange in model}
    answered = [e for e in tap if e.answer.get("x-recovery-proxy-injected") is not None]
    assert answered
    for exchange in answered:  # nothing to add: the agent's own bytes
        if (
            exchange.answer["x-recovery-proxy-injected"]
            == "0"
            == exchange.answer.get("x-recovery-proxy-reapplied")
        ):
            assert exchange.body in received, exchange.path
    sent = main_loop(tap, agent)
    forwarded = main_loop(model, agent)
    if agent.name == "claude-code":
        for mine, theirs in zip(sent, forwarded, strict=True):
            assert breakpoints(mine) == breakpoints(theirs)
    names = session_names(store)
    if agent.session_header:
        ids = {e.headers[agent.session_header] for e in tap if agent.wire in e.path}
        assert len(ids) == 1 and ids <= set(names), (ids, names)
    else:
        assert any(name.startswith("fingerprint: ") for name in names), names


@pytest.mark.parametrize("name", list(AGENTS))
def test_through_serve(name: str, tmp_path: Path) -> None:
    agent = AGENTS[name]
    home, work = scratch(tmp_path, agent)
    store = tmp_path / "sessions.db"
    with mock_model() as (upstream, model), served(upstream, store) as (root, tap):
        done = run_agent(agent.argv(root), environment(home, agent.env(root)), work)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        if name == "codex":  # the Responses WebSocket was refused once, then HTTPS
            assert [e.method for e in tap.seen].count("WS") <= 2
            assert "Reconnecting" not in done.stderr
    check_serve(agent, tap.seen, model.seen, store)


@pytest.mark.parametrize("name", list(AGENTS))
def test_through_run(name: str, tmp_path: Path) -> None:
    agent = AGENTS[name]
    home, work = scratch(tmp_path, agent)
    with mock_model() as (upstream, model):
        wrapper = [
            *CLI,
            "run",
            "--upstream",
            f"{upstream}/v1",
            "--anthropic-upstream",
            upstream,
            "--gemini-upstream",
            upstream,
            "--",
        ]
        env = environment(home, agent.env(None))
        done = run_agent([*wrapper, *agent.argv(None)], env | {"PYTHONPATH": pythonpath()}, work)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    check_recovery(main_loop(model.seen, agent))
    assert "blocks injected 2" in done.stderr, done.stderr[-1500:]


def pythonpath() -> str:
    """The import path `run` needs from the scratch directory (this checkout's package)."""
    return os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), *sys.path) if p)


def test_claude_code_compact_then_continue(tmp_path: Path) -> None:
    """`/compact` (its breakpoint moved onto the last tool_use) adds nothing new; the next
    turn gets the failure summary and no new block."""
    agent = AGENTS["claude-code"]
    home, work = scratch(tmp_path, agent)
    store = tmp_path / "sessions.db"
    with mock_model() as (upstream, model), served(upstream, store) as (root, tap):
        env = environment(home, agent.env(root))
        assert run_agent(agent.argv(root), env, work).returncode == 0
        mark = len(tap.seen)
        compact = [agent.argv(root)[0], "--continue", "-p", "/compact"]
        assert run_agent([*compact, "--dangerously-skip-permissions"], env, work).returncode == 0
        go_on = [agent.argv(root)[0], "--continue", "-p", "go on"]
        assert run_agent([*go_on, "--dangerously-skip-permissions"], env, work).returncode == 0
    later = [e for e in tap.seen[mark:] if e.path == agent.wire and e.answer]
    compaction = [e for e in later if "Respond with TEXT ONLY" in e.body.decode()]
    assert compaction and compaction[0].answer["x-recovery-proxy-injected"] == "0"
    received = [e.json for e in model.seen if e.path == agent.wire]
    summarised = [b for b in received if "## Recent failures" in orjson.dumps(b["system"]).decode()]
    assert summarised, "the turn after /compact carries the failure summary"
    assert all(BLOCK not in orjson.dumps(b["messages"]).decode() for b in summarised)
    assert all("STOP" not in e.body.decode() for e in model.seen)


def test_two_gemini_cli_runs_are_two_sessions(tmp_path: Path) -> None:
    agent = AGENTS["gemini-cli"]
    home, work = scratch(tmp_path, agent)
    store = tmp_path / "sessions.db"
    with mock_model() as (upstream, model), served(upstream, store) as (root, tap):
        env = environment(home, agent.env(root))
        for _ in range(2):
            assert run_agent(agent.argv(root), env, work).returncode == 0
    turns = main_loop(model.seen, agent)
    runs = [turns[: len(turns) // 2], turns[len(turns) // 2 :]]
    for run in runs:
        check_recovery(run)
    names = [n for n in session_names(store) if n.startswith("fingerprint: ")]
    sessions = {e.answer.get("x-recovery-proxy-session") for e in tap.seen if e.answer}
    assert len(names) >= 2 and len(sessions - {None}) >= 2


def test_codex_over_the_responses_websocket(tmp_path: Path) -> None:
    """Codex's default transport, against a model that speaks it: the proxy relays the socket
    and rewrites each `response.create` as it rewrites a POST (blocks, history only grows)."""
    agent = AGENTS["codex"]
    home, work = scratch(tmp_path, agent)
    store = tmp_path / "sessions.db"
    with mock_model(websocket=True) as (upstream, model), served(upstream, store) as (_, tap):
        root = tap.target  # the proxy itself: the tap does not relay sockets
        done = run_agent(agent.argv(root), environment(home, agent.env(root)), work)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Falling back" not in done.stderr and "Reconnecting" not in done.stderr
    messages = model.app.state.socket_messages
    assert not [e for e in model.seen if e.path == agent.wire]  # nothing over HTTPS
    # Codex sends only the new items after `previous_response_id`: the relay rewrites them as
    # the whole conversation, so the blocks name the call and list the first attempt.
    outputs = [
        item["output"]
        for message in messages
        for item in message.get("input", [])
        if item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 2 and all(BLOCK in output for output in outputs)
    assert "Previous attempts" not in outputs[0] and 'exec_command("cat missing.txt")' in outputs[0]
    assert '  1. exec_command("cat missing.txt")' in outputs[1]
