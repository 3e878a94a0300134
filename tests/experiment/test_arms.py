"""The A/B control arm over HTTP (issue 14): control sessions reach the provider exactly as
the client sent them while still tracked; treatment sessions get recovery; the report over a
real SQLite store counts both arms; `recovery-proxy report` prints it."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.config import Settings
from recovery_proxy.core.state import SessionState
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.experiment.report import build_report
from recovery_proxy.session.keys import scoped, tenant_of
from recovery_proxy.store import open_store
from tests.agent import ScriptedAgent
from tests.conftest import UPSTREAM, local_rules, make_settings, proxy_client
from tests.upstream import upstream_mock

ROOT = Path(__file__).resolve().parents[2]
FRACTION = 0.5
API_KEY = "sk-tenant-a"  # ScriptedAgent's default credential
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
MAKE = "make: *** [Makefile:3: all] Error 2"


def key_of(name: str, api_key: str = API_KEY) -> str:
    """The session key the proxy derives for `X-Session-Id: name` (or `/s/name/`)."""
    salt = Settings().session_salt
    return scoped(tenant_of({"authorization": f"Bearer {api_key}"}, salt), f"h:{name}")


def names_in(arm: str, count: int, fraction: float = FRACTION) -> list[str]:
    """`count` session names that `arm_of` puts in `arm` (the first found: each key costs a
    settings load)."""
    names = (f"ab-{n}" for n in range(10_000))
    return list(itertools.islice((n for n in names if arm_of(key_of(n), fraction) == arm), count))


def sqlite_settings(tmp_path: Path, **extra: Any) -> Settings:
    return make_settings(
        store=f"sqlite:{tmp_path / 'sessions.db'}", control_fraction=FRACTION, **extra
    )


async def stored(settings: Settings) -> list[tuple[str, SessionState]]:
    store = await open_store(settings)
    try:
        return await store.list_sessions()
    finally:
        await store.close()


async def post_raw(
    client: httpx.AsyncClient, path: str, body: bytes, session: str
) -> tuple[httpx.Response, bytes]:
    """Send `body` as is; return the response and the bytes the provider received."""
    with upstream_mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").respond(json={"choices": []})
        response = await client.post(
            path,
            content=body,
            headers={
                "Authorization": f"Bearer {API_KEY}",
                "X-Session-Id": session,
                "content-type": "application/json",
            },
        )
    return response, route.calls.last.request.content


def odd_bytes(agent: ScriptedAgent) -> bytes:
    """The agent's request as some clients format it: indented, unknown fields, non-ASCII."""
    body = {"model": agent.model, "x_vendor": {"z": 1, "a": [2]}, "messages": agent.messages}
    return json.dumps(body, indent=1, ensure_ascii=False).encode()


async def test_control_is_forwarded_byte_for_byte_yet_tracked(tmp_path) -> None:
    (control,) = names_in("control", 1)
    (treated,) = names_in("treatment", 1)
    settings = sqlite_settings(tmp_path)
    async with proxy_client(settings) as client:
        agents = {name: ScriptedAgent(client, session=name) for name in (control, treated)}
        script = [
            ("edit_file", {"path": "src/config.ts", "old": "3000", "new": "8080"}, ENOENT),
            ("read_file", {"path": "src/config.ts"}, ENOENT),
            ("list_dir", {"path": "src"}, "index.ts\nserver.ts — ünïcode"),
        ]
        for tool, args, output in script:
            for name, agent in agents.items():
                agent.add_call(tool, args, output)
                sent = odd_bytes(agent)
                response, received = await post_raw(client, "/v1/chat/completions", sent, name)
                assert response.status_code == 200
                if name == control:
                    assert received == sent  # untouched, formatting and all
                    assert response.headers["x-recovery-proxy-arm"] == "control"
                    assert response.headers["x-recovery-proxy-injected"] == "0"
                    assert response.headers["x-recovery-proxy-reapplied"] == "0"
                else:
                    assert response.headers["x-recovery-proxy-arm"] == "treatment"
                    assert received != sent
                    if tool != "list_dir":
                        assert b"[Error Recovery Context]" in received
                assert response.headers["x-recovery-proxy-session"] == key_of(name)
    states = dict(await stored(settings))
    for name in (control, treated):
        stats = states[key_of(name)].stats
        assert (stats.results, stats.failures, stats.repeat_failures) == (3, 2, 1)
        assert (stats.streaks, stats.streak_total, stats.loop_notices) == (1, 2, 1)
    assert states[key_of(control)].stats.tokens_injected == 0
    assert states[key_of(treated)].stats.tokens_injected > 0
    # The control timeline shows what would have been injected: the same as treatment.
    kinds = [[e.kind for e in states[key_of(n)].timeline] for n in (control, treated)]
    assert kinds[0] == kinds[1] == ["block", "block", "notice"]


