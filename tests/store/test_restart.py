"""Whole proxy processes over real stores: state survives a restart, replicas share it, and a
Redis outage degrades to stateless recovery and heals by itself."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from recovery_proxy.demo.mock_model.script import pick
from recovery_proxy.demo.scenario import COMPACT_AFTER, COMPACTED, SCRIPT, SYSTEM, TASK, run_tool

ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
FIRST_ATTEMPT = '1. read_file("src/config.ts") -> not_found: the same error'
Messages = list[dict[str, Any]]


def assistant_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def failed_read(call_id: str, path: str = "src/config.ts") -> Messages:
    """An assistant read_file call and its ENOENT result."""
    error = f"Error: ENOENT: no such file or directory, open '{path}'"
    return [
        assistant_call(call_id, "read_file", path=path),
        {"role": "tool", "tool_call_id": call_id, "content": error},
    ]


def opening() -> Messages:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]


def compacted() -> Messages:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": COMPACTED}]


def tool_text(received: dict[str, Any], call_id: str) -> str:
    """The content of the tool result `call_id` as the model received it."""
    for message in received["messages"]:
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return str(message["content"])
    raise AssertionError(f"no tool result {call_id} in {received['messages']}")


def system_text(received: dict[str, Any]) -> str:
    return str(received["messages"][0]["content"])


def outages(metrics: str) -> float:
    found = re.search(r"^recovery_proxy_store_outages_total (\S+)$", metrics, re.MULTILINE)
    assert found, metrics
    return float(found.group(1))


def store_spec(kind: str, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:{request.getfixturevalue('tmp_path') / 'sessions.db'}"
    if kind == "redis":
        return str(request.getfixturevalue("redis_url"))
    return kind


@pytest.mark.parametrize(
    ("kind", "persistent"), [("sqlite", True), ("redis", True), ("memory", False)]
)
def test_failures_survive_a_restart(
    kind: str, persistent: bool, request: pytest.FixtureRequest, mock_model, proxies
) -> None:
    """memory is the control: the same script shows what losing the state looks like."""
    model, upstream = mock_model
    proxy = proxies(upstream, store_spec(kind, request))
    session = f"restart-{kind}"

    turn1 = [*opening(), *failed_read("call_1")]
    assert proxy.chat(turn1, session).status_code == 200
    first_block = tool_text(model.state.received[-1], "call_1")
    assert "[Error Recovery Context]" in first_block
    assert "Previous attempts" not in first_block

    proxy.restart()
    turn2 = [*turn1, *failed_read("call_2")]
    assert proxy.chat(turn2, session).status_code == 200
    received = model.state.received[-1]
    if persistent:
        assert tool_text(received, "call_1") == first_block  # re-applied byte for byte
    else:  # state lost: first sight, history forwarded as sent (prompt cache kept)
        assert tool_text(received, "call_1") == ENOENT
    second_block = tool_text(received, "call_2")
    assert f"Previous attempts (this session):\n  {FIRST_ATTEMPT}" in second_block

    proxy.restart()
    assert proxy.chat(compacted(), session).status_code == 200
    assert outages(proxy.metrics()) == 0.0  # the store answered: nothing failed open
    system = system_text(model.state.received[-1])
    if not persistent:
        assert system == SYSTEM
        return
    assert system.startswith(SYSTEM + "\n\n## Recent failures")
    # The newest read_file failure, numbered as the second turn: the process that saw call_2
    # had loaded call_1's turn from the store, and this one loaded both.
    assert f'- [not_found] read_file("src/config.ts") failed (turn 2): "{ENOENT}"' in system


def agent_requests() -> list[Messages]:
    """The demo's agent session as the list of requests the agent sends: repeated failures,
    a loop, exploration, a compaction, then a failure after it (replayed without a proxy, the
    script's turn after the compaction is the one a model without the summary takes)."""
    messages = opening()
    requests: list[Messages] = []
    for n in range(len(SCRIPT)):
        requests.append([dict(m) for m in messages])
        reply = pick(SCRIPT, n, {"messages": messages})
        messages.append(reply)
        for call in reply.get("tool_calls") or []:
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            if call["id"] == COMPACT_AFTER:
                messages = compacted()
    return requests


def test_two_replicas_behave_like_one(redis_url: str, mock_model, proxies) -> None:
    model, upstream = mock_model
    first, second = proxies(upstream, redis_url), proxies(upstream, redis_url)
    requests = agent_requests()

    for messages in requests:
        assert first.chat(messages, "one-process").status_code == 200
    alone = [body["messages"] for body in model.state.received]
    model.state.received.clear()

    for n, messages in enumerate(requests):
        replica = (first, second)[n % 2]
        assert replica.chat(messages, "two-replicas").status_code == 200
    shared = [body["messages"] for body in model.state.received]

    assert shared == alone
    assert outages(first.metrics()) == outages(second.metrics()) == 0.0
    everything = json.dumps(shared)
    assert "STOP: occurrence #3" in everything  # the escalation needs all three failures
    assert "## Recent failures" in everything  # the summary needs the pre-compaction records


def test_redis_outage_fails_open_and_heals(own_redis, mock_model, proxies) -> None:
    model, upstream = mock_model
    proxy = proxies(upstream, own_redis.url)
    session = "outage"
    messages = [*opening(), *failed_read("call_1")]
    assert proxy.chat(messages, session).status_code == 200
    with own_redis.client() as client:
        assert len(client.keys("recovery-proxy:*")) == 1

    own_redis.stop()
    for n in range(2, 5):
        messages += failed_read(f"call_{n}")
        response = proxy.chat(messages, session)
        assert response.status_code == 200
        block = tool_text(model.state.received[-1], f"call_{n}")
        # Stateless recovery: the earlier attempts the conversation still shows.
        assert "[Error Recovery Context]" in block
        assert FIRST_ATTEMPT in block
    assert outages(proxy.metrics()) == 1.0  # one outage, however many requests met it

    own_redis.start()  # same port, empty: nothing was persisted
    messages += failed_read("call_5", path="src/settings.ts")
    assert proxy.chat(messages, session).status_code == 200
    with own_redis.client() as client:
        assert len(client.keys("recovery-proxy:*")) == 1
    assert proxy.chat(compacted(), session).status_code == 200
    system = system_text(model.state.received[-1])
    assert "## Recent failures" in system  # only the store can remember across a compaction
    assert "src/settings.ts" in system
    assert outages(proxy.metrics()) == 1.0
    assert "session store reachable again" in proxy.log.read_text()


def test_three_edit_failures_on_three_files_survive_a_sqlite_restart(
    request: pytest.FixtureRequest, mock_model, proxies
) -> None:
    """Every distinct failure is in the summary (dedup only to make room), also when the
    records come back from SQLite in a new process."""
    model, upstream = mock_model
    proxy = proxies(upstream, store_spec("sqlite", request))
    mismatch = "String to replace not found in file."
    files = ("src/api/users.py", "src/api/orders.py", "src/api/billing.py")
    messages = opening()
    for n, path in enumerate(files):
        messages.append(assistant_call(f"call_e{n}", "edit_file", path=path, old_string="def h("))
        messages.append({"role": "tool", "tool_call_id": f"call_e{n}", "content": mismatch})
        assert proxy.chat(messages, "three-edits").status_code == 200
    proxy.restart()
    assert proxy.chat(compacted(), "three-edits").status_code == 200
    system = system_text(model.state.received[-1])
    for path in files:
        assert f'- [edit_mismatch] edit_file("{path}") failed (turn' in system
        assert f': "{mismatch}"' in system
