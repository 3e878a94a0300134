"""`recovery-proxy sessions list` over a SQLite file the real proxy filled: requests go through
the app over HTTP (path, header and fingerprinted sessions); the keys listed are exactly the
`x-recovery-proxy-session` headers the proxy answered with, and `sessions purge --key` takes
them."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from recovery_proxy.cli.main import main
from recovery_proxy.demo.mock_model import completion
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer
from recovery_proxy.session.keys import tenant_of
from recovery_proxy.store.sqlite import SqliteStore
from tests.conftest import make_settings
from tests.upstream import ROOT, upstream_mock

SALT = "recovery-proxy"
ENOENT = "Error: ENOENT: no such file or directory, open 'src/config.ts'"


def chat(result: str, task: str) -> dict[str, Any]:
    call = {
        "id": "call_Vb27pLq",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/config.ts"}'},
    }
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a coding agent working in /repo."},
            {"role": "user", "content": task},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_Vb27pLq", "content": result},
        ],
    }


def fill(spec: str) -> dict[str, str]:
    """Three sessions through the real proxy; their keys, from the response headers."""
    answer = completion({"role": "assistant", "content": "Looking at it."}, "gpt-4o-mini")
    keys: dict[str, str] = {}
    with upstream_mock() as mock:
        mock.post(f"{ROOT}/v1/chat/completions").respond(200, json=answer)
        app = create_app(make_settings(store=spec))
        with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as client:
            sends = {
                "path": ("/s/alpha-7f3c/v1/chat/completions", {}, "sk-alpha", ENOENT),
                "header": ("/v1/chat/completions", {"X-Session-Id": "beta"}, "sk-beta", ENOENT),
                "fingerprint": ("/v1/chat/completions", {}, "sk-alpha", "export const x = 1;\n"),
            }
            for name, (path, headers, key, result) in sends.items():
                body = chat(result, f"Task of the {name} session: which port?")
                auth = {"Authorization": f"Bearer {key}", **headers}
                response = client.post(path, json=body, headers=auth)
                assert response.status_code == 200, response.text
                keys[name] = response.headers["x-recovery-proxy-session"]
    return keys


def listed(spec: str, capsys: pytest.CaptureFixture[str], *flags: str) -> list[dict[str, Any]]:
    assert main(["sessions", "list", "--store", spec, "--json", *flags]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


def test_sessions_list_shows_what_the_proxy_stored_and_purge_takes_its_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECOVERY_PROXY_CONTROL_FRACTION", raising=False)
    spec = f"sqlite:{tmp_path / 'sessions.db'}"
    started = time.time()
    keys = fill(spec)

    async def stored() -> list[tuple[str, Any]]:
        store = SqliteStore(tmp_path / "sessions.db")
        try:
            return await store.list_sessions()
        finally:
            await store.close()

    states = dict(asyncio.run(stored()))
    index = [key for key, state in states.items() if state.links]
    assert index, "a fingerprinted session keeps a continuity index in the store"

    rows = listed(spec, capsys)
    # One row per session, exactly the keys the proxy answered with; no index states.
    assert sorted(row["key"] for row in rows) == sorted(keys.values())
    by_key = {row["key"]: row for row in rows}
    path_row = by_key[keys["path"]]
    assert path_row["tenant"] == tenant_of({"authorization": "Bearer sk-alpha"}, SALT)
    assert by_key[keys["header"]]["tenant"] == tenant_of({"authorization": "Bearer sk-beta"}, SALT)
    assert by_key[keys["fingerprint"]]["tenant"] == path_row["tenant"]  # same credential
    for key, row in by_key.items():
        state = states[key]
        assert row["key"].startswith(row["tenant"] + ":")
        assert row["arm"] == "treatment"  # no control fraction set
        assert started - 1 <= row["updated"] <= time.time()
        assert row["updated"] == state.updated
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+s ago\)", row["last_seen"])
        assert (row["results"], row["failures"]) == (state.stats.results, state.stats.failures)
        assert row["compactions"] == len(state.compactions) == 0
    assert [row["updated"] for row in rows] == sorted(
        (row["updated"] for row in rows), reverse=True
    )  # most recent first
    assert len(listed(spec, capsys, "--limit", "1")) == 1
    # Each session by the name its agent gave it; a fingerprinted one by its first user line.
    assert by_key[keys["path"]]["name"] == "alpha-7f3c"
    assert by_key[keys["header"]]["name"] == "beta"
    assert by_key[keys["fingerprint"]]["name"] == (
        "fingerprint: Task of the fingerprint session: which port?"
    )
    assert [row["key"] for row in listed(spec, capsys, "--name", "ALPHA")] == [keys["path"]]

    # The human table: a header and one line per session.
    assert main(["sessions", "list", "--store", spec]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["name", "key", "tenant", "arm"]
    assert len(table) == 1 + len(keys)
    assert any(line.startswith("alpha-7f3c") and keys["path"] in line for line in table)

    # A control fraction of 1 puts every session in the control arm.
    monkeypatch.setenv("RECOVERY_PROXY_CONTROL_FRACTION", "1.0")
    assert {row["arm"] for row in listed(spec, capsys)} == {"control"}
    monkeypatch.delenv("RECOVERY_PROXY_CONTROL_FRACTION")

    # A listed key is what purge takes.
    assert main(["sessions", "purge", "--store", spec, "--key", keys["path"]]) == 0
    assert f"removed 1 session (key {keys['path']!r})" in capsys.readouterr().out
    assert sorted(row["key"] for row in listed(spec, capsys)) == sorted(
        [keys["header"], keys["fingerprint"]]
    )

    # A name that matches nothing: exit 1 and a hint, not a silent 0. A name purges its own.
    assert main(["sessions", "purge", "--store", spec, "--session", "fix-1234"]) == 1
    assert "no session has the name 'fix-1234'" in capsys.readouterr().err
    assert main(["sessions", "purge", "--store", spec, "--session", "beta"]) == 0
    assert "removed 1 session (name 'beta')" in capsys.readouterr().out
    assert [row["key"] for row in listed(spec, capsys)] == [keys["fingerprint"]]

    assert main(["sessions", "purge", "--store", spec, "--all"]) == 0
    capsys.readouterr()
    assert listed(spec, capsys) == []
    assert main(["sessions", "list", "--store", spec]) == 0
    assert "no sessions in" in capsys.readouterr().out


def test_sessions_list_refuses_the_memory_store_and_a_bad_spec(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sessions", "list", "--store", "memory"]) == 2
    assert "the memory store lives inside the running proxy" in capsys.readouterr().err
    assert main(["sessions", "list", "--store", "etcd://127.0.0.1:2379"]) == 2
    assert "unknown session store" in capsys.readouterr().err
