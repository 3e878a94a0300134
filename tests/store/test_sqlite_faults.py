"""SQLite under faults, with whole proxy processes: a file locked by another process, a
read-only file or directory, the file deleted under a running proxy. Each has a defined
answer and nothing is lost once the fault clears."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.store.test_restart import (
    FIRST_ATTEMPT,
    compacted,
    failed_read,
    opening,
    outages,
    system_text,
    tool_text,
)

NOBODY = 65534


def sessions_in(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])


def test_a_locked_file_fails_open_within_the_busy_timeout(
    tmp_path: Path, mock_model, proxies
) -> None:
    model, upstream = mock_model
    db = tmp_path / "sessions.db"
    proxy = proxies(upstream, f"sqlite:{db}", RECOVERY_PROXY_SQLITE_BUSY_TIMEOUT="0.2")
    messages = [*opening(), *failed_read("call_1")]
    assert proxy.chat(messages, "locked").status_code == 200

    other = sqlite3.connect(db, isolation_level=None)  # another process's writer, in effect
    other.execute("BEGIN EXCLUSIVE")
    try:
        messages += failed_read("call_2")
        started = time.monotonic()
        response = proxy.chat(messages, "locked")
        waited = time.monotonic() - started
        assert response.status_code == 200
        assert waited < 5, f"a 0.2 s busy timeout made the request wait {waited:.1f} s"
        block = tool_text(model.state.received[-1], "call_2")
        assert FIRST_ATTEMPT in block  # stateless recovery from what the conversation shows
        assert outages(proxy.metrics()) == 1.0
    finally:
        other.execute("ROLLBACK")
        other.close()

    messages += failed_read("call_3", path="src/settings.ts")
    assert proxy.chat(messages, "locked").status_code == 200
    assert proxy.chat(compacted(), "locked").status_code == 200
    system = system_text(model.state.received[-1])
    assert "src/settings.ts" in system and "src/config.ts" in system  # nothing was lost
    assert "session store reachable again" in proxy.log.read_text()


def test_the_file_deleted_under_a_running_proxy_is_created_again(
    tmp_path: Path, mock_model, proxies
) -> None:
    model, upstream = mock_model
    db = tmp_path / "sessions.db"
    proxy = proxies(upstream, f"sqlite:{db}")
    assert proxy.chat([*opening(), *failed_read("call_1")], "before").status_code == 200
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    time.sleep(1.1)  # the file is checked at most once a second

    messages = [*opening(), *failed_read("call_a", path="src/after.ts")]
    assert proxy.chat(messages, "after").status_code == 200
    assert db.exists() and sessions_in(db) == 1  # recorded in the new file, not a dead inode
    assert "was deleted or replaced; opening it again" in proxy.log.read_text()

    proxy.restart()  # what went into the new file survives
    assert proxy.chat(compacted(), "after").status_code == 200
    assert "src/after.ts" in system_text(model.state.received[-1])


def serve_once(store: str, tmp_path: Path) -> tuple[int, str]:
    """`serve --store STORE` in a forked child, as an unprivileged user when we are root (root
    ignores file modes); (exit status, stderr). Forked, not exec'd: the unprivileged user may
    not be able to read this interpreter's files, so everything `serve` needs before opening
    the store is imported first."""
    import uvicorn  # noqa: F401

    import recovery_proxy.cli.serve
    import recovery_proxy.logs
    import recovery_proxy.rules.load
    import recovery_proxy.rules.model
    import recovery_proxy.server.app
    import recovery_proxy.store  # noqa: F401
    from recovery_proxy.cli.main import main

    err = tmp_path / "stderr.txt"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            os.dup2(fd, 2)
            sys.stderr = os.fdopen(2, "w", buffering=1)
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            for name in [k for k in os.environ if k.startswith("RECOVERY_PROXY_")]:
                del os.environ[name]
            code = main(["serve", "--port", "0", "--store", store])
        except BaseException as exc:  # report, never fall back into the test runner
            print(f"child failed: {exc!r}", file=sys.stderr)
        finally:
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err.read_text()


def world_readable(path: Path) -> None:
    """Let the unprivileged child reach `path` (pytest's tmp dirs are private to root)."""
    for parent in [path, *path.parents]:
        if parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o555)


def test_a_read_only_file_stops_serve_with_one_line_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    db = folder / "sessions.db"
    sqlite3.connect(db).close()
    db.chmod(0o444)
    folder.chmod(0o555)
    world_readable(folder)
    code, stderr = serve_once(f"sqlite:{db}", tmp_path)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0], stderr
    assert "readonly" in lines[0] or "read-only" in lines[0] or "unable to open" in lines[0]


def test_a_read_only_directory_stops_serve_with_one_line_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    folder.chmod(0o555)
    world_readable(folder)
    db = folder / "sessions.db"
    code, stderr = serve_once(f"sqlite:{db}", tmp_path)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0], stderr


def test_concurrent_requests_during_a_lock_all_answer(tmp_path: Path, mock_model, proxies) -> None:
    """While another process holds the lock, every request in flight fails open; none hangs."""
    _, upstream = mock_model
    db = tmp_path / "sessions.db"
    proxy = proxies(upstream, f"sqlite:{db}", RECOVERY_PROXY_SQLITE_BUSY_TIMEOUT="0.2")
    assert proxy.chat(opening(), "warm").status_code == 200
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    statuses: list[int] = []

    def one(n: int) -> None:
        statuses.append(proxy.chat([*opening(), *failed_read(f"call_{n}")], f"s{n}").status_code)

    try:
        threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert statuses == [200] * 8


SETUP_RACE = """
import os, sys, time
import recovery_proxy.store.sqlite as sqlite
while not os.path.exists(sys.argv[2]):
    time.sleep(0.001)
sqlite.SqliteStore(sys.argv[1])
"""


def test_processes_starting_together_on_a_new_file_all_open_it(tmp_path: Path) -> None:
    """Three processes set up one new SQLite file at the same instant, ten times over: none
    may give up with "database is locked" (1 start in 45 did, before set-up was retried
    within the busy timeout)."""
    failures = []
    for round_ in range(10):
        path, go = tmp_path / f"sessions-{round_}.db", tmp_path / f"go-{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", SETUP_RACE, str(path), str(go)], stderr=subprocess.PIPE
            )
            for _ in range(3)
        ]
        time.sleep(0.5)  # all three have imported the store and wait for the same instant
        go.touch()
        for proc in procs:
            _, err = proc.communicate(timeout=30)
            if proc.returncode:
                failures.append(err.decode().strip().splitlines()[-1])
    assert failures == []