async def test_no_arm_header_without_an_experiment(client) -> None:
    agent = ScriptedAgent(client, session=names_in("control", 1)[0])
    response = await agent.call("read_file", {"path": "src/config.ts"}, ENOENT)
    assert "x-recovery-proxy-arm" not in response.headers
    assert "[Error Recovery Context]" in agent.last_tool_text  # fraction 0: all treatment


async def test_block_escalation_never_stops_a_control_session(tmp_path) -> None:
    rules = local_rules(
        tmp_path,
        {
            "consecutive_failures: 5 ": "consecutive_failures: 2 ",
            "action: annotate ": "action: block ",
        },
    )
    settings = sqlite_settings(tmp_path, rules=rules)
    (control,) = names_in("control", 1)
    (treated,) = names_in("treatment", 1)
    async with proxy_client(settings) as client:
        statuses: dict[str, list[int]] = {}
        for name in (control, treated):
            agent = ScriptedAgent(client, session=name)
            for command in ("make", "make -j1", "make -k"):
                statuses.setdefault(name, []).append(
                    (await agent.call("bash", {"command": command}, MAKE)).status_code
                )
            if name == control:
                assert all(
                    "[Error" not in str(m["content"]) for m in agent.forwarded[-1]["messages"]
                )
    assert statuses[control] == [200, 200, 200]
    assert statuses[treated][:2] == [200, 409]
    states = dict(await stored(settings))
    assert states[key_of(control)].stats.escalations == 2  # would have blocked twice
    assert [e.kind for e in states[key_of(control)].timeline].count("escalation") == 2


# Three agent scripts, each run once in each arm: the same behaviour, so every difference is 0.
SCRIPTS: list[list[tuple[str, dict[str, Any], str]]] = [
    [  # a repeat, then recovery: 3 results, 2 failures, 1 repeat, one streak of 2
        ("read_file", {"path": "src/config.ts"}, ENOENT),
        ("edit_file", {"path": "src/config.ts"}, ENOENT),
        ("list_dir", {"path": "src"}, "index.ts"),
    ],
    [  # one failure, then recovery: 2 results, 1 failure, 0 repeats, one streak of 1
        ("bash", {"command": "make"}, MAKE),
        ("bash", {"command": "make docs"}, "built docs"),
    ],
    [  # stuck: 3 results, 3 failures, 2 repeats, a streak of 3 still open
        ("read_file", {"path": "a.ts"}, ENOENT.replace("src/config.ts", "a.ts")),
        ("read_file", {"path": "a.ts"}, ENOENT.replace("src/config.ts", "a.ts")),
        ("read_file", {"path": "a.ts"}, ENOENT.replace("src/config.ts", "a.ts")),
    ],
]
REPEAT_RATES = [1 / 2, 0 / 1, 2 / 3]
STREAKS = [2, 1, 3]


