"""Outcomes in the live A/B, end to end over real HTTP: the proxy (uvicorn on loopback, a
SQLite store, a control fraction of 0.5) in front of a mock provider that reports usage; 22
agent sessions under three credentials fail tool calls through it; each harness reports its
session's outcome with its own credential; `GET /admin/report` then shows per-arm success
rates with their Wilson intervals, Newcombe's interval for the difference and the tokens per
successful session the provider reported. A harness holding another credential gets a 404
and changes nothing."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.core.state import OutcomeResult
from recovery_proxy.experiment.arms import arm_of
from recovery_proxy.experiment.outcomes import format_outcomes
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from recovery_proxy.session.keys import named, scoped, tenant_of
from tests.conftest import UPSTREAM, make_settings
from tests.upstream import upstream_mock

TOKEN = "adm-Hq4n8ZpW2sKx7Lc3"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
FRACTION = 0.5
TEAMS = ("sk-team-atlas-51f0", "sk-team-borealis-9c2e", "sk-team-cygnus-07ad")
LOG = "\n  at Server.listen (node:net:1913:7) EADDRINUSE 0.0.0.0:3000"  # varies the sizes
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"
# Per arm: 10 sessions reported (treatment 9 succeeded / 1 failed; control 3 / 5 failed /
# 2 abandoned) and one never reported. 9/10 vs 3/10 is a case of Newcombe's (1998) tables.
PLAN: dict[str, list[OutcomeResult | None]] = {
    "treatment": ["succeeded"] * 9 + ["failed", None],
    "control": ["succeeded"] * 3 + ["failed"] * 5 + ["abandoned"] * 2 + [None],
}


def readme_example() -> list[str]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Outcomes: did the sessions succeed?", 1)[1]
    block = section.split("```\noutcomes (", 1)[1].split("\n```", 1)[0]
    return ("outcomes (" + block).splitlines()


def sessions() -> list[dict[str, Any]]:
    """Session ids with their credential, arm and planned outcome, 11 per arm."""
    wanted = {arm: list(results) for arm, results in PLAN.items()}
    found = []
    numbers = itertools.count()
    while any(wanted.values()):
        n = next(numbers)
        credential = TEAMS[n % len(TEAMS)]
        name = f"ticket-{n:04d}"
        key = scoped(
            tenant_of({"authorization": f"Bearer {credential}"}, "recovery-proxy"), named(name)
        )
        arm = arm_of(key, FRACTION)
        if wanted[arm]:
            result = wanted[arm].pop(0)
            found.append(
                {"name": name, "credential": credential, "key": key, "arm": arm, "result": result}
            )
    return found


def chat(name: str, results: list[str]) -> dict[str, Any]:
    """The agent's request after reading src/config.ts once per result in `results`."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /srv/app."},
        {
            "role": "user",
            "content": f"Fix {name}: the server listens on the wrong port."
            + LOG * (int(name[-4:]) % 7),
        },
    ]
    for i, result in enumerate(results):
        call_id = f"call_{name}_{i}"
        arguments = orjson.dumps({"path": "src/config.ts", "attempt": i}).decode()
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "read_file", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return {"model": "gpt-4o-mini", "messages": messages}


