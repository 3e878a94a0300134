"""`recovery-proxy sessions outcome` over a SQLite file the real proxy filled: a person marks a
run by the name `sessions list` shows (or its key); `sessions list` and `report` then show it.
A name two tenants share is refused with both keys; mistakes exit 2 naming the field."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recovery_proxy.cli.main import main
from recovery_proxy.core.state import SessionState
from recovery_proxy.session.keys import named, scoped, tenant_of
from recovery_proxy.store.sqlite import SqliteStore
from tests.store.test_sessions_list import fill


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_name(spec: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    code, out, _ = run(capsys, "sessions", "list", "--store", spec, "--json")
    assert code == 0
    return {row["name"]: row for row in json.loads(out)}


def test_a_person_marks_runs_by_name_or_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECOVERY_PROXY_CONTROL_FRACTION", raising=False)
    spec = f"sqlite:{tmp_path / 'sessions.db'}"
    keys = fill(spec)
    store = ("--store", spec)

    code, out, _ = run(
        capsys, "sessions", "outcome", "alpha-7f3c", "succeeded", "--score", "0.8",
        "--note", "PR merged", *store,
    )  # fmt: skip
    assert code == 0
    assert out == (
        f"session {keys['path']} (alpha-7f3c, treatment): succeeded, score 0.8, note 'PR merged'\n"
    )
    assert run(capsys, "sessions", "outcome", keys["header"], "failed", *store)[0] == 0
    listed = by_name(spec, capsys)
    assert listed["alpha-7f3c"]["outcome"] == "succeeded"
    assert listed["beta"]["outcome"] == "failed"
    fingerprint = next(name for name in listed if name.startswith("fingerprint: "))
    assert listed[fingerprint]["outcome"] is None
    table = run(capsys, "sessions", "list", *store)[1].splitlines()
    assert table[0].split()[-1] == "outcome"
    assert any(line.startswith("alpha-7f3c") and line.endswith("succeeded") for line in table)

    code, out, _ = run(capsys, "report", *store, "--json")
    outcomes = json.loads(out)["outcomes"]["treatment"]
    assert code == 0
    assert (outcomes["reported"], outcomes["succeeded"], outcomes["failed"]) == (2, 1, 1)
    assert (outcomes["unreported"], outcomes["success_rate"]) == (1, 0.5)
    text = run(capsys, "report", *store)[1]
    assert "outcomes (reported sessions only; without one: 1 treatment, 0 control):" in text

    # Re-marking overwrites: the report still counts the session once.
    assert run(capsys, "sessions", "outcome", "beta", "abandoned", *store)[0] == 0
    outcomes = json.loads(run(capsys, "report", *store, "--json")[1])["outcomes"]["treatment"]
    assert (outcomes["reported"], outcomes["failed"], outcomes["abandoned"]) == (2, 0, 1)


def test_an_ambiguous_or_unknown_name_and_bad_values_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"sqlite:{tmp_path / 'sessions.db'}"
    keys = fill(spec)
    store = ("--store", spec)
    other = scoped(tenant_of({"authorization": "Bearer sk-gamma"}, "recovery-proxy"), named("beta"))

    async def copy_beta() -> None:  # another tenant's session named "beta" too
        sqlite = SqliteStore(tmp_path / "sessions.db")
        try:
            beta = await sqlite.get(keys["header"])
            assert beta is not None

            def apply(state: SessionState) -> None:
                state.name, state.updated = beta.name, beta.updated

            await sqlite.update(other, apply)
        finally:
            await sqlite.close()

    asyncio.run(copy_beta())
    code, _, err = run(capsys, "sessions", "outcome", "beta", "succeeded", *store)
    assert code == 1
    assert "2 sessions are named 'beta'" in err
    assert keys["header"] in err and other in err
    assert run(capsys, "sessions", "outcome", other, "succeeded", *store)[0] == 0  # by key

    code, _, err = run(capsys, "sessions", "outcome", "fix-9999", "failed", *store)
    assert code == 1 and "no live session has the name or key 'fix-9999'" in err
    code, _, err = run(capsys, "sessions", "outcome", "beta", "failed", "--score", "1.5", *store)
    assert code == 2 and err == "recovery-proxy: score: Input should be less than or equal to 1\n"
    with pytest.raises(SystemExit) as usage:
        main(["sessions", "outcome", "alpha-7f3c", "won", *store])
    assert usage.value.code == 2 and "invalid choice: 'won'" in capsys.readouterr().err
    code, _, err = run(capsys, "sessions", "outcome", "alpha-7f3c", "failed", "--store", "memory")
    assert code == 2 and "POST /admin/sessions/{key}/outcome" in err
    code, out, _ = run(capsys, "sessions", "list", "--json", *store)
    marked = {row["key"]: row["outcome"] for row in json.loads(out)}
    assert marked == {key: "succeeded" if key == other else None for key in marked}
    assert len(marked) == 4
