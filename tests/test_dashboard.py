"""docs/grafana/recovery-proxy.json is built on what the proxy exports: every metric and label
its queries name is on a real app's /metrics after real traffic, and every metric the proxy
exports has a panel."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from recovery_proxy.metrics import Metrics
from recovery_proxy.rules.load import default_rules_dir
from recovery_proxy.server.background import free_port
from tests.agent import ScriptedAgent
from tests.conftest import ROOT, UPSTREAM, make_settings, proxy_client
from tests.upstream import upstream_mock

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "recovery-proxy.json"
TOKEN = "dashboard-admin-token"
# Added by Prometheus when it scrapes (the target's), never on /metrics itself.
TARGET_LABELS = {"job", "instance"}
METRIC = re.compile(r"\brecovery_proxy_[a-z0-9_]+\b")
SELECTOR = re.compile(r"\{([^{}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")
LEGEND = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


def load() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out += panel.get("panels", [])
    return out


def queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(PromQL, legend) of every panel target and template variable."""
    found = [
        (target["expr"], target.get("legendFormat", ""))
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            found.append((query["query"], ""))
    return found


def labels_used(expr: str, legend: str) -> set[str]:
    """Label names an expression filters or groups on, and its legend shows."""
    used = {name for selector in SELECTOR.findall(expr) for name in MATCHER.findall(selector)}
    for grouping in GROUPING.findall(expr):
        used |= {name.strip() for name in grouping.split(",") if name.strip()}
    used |= set(LEGEND.findall(legend))
    if expr.startswith("label_values("):  # label_values(metric, label)
        used.add(expr.rstrip(")").rsplit(",", 1)[1].strip())
    return used - TARGET_LABELS


def exported(text: str) -> dict[str, set[str]]:
    """Each sample name on /metrics (`_total`, `_bucket`, `_sum`, `_count`, ...) and the
    label names its series carry."""
    samples: dict[str, set[str]] = defaultdict(set)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name] |= set(sample.labels)
    return samples


def chat(text: str = "hello") -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}


@pytest.fixture
async def scraped(tmp_path: Path) -> dict[str, set[str]]:
    """/metrics of a real app after traffic on every route: failures, blocks, an escalation,
    a compaction summary, an outcome report, an unreachable upstream, a rules reload."""
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    closed = f"http://127.0.0.1:{free_port()}"
    settings = make_settings(admin_token=TOKEN, rules=rules, gemini_upstream=closed)
    async with proxy_client(settings) as client:
        agent = ScriptedAgent(client, session="dashboard")
        for n in range(5):  # five failures in a row: blocks, then an escalation
            error = f"Error: ENOENT: no such file or directory, open 'src/missing{n}.ts'"
            response = await agent.call("read_file", {"path": f"src/missing{n}.ts"}, error)
            assert response.status_code == 200
        outcome = await client.post(  # its harness reports how it ended
            "/v1/recovery/sessions/dashboard/outcome",
            json={"result": "failed"},
            headers=agent.headers,
        )
        assert outcome.status_code == 200, outcome.text
        with upstream_mock() as mock:
            mock.post(f"{UPSTREAM}/responses").respond(200, json={"output": []})
            mock.post(f"{ROOT}/v1/messages").respond(200, json={"content": []})
            mock.get(f"{UPSTREAM}/models").respond(200, json={"data": []})
            body = {"model": "gpt-4o-mini", "input": "hi"}
            assert (await client.post("/v1/responses", json=body)).status_code == 200
            body = {**chat(), "model": "claude-sonnet-4-5", "max_tokens": 8}
            assert (await client.post("/v1/messages", json=body)).status_code == 200
            assert (await client.get("/v1/models")).status_code == 200
        gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        path = "/v1beta/models/gemini-2.5-flash:generateContent"
        assert (await client.post(path, json=gemini)).status_code == 502  # upstream unreachable
        (rules / "40-local.yaml").write_text("thresholds:\n  systemic_window: 7\n")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        reload = await client.post("/admin/rules/reload", headers=auth)
        assert reload.json()["status"] == "applied", reload.text
        text = (await client.get("/metrics")).text
    return exported(text)


def test_the_dashboard_is_an_importable_grafana_dashboard() -> None:
    dashboard = load()
    assert dashboard["uid"] and dashboard["title"] == "recovery-proxy"
    assert dashboard["id"] is None  # Grafana assigns one on import
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    every = panels(dashboard)
    assert len({p["id"] for p in every}) == len(every)
    for panel in every:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and all(
            t["datasource"] == panel["datasource"] for t in panel["targets"]
        )
        position = panel["gridPos"]
        assert position["x"] >= 0 and position["x"] + position["w"] <= 24


def test_every_metric_and_label_the_dashboard_names_is_exported(
    scraped: dict[str, set[str]],
) -> None:
    problems = []
    for expr, legend in queries(load()):
        names = set(METRIC.findall(expr))
        assert names, f"a query on no recovery_proxy metric: {expr}"
        for name in names:
            if name not in scraped:
                problems.append(f"{name} is not on /metrics ({expr})")
                continue
            missing = labels_used(expr, legend) - scraped[name]
            if missing:
                problems.append(f"{name} has no label {sorted(missing)} ({expr})")
    assert problems == []


def test_every_exported_metric_has_a_panel() -> None:
    named = {name for expr, _ in queries(load()) for name in METRIC.findall(expr)}
    families = {metric.name for metric in Metrics().registry.collect()}
    unused = {f for f in families if not any(n.startswith(f) for n in named)}
    assert unused == set()


def test_the_panels_the_operators_asked_for() -> None:
    titles = " | ".join(p["title"] for p in panels(load()))
    for words in (
        "Requests/s by route",
        "overhead p50 / p99",
        "failures seen, by category",
        "Injections, by kind",
        "Escalations",
        "Compactions",
        "Upstream errors",
        "store outages",
        "Rules reloads",
        "rules version",
    ):
        assert words.lower() in titles.lower(), words


def test_the_label_parser_sees_selectors_groupings_and_legends() -> None:
    expr = 'histogram_quantile(0.99, sum by (le, route) (rate(x{job=~"$job",kind!="a"}[5m])))'
    assert labels_used(expr, "p99 {{route}} {{ arm }}") == {"le", "route", "kind", "arm"}
    assert labels_used("label_values(recovery_proxy_requests_total, route)", "") == {"route"}
    assert exported('# TYPE a counter\na_total{kind="x"} 1\n') == {"a_total": {"kind"}}
