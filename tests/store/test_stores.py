"""Every store honours the same contract: atomic updates, expiry, purge; sqlite and redis
also across OS processes. Real parts only: a SQLite file, a redis-server process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from redis.exceptions import RedisError

from recovery_proxy.cli.main import build_parser, main
from recovery_proxy.cli.serve import serve_settings
from recovery_proxy.config import Settings, StoreSpec, default_sqlite_path
from recovery_proxy.core.state import FailureRecord, SessionState
from recovery_proxy.store import MemoryStore, SqliteStore, Store, StoreUnavailable, open_store
from recovery_proxy.store.redis import RedisStore
from tests.store.conftest import ROOT, clean_env

KEY = "5f1c0e2a9b7d3c41:h:agent-run-7f3a"  # tenant hash : session id, as the pipeline makes

StoreFactory = Callable[[float], Awaitable[Store]]


def not_found(call_id: str, turn: int) -> FailureRecord:
    return FailureRecord(
        call_id=call_id,
        operation="read_file",
        target="src/config.ts",
        category="not_found",
        error="Error: ENOENT: no such file or directory, open 'src/config.ts'",
        turn=turn,
        time=time.time(),
    )


def record_call(index: int) -> Callable[[SessionState], int]:
    """What the tracker does to a state, in miniature: mark a call seen, count a turn."""

    def apply(state: SessionState) -> int:
        state.seen[f"c{index}"] = True
        state.turn += 1
        state.updated = time.time()
        return state.turn

    return apply


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Open the store under test with a given TTL; closed after the test."""
    opened: list[Store] = []

    async def make(ttl: float = 3600) -> Store:
        store: Store
        if request.param == "memory":
            store = MemoryStore(max_sessions=1000, ttl_seconds=ttl)
        elif request.param == "sqlite":
            store = SqliteStore(tmp_path / "sessions.db", ttl_seconds=ttl)
        else:
            url = request.getfixturevalue("redis_url")
            store = RedisStore(url, prefix="test-proxy:", ttl_seconds=ttl)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


async def test_update_then_get_round_trip(make_store: StoreFactory) -> None:
    store = await make_store()
    assert await store.get(KEY) is None
    record = not_found("call_1", 1)

    def fail(state: SessionState) -> str:
        state.records.append(record)
        state.annotations["call_1"] = "[Error Recovery Context]\nOperation: read_file"
        state.seen["call_1"] = True
        state.turn = 1
        state.updated = time.time()
        return "recorded"

    assert await store.update(KEY, fail) == "recorded"
    state = await store.get(KEY)
    assert state is not None
    assert state.records == [record]
    assert state.annotations == {"call_1": "[Error Recovery Context]\nOperation: read_file"}
    assert state.turn == 1

    seen_before: list[int] = []
    await store.update(KEY, lambda s: seen_before.append(len(s.records)))
    assert seen_before == [1]  # the next update starts from what was saved
    assert await store.get("5f1c0e2a9b7d3c41:h:another-session") is None


async def test_idle_sessions_expire(make_store: StoreFactory) -> None:
    store = await make_store(ttl=1)
    await store.update(KEY, record_call(1))
    assert (await store.get(KEY)) is not None
    await asyncio.sleep(1.5)
    assert await store.get(KEY) is None
    turns = await store.update(KEY, record_call(2))
    assert turns == 1  # an expired session starts again from empty


async def test_purge_one_then_all(make_store: StoreFactory) -> None:
    store = await make_store()
    keys = [f"5f1c0e2a9b7d3c41:h:run-{n}" for n in range(3)]
    for key in keys:
        await store.update(key, record_call(0))
    assert await store.purge(keys[0]) == 1
    assert await store.purge(keys[0]) == 0
    assert await store.get(keys[0]) is None
    assert await store.get(keys[1]) is not None
    assert await store.purge() == 2
    assert all([await store.get(key) is None for key in keys])
    assert await store.purge() == 0


async def test_sessions_lists_the_most_recent_first(make_store: StoreFactory) -> None:
    store = await make_store()
    keys = [f"5f1c0e2a9b7d3c41:h:list-{n}" for n in range(4)]
    for key in keys:
        await store.update(key, record_call(0))
        await asyncio.sleep(0.01)  # distinct update times
    listed = await store.list_sessions()
    assert [key for key, _ in listed] == keys[::-1]
    assert all(state.turn == 1 and "c0" in state.seen for _, state in listed)
    assert [key for key, _ in await store.list_sessions(limit=2)] == keys[:1:-1]
    await store.purge(keys[0])
    assert keys[0] not in [key for key, _ in await store.list_sessions()]


