"""A session's outcome (proxy/session/outcome.py) in every real store: it round-trips and
survives a reopen, a report never creates a session (nor touches a bookkeeping state), the
latest report wins, and reports racing the tracker's updates on one session lose nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from recovery_proxy.core.state import Link, SessionState
from recovery_proxy.session.keys import scoped
from recovery_proxy.session.outcome import OutcomeReport, UnknownSession, record_outcome
from recovery_proxy.store import MemoryStore, SqliteStore, Store
from recovery_proxy.store.redis import RedisStore

TENANT = "5f1c0e2a9b7d3c41"
KEY = scoped(TENANT, "h:fix-flaky-test-4411")
N = 20

Reopen = Callable[[], Awaitable[Store]]


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Reopen]:
    """Opens the store under test; for sqlite and redis each call is a fresh connection to the
    same data (a restart), for memory the same store."""
    opened: list[Store] = []

    async def reopen() -> Store:
        store: Store
        if request.param == "memory":
            if opened:
                return opened[0]
            store = MemoryStore(max_sessions=100, ttl_seconds=3600)
        elif request.param == "sqlite":
            store = SqliteStore(tmp_path / "sessions.db", ttl_seconds=3600)
        else:
            store = RedisStore(request.getfixturevalue("redis_url"), "test-outcome:", 3600)
        opened.append(store)
        return store

    yield reopen
    for store in opened:
        await store.close()


def seen_call(index: int) -> Callable[[SessionState], None]:
    """What the tracker does to a state, in miniature: a call judged, a turn, a date."""

    def apply(state: SessionState) -> None:
        state.seen[f"call_{index:03d}"] = True
        state.turn += 1
        state.updated = time.time()

    return apply


async def test_an_outcome_round_trips_and_survives_a_reopen(stores: Reopen) -> None:
    store = await stores()
    await store.update(KEY, seen_call(0))
    report = OutcomeReport(result="succeeded", score=0.75, note="all 212 tests pass")
    done = await record_outcome(store, [KEY], report, "harness", now=1_700_000_000.0)
    assert done.key == KEY
    again = await (await stores()).get(KEY)
    assert again is not None and again.outcome is not None
    assert again.outcome.model_dump() == {
        "result": "succeeded",
        "score": 0.75,
        "note": "all 212 tests pass",
        "time": 1_700_000_000.0,
        "by": "harness",
    }
    assert (again.turn, list(again.seen)) == (1, ["call_000"])  # nothing else changed


async def test_a_report_never_creates_a_session_nor_touches_bookkeeping(stores: Reopen) -> None:
    store = await stores()
    report = OutcomeReport(result="failed")
    with pytest.raises(UnknownSession):
        await record_outcome(store, [KEY], report, "harness")
    assert await store.get(KEY) is None
    index = scoped(TENANT, "known-fixes")

    def bookkeeping(state: SessionState) -> None:
        state.links = {"known fixes": Link(key=index, touched=1.0)}
        state.updated = time.time()

    await store.update(index, bookkeeping)
    with pytest.raises(UnknownSession):
        await record_outcome(store, [index], report, "operator")
    state = await store.get(index)
    assert state is not None and state.outcome is None
    # The first live one of several candidate keys is the one reported.
    await store.update(KEY, seen_call(1))
    done = await record_outcome(store, [scoped(TENANT, "h:other"), index, KEY], report, "harness")
    assert done.key == KEY


async def test_reports_racing_requests_lose_nothing_and_the_latest_wins(stores: Reopen) -> None:
    store = await stores()
    await store.update(KEY, seen_call(0))
    results = ("succeeded", "failed", "abandoned")
    notes = [f"report {n}" for n in range(N)]

    async def report(n: int) -> None:
        outcome = OutcomeReport(result=results[n % 3], score=n / N, note=notes[n])
        await record_outcome(store, [KEY], outcome, "harness")

    await asyncio.gather(
        *(job for n in range(N) for job in (store.update(KEY, seen_call(n + 1)), report(n)))
    )
    state = await store.get(KEY)
    assert state is not None and state.outcome is not None
    assert state.turn == N + 1 and len(state.seen) == N + 1  # every request's change kept
    assert state.outcome.note in notes
    n = notes.index(state.outcome.note)
    assert (state.outcome.result, state.outcome.score) == (
        results[n % 3],
        n / N,
    )  # one report, whole
    await record_outcome(store, [KEY], OutcomeReport(result="abandoned"), "operator")
    final = await (await stores()).get(KEY)
    assert final is not None and final.outcome is not None
    assert (final.outcome.result, final.outcome.score, final.outcome.by) == (
        "abandoned",
        None,
        "operator",
    )
    assert final.turn == N + 1