def provider(request: httpx.Request) -> httpx.Response:
    """A chat completion whose usage grows with the request (what the model received), on top
    of a system prompt and tool definitions of 2,000 tokens the mock is spared."""
    prompt = 2_000 + len(request.content) // 4
    usage = {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40}
    answer = {
        "id": "chatcmpl-outcomes",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Checking."},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }
    return httpx.Response(200, json=answer)


async def test_the_report_shows_success_per_arm_with_intervals_and_tokens_per_success(
    tmp_path: Path,
) -> None:
    settings = make_settings(
        admin_token=TOKEN, control_fraction=FRACTION, store=f"sqlite:{tmp_path / 's.db'}"
    )
    planned = sessions()
    tokens: dict[str, int] = {}
    reports: Counter[tuple[str, str]] = Counter()  # sent, by arm and outcome
    with (
        upstream_mock() as mock,
        BackgroundServer(create_app(settings)) as server,
    ):
        mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=provider)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            for s in planned:  # two turns each: a failed read, then the same failure again
                auth = {"Authorization": f"Bearer {s['credential']}", "X-Session-Id": s["name"]}
                tokens[s["key"]] = 0
                for turn in ([ENOENT], [ENOENT, ENOENT]):
                    response = await http.post(
                        "/v1/chat/completions", json=chat(s["name"], turn), headers=auth
                    )
                    assert response.status_code == 200
                    assert response.headers["x-recovery-proxy-session"] == s["key"]
                    assert response.headers["x-recovery-proxy-arm"] == s["arm"]
                    usage = response.json()["usage"]
                    tokens[s["key"]] += usage["prompt_tokens"] + usage["completion_tokens"]
            await until_read(http, planned)

            # Each harness reports with its own credential, by the id it named the session.
            for n, s in enumerate(planned):
                if s["result"] is None:
                    continue
                body = {"result": s["result"], "score": 0.9 if s["result"] == "succeeded" else 0.1}
                if n % 2:  # some report the same outcome twice: counted once
                    await report(http, s, body)
                    reports[s["arm"], s["result"]] += 1
                answer = await report(http, s, body)
                reports[s["arm"], s["result"]] += 1
                assert answer.status_code == 200, answer.text
                assert (answer.json()["session"], answer.json()["arm"]) == (s["key"], s["arm"])

            # Another tenant's harness, with the right session id and even the key: a 404.
            victim = next(s for s in planned if s["result"] is None)
            other = next(c for c in TEAMS if c != victim["credential"])
            for target in (victim["name"], victim["key"]):
                refused = await http.post(
                    f"/v1/recovery/sessions/{target}/outcome",
                    json={"result": "failed"},
                    headers={"Authorization": f"Bearer {other}"},
                )
                assert refused.status_code == 404
                assert refused.json()["error"]["type"] == "not_found"

            report_json = (await http.get("/admin/report", headers=ADMIN)).json()
            detail = (await http.get(f"/admin/sessions/{victim['key']}", headers=ADMIN)).json()
            metrics = (await http.get("/metrics")).text
    assert mock.unmatched == []  # outcomes never reached the provider
    assert detail["outcome"] is None  # the cross-tenant attempt changed nothing

    outcomes = report_json["outcomes"]
    t, c = outcomes["treatment"], outcomes["control"]
    assert (t["sessions"], t["reported"], t["unreported"]) == (11, 10, 1)
    assert (t["succeeded"], t["failed"], t["abandoned"], t["success_rate"]) == (9, 1, 0, 0.9)
    assert (c["sessions"], c["reported"], c["unreported"]) == (11, 10, 1)
    assert (c["succeeded"], c["failed"], c["abandoned"], c["success_rate"]) == (3, 5, 2, 0.3)
    assert t["ci95"] == pytest.approx([0.5958, 0.9821], abs=5e-5)  # Wilson, 9 of 10
    assert c["ci95"] == pytest.approx([0.1078, 0.6032], abs=5e-5)  # Wilson, 3 of 10
    rate = outcomes["difference"]["success_rate"]
    assert rate["difference"] == pytest.approx(0.6)
    assert rate["ci95"] == pytest.approx([0.1705, 0.8090], abs=5e-5)  # Newcombe 1998, II
    assert (t["mean_score"], c["mean_score"]) == (pytest.approx(0.82), pytest.approx(0.34))
    for arm, figures in (("treatment", t), ("control", c)):
        won = [tokens[s["key"]] for s in planned if s["arm"] == arm and s["result"] == "succeeded"]
        assert figures["n_tokens"] == len(won)
        assert figures["tokens_per_success"] == pytest.approx(sum(won) / len(won))
    # Treatment requests carried recovery blocks, control ones went as sent: more tokens.
    assert t["tokens_per_success"] > c["tokens_per_success"]
    assert (
        report_json["treatment"]["repeat_failures"]
        == report_json["control"]["repeat_failures"]
        == 11
    )
    assert format_outcomes(outcomes) == readme_example()  # the README shows this run
    for (arm, result), count in reports.items():  # every report counts in the metric
        assert (
            f'recovery_proxy_outcomes_total{{arm="{arm}",outcome="{result}"}} {count}.0' in metrics
        )


async def report(
    http: httpx.AsyncClient, s: dict[str, Any], body: dict[str, Any]
) -> httpx.Response:
    auth = {"Authorization": f"Bearer {s['credential']}"}
    return await http.post(f"/v1/recovery/sessions/{s['name']}/outcome", json=body, headers=auth)


async def until_read(http: httpx.AsyncClient, planned: list[dict[str, Any]]) -> None:
    """Wait until the proxy has stored both responses of every session (it reads them after
    their last byte went out, in the background)."""
    deadline = time.monotonic() + 20
    pending = [s["key"] for s in planned]
    while pending:
        detail = (await http.get(f"/admin/sessions/{pending[0]}", headers=ADMIN)).json()
        if detail["usage"]["responses"] == 2:
            pending.pop(0)
        else:
            assert time.monotonic() < deadline, f"responses of {pending[0]} not stored"
            await asyncio.sleep(0.02)
