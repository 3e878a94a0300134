"""Known fixes (proxy/core/known_fixes.py): signatures, distinct sessions, bounds."""

from __future__ import annotations

from recovery_proxy.core import known_fixes
from recovery_proxy.core.resolution_state import MAX_FIX_SESSIONS, MAX_KNOWN, Resolution
from recovery_proxy.core.state import Link, SessionState
from recovery_proxy.experiment.report import build_report, format_report


def resolution(
    target: str = "src/config.ts", error: str = "ENOENT: open 'src/config.ts'"
) -> Resolution:
    return Resolution(
        failed=["call_1"],
        operation="read_file",
        target=target,
        category="not_found",
        error=error,
        kind="alternative",
        tool="read_file",
        worked="src/settings.ts",
        via=[("list_dir", "src")],
    )


def test_the_signature_strips_paths_numbers_ids_and_timestamps_from_the_error() -> None:
    a = "2026-05-01T10:00:00Z request 3f9a0c1e2b failed after 30 s: ENOENT open '/home/ana/app/x.ts'"
    b = "2026-06-12T08:12:31Z request 77d1e0aa09 failed after 12 s: ENOENT open '/srv/ci/app/x.ts'"
    assert known_fixes.normalise(a) == known_fixes.normalise(b)
    assert (
        known_fixes.normalise(a) == "<time> request <id> failed after <n> s: ENOENT open '<path>'"
    )
    # The target is kept: a fix for one file says nothing about another.
    one = known_fixes.signature("read_file", "src/a.ts", "not_found", a)
    assert one != known_fixes.signature("read_file", "src/b.ts", "not_found", a)
    assert "No module named 'requests'" in known_fixes.normalise("No module named 'requests'")


def test_distinct_sessions_are_counted_once_and_bounded() -> None:
    known = SessionState()
    for n in range(MAX_FIX_SESSIONS + 5):
        for _ in range(2):  # the same session teaching twice counts once
            known_fixes.learn(known, f"t:s{n}", resolution(), float(n))
    [fix] = known.resolutions.known.values()
    assert fix.seen == MAX_FIX_SESSIONS + 5 and len(fix.sessions) == MAX_FIX_SESSIONS
    assert known_fixes.eligible(known, "t:new", 3) == [fix]
    assert known_fixes.eligible(known, f"t:s{MAX_FIX_SESSIONS + 4}", 3) == []  # its own
    assert known_fixes.eligible(known, "t:new", MAX_FIX_SESSIONS + 6) == []
    for n in range(MAX_KNOWN + 10):
        known_fixes.learn(known, "t:s", resolution(target=f"src/m{n}.ts"), 100.0 + n)
    known.trim()
    assert len(known.resolutions.known) == MAX_KNOWN


def test_the_report_lists_each_known_fix() -> None:
    known = SessionState()
    known.links = {"known fixes": Link(key="t:known", touched=0.0)}
    known_fixes.learn(known, "t:s1", resolution(), 1.0)
    fix = next(iter(known.resolutions.known))
    known_fixes.count(known, fix, "offered")
    report = build_report([("t:known", known)], 0.0)
    [row] = report["known_fixes"]
    assert (row["tenant"], row["sessions"], row["offered"], row["followed"]) == ("t", 1, 1, 0)
    assert report["skipped_index_states"] == 1  # not a session of either arm
    assert (
        '  t  read_file("src/config.ts") not_found -> read_file("src/settings.ts"): 1 sessions, '
        "offered 1, followed 0, resolved 0"
    ) in format_report(report)