async def test_fifty_concurrent_updates_on_one_session(make_store: StoreFactory) -> None:
    store = await make_store()
    results = await asyncio.gather(*(store.update(KEY, record_call(i)) for i in range(50)))
    state = await store.get(KEY)
    assert state is not None
    assert state.seen == {f"c{i}": True for i in range(50)}
    assert state.turn == 50
    assert sorted(results) == list(range(1, 51))  # each update saw exactly one predecessor


# A worker process: open the store, say "ready", wait for "go", run its updates concurrently.
WORKER = """
import asyncio, sys, time
from recovery_proxy.config import Settings
from recovery_proxy.store import open_store

spec, key, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def mark(i):
    def apply(state):
        state.seen[f"{worker}-{i}"] = True
        state.turn += 1
        state.updated = time.time()
    return apply

async def run():
    store = await open_store(Settings(store=spec, redis_prefix="test-proxy:"))
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await asyncio.gather(*(store.update(key, mark(i)) for i in range(count)))
    await store.close()
    print("done", flush=True)

asyncio.run(run())
"""


def run_workers(spec: str, workers: int, count: int) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, spec, KEY, f"w{n}", str(count)],
            cwd=ROOT,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(workers)
    ]
    watchdog = threading.Timer(90, lambda: [proc.kill() for proc in procs])  # never hang
    watchdog.start()
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n", proc.stderr.read() if proc.stderr else ""
        for proc in procs:  # all start writing at (nearly) the same moment
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()
            assert out == b"done\n"
    finally:
        watchdog.cancel()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_processes_sharing_a_store_lose_no_update(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = (
        f"sqlite:{tmp_path / 'shared.db'}"
        if kind == "sqlite"
        else request.getfixturevalue("redis_url")
    )
    workers, count = 3, 40
    await asyncio.to_thread(run_workers, spec, workers, count)
    store = await open_store(Settings(store=spec, redis_prefix="test-proxy:"))
    try:
        state = await store.get(KEY)
    finally:
        await store.close()
    assert state is not None
    assert state.turn == workers * count
    assert set(state.seen) == {f"w{n}-{i}" for n in range(workers) for i in range(count)}


async def test_memory_store_packs_sessions_past_the_plain_ones_and_reads_them_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import zlib

    import recovery_proxy.store.memory

    monkeypatch.setattr(recovery_proxy.store.memory, "PLAIN", 2)
    store = MemoryStore(max_sessions=100)
    keys = [f"5f1c0e2a9b7d3c41:h:agent-{n}" for n in range(5)]
    for n, key in enumerate(keys):
        assert await store.update(key, record_call(n)) == 1
    assert list(store.plain) == keys[-2:]  # the two most recent stay plain JSON
    for key in keys[:3]:
        packed = store.sessions[key][1]
        assert SessionState.model_validate_json(zlib.decompress(packed)).turn == 1
    for n, key in enumerate(keys):  # all read back, packed or not
        state = await store.get(key)
        assert state is not None and state.seen == {f"c{n}": True}
    assert await store.update(keys[0], record_call(9)) == 2  # the oldest, packed, goes on
    assert list(store.plain) == [keys[4], keys[0]]
    assert (await store.list_sessions())[0][0] == keys[0]
    assert await store.purge(keys[0]) == 1 and keys[0] not in store.plain


async def test_sqlite_sweeps_expired_rows(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "sessions.db", ttl_seconds=1)
    try:
        for n in range(3):
            await store.update(f"5f1c0e2a9b7d3c41:h:old-{n}", record_call(n))
        await asyncio.sleep(1.3)
        await store.update(KEY, record_call(9))
        assert await store.expire() == 3
        assert await store.purge() == 1
    finally:
        await store.close()


async def test_sqlite_updates_inline_when_free_and_on_the_worker_otherwise(
    tmp_path: Path,
) -> None:
    """An ordinary update runs on the event loop's thread (no handoff); a heavy one, and one
    meeting another process's write lock, run on the worker thread (which waits for it)."""
    import sqlite3

    db = tmp_path / "sessions.db"
    store = SqliteStore(db, busy_timeout=5.0)
    ran_on: list[str] = []

    def record(state: SessionState) -> int:
        ran_on.append(threading.current_thread().name)
        state.turn += 1
        return state.turn

    try:
        assert await store.update(KEY, record) == 1
        assert await store.update(KEY, record, heavy=True) == 2
        other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        releaser = threading.Timer(0.3, lambda: other.execute("ROLLBACK"))
        releaser.start()
        try:
            assert await store.update(KEY, record) == 3  # waited for the lock, lost nothing
        finally:
            releaser.join()
            other.close()
        assert await store.update(KEY, record) == 4
    finally:
        await store.close()
    main = threading.current_thread().name
    assert ran_on[0] == main and ran_on[-1] == main
    assert ran_on[1].startswith("sqlite-store") and ran_on[2].startswith("sqlite-store")
    assert len(ran_on) == 4  # the busy inline attempt never ran `fn`


async def test_redis_keys_carry_the_prefix_and_a_ttl(redis_url: str, redis_server) -> None:
    store = RedisStore(redis_url, prefix="tenant-a:", ttl_seconds=600)
    other = RedisStore(redis_url, prefix="tenant-b:", ttl_seconds=600)
    try:
        await store.update(KEY, record_call(1))
        await other.update(KEY, record_call(1))
        with redis_server.client() as client:
            assert 590 <= client.ttl(f"tenant-a:{KEY}") <= 600
        assert await store.purge() == 1  # only its own prefix
        assert await other.get(KEY) is not None
    finally:
        await store.close()
        await other.close()


async def test_redis_outage_raises_promptly(own_redis) -> None:
    store = RedisStore(own_redis.url, ttl_seconds=600)
    try:
        await store.update(KEY, record_call(1))
        own_redis.stop()
        started = time.monotonic()
        with pytest.raises((RedisError, StoreUnavailable)):
            await store.update(KEY, record_call(2))
        assert time.monotonic() - started < 1.5
        own_redis.start()
        assert await store.update(KEY, record_call(3)) == 1  # fresh server, same client
    finally:
        await store.close()


async def test_open_store_parses_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cases = {
        "memory": MemoryStore,
        "sqlite": SqliteStore,
        f"sqlite:{tmp_path / 'a' / 'b.db'}": SqliteStore,
        f"sqlite://{tmp_path / 'c.db'}": SqliteStore,
        redis_url: RedisStore,
    }
    for spec, kind in cases.items():
        store = await open_store(Settings(store=spec))
        try:
            assert isinstance(store, kind), spec
        finally:
            await store.close()
    assert (tmp_path / "state" / "recovery-proxy" / "sessions.db").exists()
    assert (tmp_path / "a" / "b.db").exists()
    assert (tmp_path / "c.db").exists()
    for spec in ("postgres://127.0.0.1/sessions", "memcached", "Memory"):
        with pytest.raises(ValueError, match="unknown session store"):
            await open_store(Settings(store=spec))


def test_serve_defaults_to_the_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECOVERY_PROXY_STORE", raising=False)
    assert Settings().store == StoreSpec("memory")  # the library default is unchanged
    served = serve_settings(build_parser().parse_args(["serve"])).store
    assert served == StoreSpec("sqlite", path=default_sqlite_path())
    args = build_parser().parse_args(["serve", "--store", "memory"])
    assert serve_settings(args).store == StoreSpec("memory")
    monkeypatch.setenv("RECOVERY_PROXY_STORE", "redis://127.0.0.1:6390/2")
    served = serve_settings(build_parser().parse_args(["serve"])).store
    assert served == StoreSpec("redis", url="redis://127.0.0.1:6390/2")


def test_sessions_purge_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"sqlite:{tmp_path / 'sessions.db'}"

    async def fill() -> None:
        store = SqliteStore(tmp_path / "sessions.db")
        for n in range(3):
            await store.update(f"5f1c0e2a9b7d3c41:h:run-{n}", record_call(n))
        await store.close()

    asyncio.run(fill())
    assert main(["sessions", "purge", "--store", spec, "--key", "5f1c0e2a9b7d3c41:h:run-1"]) == 0
    assert "removed 1 session (key '5f1c0e2a9b7d3c41:h:run-1')" in capsys.readouterr().out
    assert main(["sessions", "purge", "--store", spec, "--all"]) == 0
    assert "removed 2 sessions (all sessions)" in capsys.readouterr().out
    assert main(["sessions", "purge", "--store", spec, "--all"]) == 0
    assert "removed 0 sessions" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:  # deleting everything takes an explicit --all
        main(["sessions", "purge", "--store", spec])
    assert refused.value.code == 2
    assert "one of the arguments --key --session --all is required" in capsys.readouterr().err
    assert main(["sessions", "purge", "--store", "memory", "--all"]) == 2
    assert main(["sessions", "purge", "--store", "etcd://127.0.0.1:2379", "--all"]) == 2
    assert "unknown session store" in capsys.readouterr().err