async def run_scripts(settings: Settings) -> None:
    names = {"control": names_in("control", 3), "treatment": names_in("treatment", 3)}
    async with proxy_client(settings) as client:
        for arm, arm_names in names.items():
            for name, script in zip(arm_names, SCRIPTS, strict=True):
                agent = ScriptedAgent(client, session=name, task=f"Task of {name}")
                for tool, args, output in script:
                    await agent.call(tool, args, output)
                assert agent.responses[-1].headers["x-recovery-proxy-arm"] == arm


async def test_report_over_a_real_sqlite_store(tmp_path) -> None:
    settings = sqlite_settings(tmp_path)
    await run_scripts(settings)
    sessions = await stored(settings)
    report = build_report(sessions, FRACTION)
    for arm in ("treatment", "control"):
        row = report[arm]
        assert row["sessions"] == 3
        assert (row["tool_results"], row["failures"], row["repeat_failures"]) == (8, 6, 3)
        assert row["repeat_failure_rate"] == pytest.approx(3 / 6)
        assert row["mean_streak"] == pytest.approx(6 / 3)
        per_session = row["per_session"]["repeat_failure_rate"]
        assert per_session == {"n": 3, "mean": pytest.approx(sum(REPEAT_RATES) / 3)}
    assert report["treatment"]["tokens_injected"] > 0 == report["control"]["tokens_injected"]
    assert report["treatment"]["loop_notices"] == report["control"]["loop_notices"] > 0
    for metric, row in report["difference"].items():
        assert row["n_treatment"] == row["n_control"] == 3, metric
        assert row["difference"] == pytest.approx(0.0, abs=1e-12), metric
        low, high = row["ci95"]
        assert low < 0 < high, metric  # the sessions differ: a real interval around 0
    # The same sessions, read with no control fraction: all treatment, no interval.
    single = build_report(sessions, 0.0)
    assert single["treatment"]["sessions"] == 6 and single["control"]["sessions"] == 0
    assert single["difference"]["mean_streak"]["ci95"] is None
    assert "at least 2 sessions" in single["difference"]["mean_streak"]["note"]


def test_report_command_prints_json_and_text(tmp_path) -> None:
    settings = sqlite_settings(tmp_path)
    asyncio.run(run_scripts(settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    env["RECOVERY_PROXY_CONTROL_FRACTION"] = str(FRACTION)
    store = f"sqlite:{settings.store.path}"
    command = [sys.executable, "-m", "recovery_proxy", "report", "--store", store]
    done = subprocess.run(
        [*command, "--json"], capture_output=True, env=env, cwd=ROOT, timeout=60, check=True
    )
    report = orjson.loads(done.stdout)
    assert report["control_fraction"] == FRACTION
    assert report["treatment"]["sessions"] == report["control"]["sessions"] == 3
    assert report["control"]["failures"] == 6
    assert report["difference"]["repeat_failure_rate"]["ci95"] is not None
    text = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, timeout=60, check=True)
    out = text.stdout.decode()
    assert "A/B report (control fraction 0.5)" in out
    assert "repeat-failure rate" in out and "95% Welch t interval" in out
    assert f"6 sessions read from {tmp_path / 'sessions.db'}" in out
    # --control-fraction overrides the environment: 0 puts every session in treatment.
    zero = subprocess.run(
        [*command, "--json", "--control-fraction", "0"],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert orjson.loads(zero.stdout)["control"]["sessions"] == 0


def test_report_command_refuses_the_memory_store_and_a_missing_file(tmp_path, capsys) -> None:
    from recovery_proxy.cli.main import main

    assert main(["report", "--store", "memory"]) == 2
    assert "memory store lives inside the running proxy" in capsys.readouterr().err
    missing = tmp_path / "nowhere.db"
    assert (
        main(["report", "--store", f"sqlite:{missing}"]) == 2
    )  # a usage problem, like any bad --store
    assert f"no session store at {missing}" in capsys.readouterr().err
    assert not missing.exists()
